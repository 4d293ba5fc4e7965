package broker_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// rawDriver speaks the wire protocol by hand for the scale benchmarks, so
// that the client's own memory (pulsar-client-go keeps goroutines and queues
// per producer and consumer) does not hide the broker's.
type rawDriver struct {
	tb  testing.TB
	nc  net.Conn
	r   *bufio.Reader
	req uint64
}

func dialDriver(tb testing.TB, addr string) *rawDriver {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	d := &rawDriver{tb: tb, nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	d.call(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("scale"), ProtocolVersion: proto.Int32(21),
	}), pb.BaseCommand_CONNECTED)
	return d
}

func (d *rawDriver) write(b []byte) {
	if _, err := d.nc.Write(b); err != nil {
		d.tb.Fatal(err)
	}
}

// await reads frames until one of type want arrives, skipping the others
// (PINGs, MESSAGEs). It returns the command and the count of MESSAGEs seen.
func (d *rawDriver) await(want pb.BaseCommand_Type) (*pb.BaseCommand, int) {
	d.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	msgs := 0
	for {
		body, err := protocol.ReadFrame(d.r, nil, 64<<20)
		if err != nil {
			d.tb.Fatal(err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			d.tb.Fatal(err)
		}
		switch t := f.Command.GetType(); {
		case t == want:
			return f.Command, msgs
		case t == pb.BaseCommand_MESSAGE:
			msgs++
		case t == pb.BaseCommand_ERROR || t == pb.BaseCommand_SEND_ERROR:
			d.tb.Fatalf("waiting for %v: %v", want, f.Command)
		}
	}
}

func (d *rawDriver) call(cmd *pb.BaseCommand, want pb.BaseCommand_Type) *pb.BaseCommand {
	d.write(protocol.AppendCommand(nil, cmd))
	c, _ := d.await(want)
	return c
}

func (d *rawDriver) producer(topic string, id uint64) {
	d.req++
	d.call(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(d.req),
	}), pb.BaseCommand_PRODUCER_SUCCESS)
}

func (d *rawDriver) subscribe(topic, sub string, consumerID uint64, permits uint32) {
	d.req++
	d.call(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String(sub), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(consumerID), RequestId: proto.Uint64(d.req),
		ConsumerName: proto.String("c" + strconv.FormatUint(consumerID, 10)),
	}), pb.BaseCommand_SUCCESS)
	d.write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
		ConsumerId: proto.Uint64(consumerID), MessagePermits: proto.Uint32(permits),
	})))
}

// memory is a point-in-time reading of the process's memory.
type memory struct{ heap, rss uint64 }

// readMemory collects garbage and reads the live heap and the resident set.
func readMemory() memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{heap: ms.HeapAlloc, rss: rssBytes()}
}

// rssBytes reads VmRSS from /proc/self/status; 0 where there is none.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			var kb uint64
			fmt.Sscan(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), &kb)
			return kb << 10
		}
	}
	return 0
}

// reportPer reports the heap and RSS growth from before to after divided by
// n, as "heap-B/<unit>" and "rss-B/<unit>".
func reportPer(b *testing.B, before, after memory, n int, unit string) {
	b.ReportMetric(float64(int64(after.heap)-int64(before.heap))/float64(n), "heap-B/"+unit)
	b.ReportMetric(float64(int64(after.rss)-int64(before.rss))/float64(n), "rss-B/"+unit)
}

// BenchmarkScaleTopics opens n topics on one broker, each with a producer,
// a Shared subscription with one consumer, and one 100-byte message
// delivered to it. One op is the whole setup; the heap and RSS growth per
// topic are measured with every topic still open.
func BenchmarkScaleTopics(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("topics-%d", n), func(b *testing.B) {
			payload := make([]byte, 100)
			for b.Loop() {
				b.StopTimer()
				before := readMemory()
				br := broker.New()
				if err := br.Listen("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				d := dialDriver(b, br.Addr().String())
				for i := 0; i < n; i++ {
					topic := "scale-" + strconv.Itoa(i)
					id := uint64(i)
					d.producer(topic, id)
					d.subscribe(topic, "s", id, 10)
					d.write(sendFrame(id, 0, payload))
					d.await(pb.BaseCommand_SEND_RECEIPT)
				}
				b.StopTimer()
				after := readMemory()
				reportPer(b, before, after, n, "topic")
				d.nc.Close()
				br.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkScaleSharedConsumers attaches n consumers to one Shared
// subscription over one connection, each with 100 permits, then sends 10
// messages per consumer and waits for every delivery. One op is all of it;
// the memory per consumer is measured once the consumers are attached.
func BenchmarkScaleSharedConsumers(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("consumers-%d", n), func(b *testing.B) {
			payload := make([]byte, 100)
			for b.Loop() {
				b.StopTimer()
				before := readMemory()
				br := broker.New()
				if err := br.Listen("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				cons := dialDriver(b, br.Addr().String())
				for i := 0; i < n; i++ {
					cons.subscribe("many", "s", uint64(i), 100)
				}
				b.StopTimer()
				attached := readMemory()
				reportPer(b, before, attached, n, "consumer")
				b.StartTimer()
				prod := dialDriver(b, br.Addr().String())
				prod.producer("many", 1)
				msgs := 10 * n
				for i := 0; i < msgs; i++ {
					prod.write(sendFrame(1, uint64(i), payload))
				}
				got := 0
				for ; got < msgs; got++ {
					cons.await(pb.BaseCommand_MESSAGE)
				}
				b.StopTimer()
				cons.nc.Close()
				prod.nc.Close()
				br.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkScaleBrokers starts n brokers in one process, each listening and
// having answered one handshake, and keeps them all running while the
// memory per broker is measured. One op starts and then closes all n.
func BenchmarkScaleBrokers(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("brokers-%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				before := readMemory()
				g0 := runtime.NumGoroutine()
				b.StartTimer()
				brokers := make([]*broker.Broker, n)
				for i := range brokers {
					br := broker.New()
					if err := br.Listen("127.0.0.1:0"); err != nil {
						b.Fatal(err)
					}
					if err := handshake(br.Addr().String()); err != nil {
						b.Fatal(err)
					}
					brokers[i] = br
				}
				b.StopTimer()
				after := readMemory()
				reportPer(b, before, after, n, "broker")
				b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(n), "goroutines/broker")
				b.StartTimer()
				for _, br := range brokers {
					br.Close()
				}
			}
		})
	}
}
