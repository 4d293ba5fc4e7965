package broker_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

// roundTrip connects a fresh pulsar-client-go client to url, subscribes,
// produces one message, receives it and acks it with the broker's
// confirmation: the first full round trip a test makes.
func roundTrip(url, topic string) error {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger()})
	if err != nil {
		return err
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		Type: pulsar.Shared, AckWithResponse: true})
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return err
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		return err
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		return err
	}
	return cons.Ack(m)
}

// reportQuantiles reports the median and the 99th percentile of ds in
// microseconds as "<name>-p50-µs" and "<name>-p99-µs".
func reportQuantiles(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), name+"-p50-µs")
	b.ReportMetric(q(0.99), name+"-p99-µs")
}

// BenchmarkStartToFirstRoundTrip measures, per op, a broker started as
// testkit.Start starts it (New with an offset clock and the event history
// as its hook, Listen on a free port) and the first round trip with pulsar-client-go
// against it: connect, subscribe, produce, receive, ack confirmed. It
// reports the median and p99 of the broker alone (New to listening) and of
// start to the end of the round trip. Run it with -benchtime 1000x.
func BenchmarkStartToFirstRoundTrip(b *testing.B) {
	var alone, total []time.Duration
	for b.Loop() {
		start := time.Now()
		br := broker.New(broker.WithClock(&broker.OffsetClock{}))
		br.OnEvent(view.NewHistory(0).Record) // the trace testkit.Start keeps
		if err := br.Listen("127.0.0.1:0"); err != nil {
			b.Fatal(err)
		}
		ready := time.Now()
		if err := roundTrip(br.URL(), "first"); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		alone = append(alone, ready.Sub(start))
		total = append(total, done.Sub(start))
		b.StopTimer()
		br.Close()
		b.StartTimer()
	}
	reportQuantiles(b, "broker", alone)
	reportQuantiles(b, "roundtrip", total)
}

// BenchmarkFirstRoundTripReal makes the same first round trip against an
// already running real broker at $PULSARSIM_REAL_URL (scripts/real-pulsar
// start; pulsar://127.0.0.1:6651), each op on a new topic. It is skipped
// when the variable is not set.
func BenchmarkFirstRoundTripReal(b *testing.B) {
	url := os.Getenv("PULSARSIM_REAL_URL")
	if url == "" {
		b.Skip("PULSARSIM_REAL_URL not set")
	}
	var total []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := roundTrip(url, "first-"+time.Now().Format("150405.000000")); err != nil {
			b.Fatal(err)
		}
		total = append(total, time.Since(start))
	}
	reportQuantiles(b, "roundtrip", total)
}
