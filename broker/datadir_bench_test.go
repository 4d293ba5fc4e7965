package broker_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// BenchmarkProduce1KiBDataDir measures pulsar-client-go producing 1 KiB
// messages without batching (one entry each) to the in-memory broker and to
// a broker on a data directory under each sync policy, with one producer
// and with four (whose entries share group commits): b.N messages in all,
// each op one receipted message. With a data directory it reports the
// changes (entries, mostly) each commit wrote.
func BenchmarkProduce1KiBDataDir(b *testing.B) {
	for _, store := range []string{"memory", string(durable.SyncFsync), string(durable.SyncWrite)} {
		for _, producers := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/producers=%d", store, producers), func(b *testing.B) {
				var opts []testkit.Option
				if store != "memory" {
					opts = append(opts, testkit.WithDataDir(b.TempDir()), testkit.WithDataSync(durable.Sync(store)))
				}
				br := testkit.Start(b, opts...)
				client := br.Client()
				ps := make([]pulsar.Producer, producers)
				for i := range ps {
					p, err := client.CreateProducer(pulsar.ProducerOptions{
						Topic: fmt.Sprintf("persistent://public/default/bench-dd-%d", i), DisableBatching: true})
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close()
					ps[i] = p
				}
				payload := make([]byte, 1024)
				var wg sync.WaitGroup
				var failed atomic.Int64
				done := func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						failed.Add(1)
					}
					wg.Done()
				}
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				before := br.DataDirStats()
				b.ResetTimer()
				wg.Add(b.N)
				var senders sync.WaitGroup
				for i, p := range ps {
					n := b.N / producers
					if i == 0 {
						n += b.N % producers
					}
					senders.Add(1)
					go func() {
						defer senders.Done()
						for range n {
							p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, done)
						}
						p.Flush()
					}()
				}
				senders.Wait()
				wg.Wait()
				b.StopTimer()
				if n := failed.Load(); n > 0 {
					b.Fatalf("%d of %d sends failed", n, b.N)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				if after := br.DataDirStats(); after.Commits > before.Commits {
					b.ReportMetric(float64(after.Changes-before.Changes)/float64(after.Commits-before.Commits), "changes/commit")
				}
			})
		}
	}
}
