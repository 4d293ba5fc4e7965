// Command sink is the limit pulsarsim is measured against: the thinnest
// responder pulsar-client-go produces to and consumes from. No broker can do
// less work per message, so its rate and CPU are the bound.
//
// Producing, it answers CONNECT, PARTITIONED_METADATA, LOOKUP, PRODUCER,
// CLOSE_PRODUCER and PING, and each SEND with a SEND_RECEIPT; it checks
// nothing and stores nothing (with -keep, it keeps each SEND's bytes and
// nothing else). Consuming, it answers SUBSCRIBE and, for each
// FLOW, writes ready-made MESSAGE frames: the same payload every time (a
// batch of -batch messages of -size bytes, or one message when -batch is 1,
// checksummed once at start), with only the command (consumer id, entry id)
// encoded per message. ACKs are read and ignored. One goroutine per
// connection reads frames, answers them into a buffer, and flushes the
// buffer when no more input is waiting.
//
// scripts/limit-produce and scripts/limit-consume run it beside pulsarsim.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

var producerSeq atomic.Uint64

// keep makes the sink read each SEND into a buffer of its own and keep it,
// as a broker that stores messages in memory must: the least such a broker
// pays for its memory (the Go runtime's allocation, the kernel's fresh
// pages), with nothing else.
var keep bool

func main() {
	addr := flag.String("addr", "127.0.0.1:16650", "address to listen on (and to answer LOOKUP with)")
	batch := flag.Int("batch", 1, "messages in each entry a consumer gets (1: not batched)")
	size := flag.Int("size", 1024, "bytes of each message a consumer gets")
	flag.BoolVar(&keep, "keep", false, "keep every SEND's bytes in memory, as a broker stores them")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	entry := buildEntry(*batch, *size)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		os.Exit(0)
	}()
	url := "pulsar://" + ln.Addr().String()
	log.Printf("sink listening on %s", url)
	for {
		nc, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(nc, url, entry, int64(*batch))
	}
}

// buildEntry returns the payload of every MESSAGE the sink sends: checksum
// block, metadata and body, as a producer with these settings stores it.
func buildEntry(batch, size int) []byte {
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	md := &pb.MessageMetadata{
		ProducerName: proto.String("sink"), SequenceId: proto.Uint64(0),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli())),
	}
	if batch <= 1 {
		return protocol.AppendPayload(nil, md, msg)
	}
	var body []byte
	for i := range batch {
		smd, err := proto.Marshal(&pb.SingleMessageMetadata{
			PayloadSize: proto.Int32(int32(size)), SequenceId: proto.Uint64(uint64(i)),
		})
		if err != nil {
			panic(err)
		}
		body = binary.BigEndian.AppendUint32(body, uint32(len(smd)))
		body = append(append(body, smd...), msg...)
	}
	md.NumMessagesInBatch = proto.Int32(int32(batch))
	md.UncompressedSize = proto.Uint32(uint32(len(body)))
	return protocol.AppendPayload(nil, md, body)
}

// conn is one client connection and its consumers' permits.
type conn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	url     string
	entry   []byte
	batch   int64
	cmd     pb.BaseCommand
	out     []byte
	entryID uint64
	permits map[uint64]int64 // by consumer id
	kept    [][]byte         // with -keep: every SEND frame's bytes
}

func serve(nc net.Conn, url string, entry []byte, batch int64) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &conn{
		nc: nc, r: bufio.NewReaderSize(nc, 256<<10), w: bufio.NewWriterSize(nc, 256<<10),
		url: url, entry: entry, batch: batch, permits: map[uint64]int64{},
	}
	defer nc.Close()
	if err := c.loop(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		log.Printf("connection %s: %v", nc.RemoteAddr(), err)
	}
}

func (c *conn) loop() error {
	var head [8]byte
	for {
		// Answers go out once no more input is waiting.
		if c.r.Buffered() == 0 && c.w.Buffered() > 0 {
			if err := c.w.Flush(); err != nil {
				return err
			}
		}
		if _, err := io.ReadFull(c.r, head[:]); err != nil {
			return err
		}
		total := binary.BigEndian.Uint32(head[0:4])
		cmdSize := binary.BigEndian.Uint32(head[4:8])
		if cmdSize+4 > total {
			return fmt.Errorf("bad frame: total %d, command %d", total, cmdSize)
		}
		b, err := c.r.Peek(int(cmdSize))
		if err != nil {
			return err
		}
		c.cmd.Reset()
		if err := proto.Unmarshal(b, &c.cmd); err != nil {
			return err
		}
		if keep && c.cmd.GetType() == pb.BaseCommand_SEND {
			frame := make([]byte, total-4)
			if _, err := io.ReadFull(c.r, frame); err != nil {
				return err
			}
			c.kept = append(c.kept, frame)
		} else if _, err := c.r.Discard(int(total - 4)); err != nil {
			return err
		}
		if err := c.handle(&c.cmd); err != nil {
			return err
		}
	}
}

// write appends cmd as a frame to the output buffer.
func (c *conn) write(cmd *pb.BaseCommand) error {
	c.out = protocol.AppendCommand(c.out[:0], cmd)
	_, err := c.w.Write(c.out)
	return err
}

func (c *conn) handle(cmd *pb.BaseCommand) error {
	switch cmd.GetType() {
	case pb.BaseCommand_SEND:
		s := cmd.GetSend()
		highest := s.GetHighestSequenceId()
		if highest == 0 {
			highest = s.GetSequenceId()
		}
		c.out = protocol.AppendSendReceipt(c.out[:0], s.GetProducerId(), s.GetSequenceId(), highest, 1, c.entryID)
		c.entryID++
		_, err := c.w.Write(c.out)
		return err
	case pb.BaseCommand_FLOW:
		f := cmd.GetFlow()
		c.permits[f.GetConsumerId()] += int64(f.GetMessagePermits())
		return c.deliver(f.GetConsumerId())
	case pb.BaseCommand_ACK, pb.BaseCommand_PONG:
		return nil
	case pb.BaseCommand_CONNECT:
		return c.write(protocol.Base(pb.BaseCommand_CONNECTED, &pb.CommandConnected{
			ServerVersion: proto.String("sink"), ProtocolVersion: proto.Int32(cmd.GetConnect().GetProtocolVersion()),
			MaxMessageSize: proto.Int32(protocol.DefaultMaxMessageSize),
		}))
	case pb.BaseCommand_PING:
		return c.write(protocol.PongCommand())
	case pb.BaseCommand_PARTITIONED_METADATA:
		return c.write(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, &pb.CommandPartitionedTopicMetadataResponse{
			Partitions: proto.Uint32(0), RequestId: proto.Uint64(cmd.GetPartitionMetadata().GetRequestId()),
			Response: pb.CommandPartitionedTopicMetadataResponse_Success.Enum(),
		}))
	case pb.BaseCommand_LOOKUP:
		return c.write(protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
			BrokerServiceUrl: proto.String(c.url), Response: pb.CommandLookupTopicResponse_Connect.Enum(),
			RequestId: proto.Uint64(cmd.GetLookupTopic().GetRequestId()), Authoritative: proto.Bool(true),
		}))
	case pb.BaseCommand_PRODUCER:
		return c.write(protocol.Base(pb.BaseCommand_PRODUCER_SUCCESS, &pb.CommandProducerSuccess{
			RequestId:    proto.Uint64(cmd.GetProducer().GetRequestId()),
			ProducerName: proto.String(fmt.Sprintf("sink-%d", producerSeq.Add(1))), LastSequenceId: proto.Int64(-1),
			SchemaVersion: []byte{}, ProducerReady: proto.Bool(true),
		}))
	case pb.BaseCommand_SUBSCRIBE:
		c.permits[cmd.GetSubscribe().GetConsumerId()] = 0
		return c.write(protocol.SuccessCommand(cmd.GetSubscribe().GetRequestId()))
	case pb.BaseCommand_CLOSE_PRODUCER:
		return c.write(protocol.SuccessCommand(cmd.GetCloseProducer().GetRequestId()))
	case pb.BaseCommand_CLOSE_CONSUMER:
		delete(c.permits, cmd.GetCloseConsumer().GetConsumerId())
		return c.write(protocol.SuccessCommand(cmd.GetCloseConsumer().GetRequestId()))
	default:
		log.Printf("ignoring %v", cmd.GetType())
		return nil
	}
}

// deliver writes entries to a consumer while it has permits. An entry takes
// as many permits as it has messages, and goes out while any permit is left,
// as a broker dispatches a batch.
func (c *conn) deliver(consumer uint64) error {
	for c.permits[consumer] > 0 {
		c.out = appendMessageHead(c.out[:0], consumer, c.entryID, len(c.entry))
		c.entryID++
		c.permits[consumer] -= c.batch
		if _, err := c.w.Write(c.out); err != nil {
			return err
		}
		if _, err := c.w.Write(c.entry); err != nil {
			return err
		}
	}
	return nil
}

// appendMessageHead appends the start of a MESSAGE frame for entry
// (1, entryID) to consumer, the command encoded by hand; the payload of
// payloadSize bytes follows it.
func appendMessageHead(dst []byte, consumer, entryID uint64, payloadSize int) []byte {
	idSize := 1 + protowire.SizeVarint(1) + 1 + protowire.SizeVarint(entryID)
	subSize := 1 + protowire.SizeVarint(consumer) + 1 + protowire.SizeBytes(idSize)
	cmdSize := 1 + protowire.SizeVarint(uint64(pb.BaseCommand_MESSAGE)) + 1 + protowire.SizeBytes(subSize)
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+cmdSize+payloadSize))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmdSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(pb.BaseCommand_MESSAGE))
	dst = protowire.AppendTag(dst, protowire.Number(pb.BaseCommand_MESSAGE), protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(subSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, consumer)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(idSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, 1)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	return protowire.AppendVarint(dst, entryID)
}
