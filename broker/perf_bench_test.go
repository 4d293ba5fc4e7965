package broker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// produceRig is one pulsar-client-go client and producer, ready to send
// 1 KiB messages to one topic.
type produceRig struct {
	client  pulsar.Client
	p       pulsar.Producer
	payload []byte
}

func newProduceRig(tb testing.TB, url, topic string, batching bool) *produceRig {
	tb.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: !batching})
	if err != nil {
		client.Close()
		tb.Fatal(err)
	}
	r := &produceRig{client: client, p: p, payload: make([]byte, 1024)}
	for i := range r.payload {
		r.payload[i] = byte(i)
	}
	tb.Cleanup(r.close)
	return r
}

func (r *produceRig) close() {
	r.p.Close()
	r.client.Close()
}

// run sends n messages with SendAsync, flushes, and waits for every receipt.
func (r *produceRig) run(n int) error {
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	done := func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
		wg.Done()
	}
	ctx := context.Background()
	wg.Add(n)
	for i := 0; i < n; i++ {
		r.p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: r.payload}, done)
	}
	if err := r.p.Flush(); err != nil {
		return err
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d sends failed, first: %v", f, n, firstErr.Load())
	}
	return nil
}

// produceN produces n 1 KiB messages to topic at url with a fresh client.
func produceN(tb testing.TB, url, topic string, batching bool, n int) error {
	r := newProduceRig(tb, url, topic, batching)
	return r.run(n)
}

// BenchmarkProduceLimit runs the same pulsar-client-go producer (1 KiB
// messages) against the sink, the thinnest responder the client accepts, and
// against a testkit.Start broker, and against a real broker at
// $PULSARSIM_REAL_URL when it is set. Compare with benchstat -col /target.
func BenchmarkProduceLimit(b *testing.B) {
	for _, batching := range []bool{true, false} {
		mode := "batching-on"
		if !batching {
			mode = "batching-off"
		}
		for _, target := range []string{"sink", "pulsarsim", "real"} {
			b.Run(mode+"/target="+target, func(b *testing.B) {
				var url string
				topic := "limit-" + mode
				switch target {
				case "sink":
					url = startSink(b).url()
				case "pulsarsim":
					url = testkit.Start(b).URL()
				default:
					if url = os.Getenv("PULSARSIM_REAL_URL"); url == "" {
						b.Skip("PULSARSIM_REAL_URL not set")
					}
					topic += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				}
				r := newProduceRig(b, url, topic, batching)
				b.SetBytes(int64(len(r.payload)))
				b.ReportAllocs()
				b.ResetTimer()
				if err := r.run(b.N); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkProduceLimitPaired sends the same rounds of 1 KiB messages to the
// sink and to pulsarsim in turn, so that both see the same machine load, and
// reports pulsarsim's rate as a fraction of the sink's ("of-sink"). One op is
// one message sent to each of the two.
func BenchmarkProduceLimitPaired(b *testing.B) {
	for _, batching := range []bool{true, false} {
		mode := "batching-on"
		round := 20000
		if !batching {
			mode = "batching-off"
			round = 5000
		}
		b.Run(mode, func(b *testing.B) {
			sinkRig := newProduceRig(b, startSink(b).url(), "paired-"+mode, batching)
			simRig := newProduceRig(b, testkit.Start(b).URL(), "paired-"+mode, batching)
			var sinkTime, simTime time.Duration
			b.ResetTimer()
			for left := b.N; left > 0; left -= round {
				n := min(left, round)
				for _, side := range []struct {
					r *produceRig
					d *time.Duration
				}{{sinkRig, &sinkTime}, {simRig, &simTime}} {
					start := time.Now()
					if err := side.r.run(n); err != nil {
						b.Fatal(err)
					}
					*side.d += time.Since(start)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/sinkTime.Seconds(), "sink-msgs/s")
			b.ReportMetric(float64(b.N)/simTime.Seconds(), "pulsarsim-msgs/s")
			b.ReportMetric(sinkTime.Seconds()/simTime.Seconds(), "of-sink")
		})
	}
}
