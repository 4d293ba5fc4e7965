package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// liveMemory collects garbage and returns the live heap and the resident set.
func liveMemory() (heap, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
				fmt.Sscan(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), &rss)
				rss <<= 10
			}
		}
	}
	return int64(ms.HeapAlloc), rss
}

// BenchmarkRetained1KiB measures the memory a broker holds per retained
// 1 KiB message: a pulsar-client-go producer (batching on) sends 1M
// messages to a topic with no subscription, then the live heap and RSS
// growth are divided by 1M. A Shared consumer then receives and acks all of
// them; with blocks of 100 entries (the test setting, not the default) the
// acknowledged blocks are freed, and the heap left per message is reported
// as "heap-after-ack-B/msg". One op is all of it.
func BenchmarkRetained1KiB(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		b.StopTimer()
		heap0, rss0 := liveMemory()
		br := New()
		br.trimBlock = 100
		if err := br.Listen("127.0.0.1:0"); err != nil {
			b.Fatal(err)
		}
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: br.URL(), Logger: log.DefaultNopLogger()})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "retained"})
		if err != nil {
			b.Fatal(err)
		}
		payload := make([]byte, 1024)
		var wg sync.WaitGroup
		wg.Add(n)
		done := func(pulsar.MessageID, *pulsar.ProducerMessage, error) { wg.Done() }
		for i := 0; i < n; i++ {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, done)
		}
		p.Flush()
		wg.Wait()
		b.StopTimer()
		heap1, rss1 := liveMemory()
		b.ReportMetric(float64(heap1-heap0)/n, "heap-B/msg")
		b.ReportMetric(float64(rss1-rss0)/n, "rss-B/msg")
		ts, _ := br.Topic("retained")
		b.ReportMetric(float64(ts.Entries), "entries")

		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "retained", SubscriptionName: "s",
			Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1000, MaxTime: time.Millisecond}})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			cons.Ack(<-cons.Chan())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for {
			if sub, _ := br.Subscription("retained", "s"); sub.Backlog == 0 {
				break
			}
			select {
			case <-ctx.Done():
				b.Fatal("backlog not drained")
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		cons.Close()
		p.Close()
		client.Close()
		heap2, _ := liveMemory()
		ts, _ = br.Topic("retained")
		b.ReportMetric(float64(heap2-heap0)/n, "heap-after-ack-B/msg")
		b.ReportMetric(float64(ts.Retained), "retained-entries")
		br.Close()
		b.StartTimer()
	}
}
