package broker_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The raw benchmarks drive the broker with prebuilt frames from a client
// that does almost nothing per message, so that a CPU profile or an
// instruction count of the process is the broker's. They complement the
// pulsar-client-go benchmarks, whose client costs as much as the broker.

// rawBatchFrame builds one SEND frame holding a batch of n 1 KiB messages,
// laid out as pulsar-client-go lays out its batches.
func rawBatchFrame(producerID, seq uint64, n int) []byte {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	var body []byte
	for i := 0; i < n; i++ {
		smd, err := proto.Marshal(&pb.SingleMessageMetadata{
			PayloadSize: proto.Int32(int32(len(payload))), SequenceId: proto.Uint64(seq + uint64(i)),
		})
		if err != nil {
			panic(err)
		}
		body = binary.BigEndian.AppendUint32(body, uint32(len(smd)))
		body = append(body, smd...)
		body = append(body, payload...)
	}
	md := &pb.MessageMetadata{
		ProducerName: proto.String("raw"), SequenceId: proto.Uint64(seq),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli())), NumMessagesInBatch: proto.Int32(int32(n)),
		UncompressedSize: proto.Uint32(uint32(len(body))),
	}
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{
		ProducerId: proto.Uint64(producerID), SequenceId: proto.Uint64(seq), NumMessages: proto.Int32(int32(n)),
		HighestSequenceId: proto.Uint64(seq + uint64(n) - 1),
	})
	return protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, body))
}

// countFrames reads frames from r and sends on done once it has seen n of
// them, without decoding any: the broker's answers to SEND are receipts.
func countFrames(r io.Reader, n int, done chan<- error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var head [4]byte
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			done <- err
			return
		}
		if _, err := br.Discard(int(binary.BigEndian.Uint32(head[:]))); err != nil {
			done <- err
			return
		}
	}
	done <- nil
}

// BenchmarkProduceRaw sends 1 KiB messages to a broker as prebuilt SEND
// frames, one message per frame (batch-1) or 128 per frame (batch-128),
// written in bursts of window frames while another goroutine counts the
// receipts; TCP's flow control bounds what is in flight. One op is one
// message. The topic has no subscription, so every message is kept.
func BenchmarkProduceRaw(b *testing.B) {
	for _, tc := range []struct {
		name   string
		batch  int
		window int
	}{{"batch-1", 1, 1000}, {"batch-128", 128, 8}} {
		b.Run(tc.name, func(b *testing.B) {
			br := broker.New()
			if err := br.Listen("127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			d := dialDriver(b, br.Addr().String())
			defer d.nc.Close()
			d.producer("persistent://public/default/raw", 1)
			frame := rawBatchFrame(1, 0, tc.batch)
			if tc.batch == 1 {
				frame = sendFrame(1, 0, make([]byte, 1024))
			}
			frames := (b.N + tc.batch - 1) / tc.batch
			d.nc.SetDeadline(time.Now().Add(10 * time.Minute))
			done := make(chan error, 1)
			burst := make([]byte, 0, len(frame)*tc.window)
			for i := 0; i < tc.window; i++ {
				burst = append(burst, frame...)
			}
			b.SetBytes(1024)
			b.ResetTimer()
			cpu0 := processCPU()
			go countFrames(d.nc, frames, done)
			for sent := 0; sent < frames; sent += tc.window {
				k := min(tc.window, frames-sent)
				d.write(burst[:k*len(frame)])
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			reportCPU(b, cpu0)
		})
	}
}

// reportCPU reports the process's CPU time since cpu0 per op, as cpu-ns/op:
// unlike ns/op it hardly moves when other processes share the cores.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// fillRaw stores n 1 KiB messages on topic through a raw producer, in
// entries of batch messages, and waits for every receipt.
func fillRaw(b *testing.B, addr, topic string, n, batch int) {
	d := dialDriver(b, addr)
	defer d.nc.Close()
	d.producer(topic, 1)
	frame := rawBatchFrame(1, 0, batch)
	if batch == 1 {
		frame = sendFrame(1, 0, make([]byte, 1024))
	}
	frames := (n + batch - 1) / batch
	done := make(chan error, 1)
	go countFrames(d.nc, frames, done)
	burst := make([]byte, 0, len(frame)*64)
	for range 64 {
		burst = append(burst, frame...)
	}
	for sent := 0; sent < frames; sent += 64 {
		d.write(burst[:min(64, frames-sent)*len(frame)])
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkConsumeRaw delivers 1 KiB messages from a filled topic to a raw
// Shared consumer that acknowledges them as pulsar-client-go does: it
// starts with 1,000 permits, and for every 500 messages received it sends
// FLOW for 500 more and one ACK naming the entries it completed. The last
// ACK asks for a response, so the op ends once the broker has handled every
// ack. One op is one message; entries hold 1 message (batch-1) or 128
// (batch-128). The fill is not timed.
func BenchmarkConsumeRaw(b *testing.B) {
	for _, batch := range []int{1, 128} {
		b.Run(fmt.Sprintf("batch-%d", batch), func(b *testing.B) {
			br := broker.New()
			if err := br.Listen("127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			n := (b.N + batch - 1) / batch * batch
			fillRaw(b, br.Addr().String(), "persistent://public/default/raw-consume", n, batch)
			d := dialDriver(b, br.Addr().String())
			defer d.nc.Close()
			b.SetBytes(1024)
			b.ResetTimer()
			cpu0 := processCPU()
			d.req++
			d.call(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
				Topic: proto.String("persistent://public/default/raw-consume"), Subscription: proto.String("s"),
				SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(d.req),
				ConsumerName: proto.String("c"), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
			}), pb.BaseCommand_SUCCESS)
			d.write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
				ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1000),
			})))
			consumeRaw(b, d, n, batch)
			reportCPU(b, cpu0)
		})
	}
}

// consumeRaw reads n messages in entries of batch and acknowledges them.
func consumeRaw(b *testing.B, d *rawDriver, n, batch int) {
	d.nc.SetDeadline(time.Now().Add(10 * time.Minute))
	var ids []*pb.MessageIdData
	got, sinceFlow := 0, 0
	var out, buf []byte
	for got < n {
		body, err := protocol.ReadFrame(d.r, buf, 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		buf = body
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			b.Fatal(err)
		}
		m := f.Command.GetMessage()
		if m == nil {
			continue // PING and the like
		}
		ids = append(ids, m.GetMessageId())
		got += batch
		sinceFlow += batch
		if sinceFlow < 500 && got < n {
			continue
		}
		ack := &pb.CommandAck{ConsumerId: proto.Uint64(1), AckType: pb.CommandAck_Individual.Enum(), MessageId: ids}
		if got >= n {
			ack.RequestId = proto.Uint64(1)
		}
		out = protocol.AppendCommand(out[:0], protocol.Base(pb.BaseCommand_ACK, ack))
		out = protocol.AppendCommand(out, protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
			ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(uint32(sinceFlow)),
		}))
		d.write(out)
		ids, sinceFlow = nil, 0
	}
	d.await(pb.BaseCommand_ACK_RESPONSE)
}
