package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// handshake dials addr, sends CONNECT and waits for CONNECTED. It is the
// cheapest proof that a broker is ready to serve a client.
func handshake(addr string) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	connect := protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("bench"), ProtocolVersion: proto.Int32(21),
	})
	if _, err := nc.Write(protocol.AppendCommand(nil, connect)); err != nil {
		return err
	}
	r := bufio.NewReader(nc)
	for {
		body, err := protocol.ReadFrame(r, nil, protocol.MaxFrameSize(protocol.DefaultMaxMessageSize))
		if err != nil {
			return err
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			return err
		}
		switch f.Command.GetType() {
		case pb.BaseCommand_CONNECTED:
			return nil
		case pb.BaseCommand_PING:
			continue
		default:
			return fmt.Errorf("handshake answered with %v", f.Command.GetType())
		}
	}
}

// BenchmarkBrokerStartToReady measures one broker's whole life as a test sees
// it: New, Listen on a free port, a raw CONNECT answered by CONNECTED, Close.
func BenchmarkBrokerStartToReady(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		br := broker.New()
		if err := br.Listen("127.0.0.1:0"); err != nil {
			b.Fatal(err)
		}
		if err := handshake(br.Addr().String()); err != nil {
			b.Fatal(err)
		}
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProduce1KiB measures pulsar-client-go producing 1 KiB messages to
// one topic: b.N SendAsync calls, then Flush and wait for every receipt. It
// reports messages per second next to the usual ns/op (one op = one message).
func BenchmarkProduce1KiB(b *testing.B) {
	for _, bc := range []struct {
		name     string
		batching bool
	}{
		{"batching-on", true},
		{"batching-off", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := testkit.Start(b)
			client := br.Client()
			p, err := client.CreateProducer(pulsar.ProducerOptions{
				Topic:           "bench-produce-" + strconv.FormatBool(bc.batching),
				DisableBatching: !bc.batching,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			payload := make([]byte, 1024)
			for i := range payload {
				payload[i] = byte(i)
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			var failed atomic.Int64
			var firstErr atomic.Value
			done := func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil && failed.Add(1) == 1 {
					firstErr.Store(err)
				}
				wg.Done()
			}

			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			for i := 0; i < b.N; i++ {
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, done)
			}
			if err := p.Flush(); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			b.StopTimer()

			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d sends failed, first: %v", n, b.N, firstErr.Load())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSharedProduceConsumeAck measures the whole settlement path: one
// producer (batching on) sends b.N 1 KiB messages to a Shared subscription
// whose consumers receive and ack every one; an op ends when the backlog is
// back to 0.
func BenchmarkSharedProduceConsumeAck(b *testing.B) {
	for _, consumers := range []int{1, 4} {
		b.Run(fmt.Sprintf("consumers-%d", consumers), func(b *testing.B) {
			br := testkit.Start(b)
			topic := fmt.Sprintf("bench-settle-%d", consumers)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for i := 0; i < consumers; i++ {
				c, err := br.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
					Type: pulsar.Shared,
					// The client flushes grouped acks every 100 ms by default;
					// that tick, not the broker, would set the time of the last ack.
					AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1000, MaxTime: time.Millisecond}})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						case m := <-c.Chan():
							c.Ack(m)
						}
					}
				}()
			}
			p, err := br.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			payload := make([]byte, 1024)
			ctx := context.Background()
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, nil)
			}
			if err := p.Flush(); err != nil {
				b.Fatal(err)
			}
			br.WaitBacklog(ctx, topic, "s", 0)
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
