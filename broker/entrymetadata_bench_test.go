package broker_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The cost of broker entry metadata on the publish and dispatch paths, with
// the raw drivers of perf_raw_bench_test.go: without interceptors (off),
// with both interceptors (on), and, for delivery, with the metadata exposed
// to a client that announces support for it (exposed; the others strip it).

// entryMetadataModes are the broker settings compared.
var entryMetadataModes = []struct {
	name string
	meta broker.BrokerEntryMetadata
}{
	{"off", broker.BrokerEntryMetadata{}},
	{"on", broker.BrokerEntryMetadata{BrokerTimestamp: true, Index: true}},
	{"exposed", broker.BrokerEntryMetadata{BrokerTimestamp: true, Index: true, ExposeToClients: true}},
}

// dialEntryMetadataDriver connects a raw driver whose CONNECT announces
// support for broker entry metadata, as pulsar-client-go's does.
func dialEntryMetadataDriver(tb testing.TB, addr string) *rawDriver {
	return dialAnnouncing(tb, addr, 21, true)
}

// dialAnnouncing connects a raw driver with this protocol version, its
// CONNECT announcing support for broker entry metadata or not.
func dialAnnouncing(tb testing.TB, addr string, version int32, announce bool) *rawDriver {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	d := &rawDriver{tb: tb, nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	d.call(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("entry-metadata"), ProtocolVersion: proto.Int32(version),
		FeatureFlags: &pb.FeatureFlags{SupportsBrokerEntryMetadata: proto.Bool(announce)},
	}), pb.BaseCommand_CONNECTED)
	return d
}

// BenchmarkEntryMetadataProduceRaw is BenchmarkProduceRaw with broker entry
// metadata off and on: one op is one 1 KiB message.
func BenchmarkEntryMetadataProduceRaw(b *testing.B) {
	for _, mode := range entryMetadataModes[:2] {
		for _, tc := range []struct {
			batch, window int
		}{{1, 1000}, {128, 8}} {
			b.Run(fmt.Sprintf("%s/batch-%d", mode.name, tc.batch), func(b *testing.B) {
				br := broker.New(broker.WithBrokerEntryMetadata(mode.meta))
				if err := br.Listen("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				d := dialEntryMetadataDriver(b, br.Addr().String())
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
				for range tc.window {
					burst = append(burst, frame...)
				}
				b.SetBytes(1024)
				b.ResetTimer()
				cpu0 := processCPU()
				go countFrames(d.nc, frames, done)
				for sent := 0; sent < frames; sent += tc.window {
					d.write(burst[:min(tc.window, frames-sent)*len(frame)])
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				reportCPU(b, cpu0)
			})
		}
	}
}

// BenchmarkEntryMetadataConsumeRaw is BenchmarkConsumeRaw with broker entry
// metadata off, on (stripped from the MESSAGEs) and exposed (sent): one op
// is one 1 KiB message delivered and acknowledged.
func BenchmarkEntryMetadataConsumeRaw(b *testing.B) {
	for _, mode := range entryMetadataModes {
		for _, batch := range []int{1, 128} {
			b.Run(fmt.Sprintf("%s/batch-%d", mode.name, batch), func(b *testing.B) {
				br := broker.New(broker.WithBrokerEntryMetadata(mode.meta))
				if err := br.Listen("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				n := (b.N + batch - 1) / batch * batch
				fillRaw(b, br.Addr().String(), "persistent://public/default/raw-consume", n, batch)
				d := dialEntryMetadataDriver(b, br.Addr().String())
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
}
