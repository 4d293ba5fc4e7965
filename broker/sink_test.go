package broker_test

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// sink is the thinnest responder pulsar-client-go will produce to: it answers
// CONNECT, PARTITIONED_METADATA, LOOKUP, PRODUCER, CLOSE_PRODUCER and PING,
// and answers every SEND with a SEND_RECEIPT without looking at the message.
// It stores nothing, checks no checksum and decodes no metadata; a SEND is
// read with protowire and its receipt written by hand. One goroutine per
// connection reads and writes, flushing when no more input is buffered. It is
// the upper limit against which pulsarsim's produce rate is measured.
type sink struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startSink(tb testing.TB) *sink {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &sink{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[nc] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(nc)
				s.mu.Lock()
				delete(s.conns, nc)
				s.mu.Unlock()
			}()
		}
	}()
	tb.Cleanup(s.close)
	return s
}

func (s *sink) url() string { return "pulsar://" + s.ln.Addr().String() }

func (s *sink) close() {
	s.ln.Close()
	s.mu.Lock()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *sink) serve(nc net.Conn) {
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 64<<10)
	w := bufio.NewWriterSize(nc, 64<<10)
	var buf []byte
	for {
		body, err := protocol.ReadFrame(r, buf, 64<<20)
		if err != nil {
			return
		}
		buf = body
		cmdSize := binary.BigEndian.Uint32(body)
		raw := body[4 : 4+cmdSize]
		typ, sub := sinkSplit(raw)
		if typ == int32(pb.BaseCommand_SEND) {
			w.Write(sinkReceipt(sub))
		} else if reply := sinkReply(typ, raw, s.url()); reply != nil {
			w.Write(protocol.AppendCommand(nil, reply))
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// sinkSplit returns a BaseCommand's type and the bytes of its sub-command.
func sinkSplit(raw []byte) (typ int32, sub []byte) {
	for len(raw) > 0 {
		num, wt, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return 0, nil
		}
		raw = raw[n:]
		switch {
		case num == 1 && wt == protowire.VarintType:
			v, m := protowire.ConsumeVarint(raw)
			if m < 0 {
				return 0, nil
			}
			typ = int32(v)
			raw = raw[m:]
		case wt == protowire.BytesType:
			v, m := protowire.ConsumeBytes(raw)
			if m < 0 {
				return 0, nil
			}
			sub = v
			raw = raw[m:]
		default:
			m := protowire.ConsumeFieldValue(num, wt, raw)
			if m < 0 {
				return 0, nil
			}
			raw = raw[m:]
		}
	}
	return typ, sub
}

// sinkReceipt builds the SEND_RECEIPT frame for a CommandSend's bytes.
func sinkReceipt(send []byte) []byte {
	var producer, seq, highest uint64
	for len(send) > 0 {
		num, wt, n := protowire.ConsumeTag(send)
		if n < 0 {
			break
		}
		send = send[n:]
		if wt == protowire.VarintType {
			v, m := protowire.ConsumeVarint(send)
			if m < 0 {
				break
			}
			switch num {
			case 1:
				producer = v
			case 2:
				seq = v
			case 6:
				highest = v
			}
			send = send[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, wt, send)
		if m < 0 {
			break
		}
		send = send[m:]
	}
	if highest == 0 {
		highest = seq
	}
	var id []byte
	id = protowire.AppendTag(id, 1, protowire.VarintType)
	id = protowire.AppendVarint(id, 1)
	id = protowire.AppendTag(id, 2, protowire.VarintType)
	id = protowire.AppendVarint(id, seq)
	var rc []byte
	rc = protowire.AppendTag(rc, 1, protowire.VarintType)
	rc = protowire.AppendVarint(rc, producer)
	rc = protowire.AppendTag(rc, 2, protowire.VarintType)
	rc = protowire.AppendVarint(rc, seq)
	rc = protowire.AppendTag(rc, 3, protowire.BytesType)
	rc = protowire.AppendBytes(rc, id)
	rc = protowire.AppendTag(rc, 4, protowire.VarintType)
	rc = protowire.AppendVarint(rc, highest)
	var cmd []byte
	cmd = protowire.AppendTag(cmd, 1, protowire.VarintType)
	cmd = protowire.AppendVarint(cmd, uint64(pb.BaseCommand_SEND_RECEIPT))
	cmd = protowire.AppendTag(cmd, protowire.Number(pb.BaseCommand_SEND_RECEIPT), protowire.BytesType)
	cmd = protowire.AppendBytes(cmd, rc)
	frame := make([]byte, 8, 8+len(cmd))
	binary.BigEndian.PutUint32(frame, uint32(4+len(cmd)))
	binary.BigEndian.PutUint32(frame[4:], uint32(len(cmd)))
	return append(frame, cmd...)
}

// sinkReply answers the commands a producer needs before its first SEND.
func sinkReply(typ int32, raw []byte, url string) *pb.BaseCommand {
	if typ != int32(pb.BaseCommand_CONNECT) && typ != int32(pb.BaseCommand_PING) &&
		typ != int32(pb.BaseCommand_PARTITIONED_METADATA) && typ != int32(pb.BaseCommand_LOOKUP) &&
		typ != int32(pb.BaseCommand_PRODUCER) && typ != int32(pb.BaseCommand_CLOSE_PRODUCER) {
		return nil
	}
	cmd := &pb.BaseCommand{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(raw, cmd); err != nil {
		return nil
	}
	switch cmd.GetType() {
	case pb.BaseCommand_CONNECT:
		return protocol.Base(pb.BaseCommand_CONNECTED, &pb.CommandConnected{
			ServerVersion: proto.String("sink"), ProtocolVersion: proto.Int32(21),
			MaxMessageSize: proto.Int32(protocol.DefaultMaxMessageSize),
		})
	case pb.BaseCommand_PING:
		return protocol.PongCommand()
	case pb.BaseCommand_PARTITIONED_METADATA:
		return protocol.Base(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, &pb.CommandPartitionedTopicMetadataResponse{
			RequestId: proto.Uint64(cmd.GetPartitionMetadata().GetRequestId()), Partitions: proto.Uint32(0),
			Response: pb.CommandPartitionedTopicMetadataResponse_Success.Enum(),
		})
	case pb.BaseCommand_LOOKUP:
		return protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
			RequestId: proto.Uint64(cmd.GetLookupTopic().GetRequestId()), BrokerServiceUrl: proto.String(url),
			Response: pb.CommandLookupTopicResponse_Connect.Enum(), Authoritative: proto.Bool(true),
			ProxyThroughServiceUrl: proto.Bool(true),
		})
	case pb.BaseCommand_PRODUCER:
		p := cmd.GetProducer()
		name := p.GetProducerName()
		if name == "" {
			name = "sink-producer"
		}
		return protocol.Base(pb.BaseCommand_PRODUCER_SUCCESS, &pb.CommandProducerSuccess{
			RequestId: proto.Uint64(p.GetRequestId()), ProducerName: proto.String(name),
			LastSequenceId: proto.Int64(-1), ProducerReady: proto.Bool(true),
		})
	case pb.BaseCommand_CLOSE_PRODUCER:
		return protocol.SuccessCommand(cmd.GetCloseProducer().GetRequestId())
	}
	return nil
}

// TestSinkAcceptsAProducer checks that the sink is enough for
// pulsar-client-go to produce: a send comes back with a message id.
func TestSinkAcceptsAProducer(t *testing.T) {
	s := startSink(t)
	if err := produceN(t, s.url(), "sink-check", true, 10); err != nil {
		t.Fatal(err)
	}
}
