package view_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/internal/chromium"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// bigTopic is the topic of the 10,000-message benchmarks.
const (
	bigTopic    = "big"
	bigFull     = "persistent://public/default/big"
	bigMessages = 10_000
)

// tenThousand runs 10,000 unbatched messages through a Shared subscription
// with two consumers: every tenth message is nacked once, every hundredth
// is nacked until the dead-letter policy moves it aside, the rest are acked.
// It returns the broker and the id of a busy message (the first to be
// dead-lettered).
func tenThousand(tb testing.TB) (*testkit.Broker, broker.MessageID) {
	b := testkit.Start(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.Drive(testkit.DriverOptions{
		Consumers: 2,
		Consumer: pulsar.ConsumerOptions{Topic: bigTopic, SubscriptionName: "s", Type: pulsar.Shared, Name: "c",
			NackRedeliveryDelay: 10 * time.Millisecond,
			DLQ:                 &pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: bigTopic + "-dlq"}},
		Script: func(m pulsar.Message, attempt int) testkit.Outcome {
			var i int
			fmt.Sscan(string(m.Payload()), &i)
			if i%100 == 0 || i%10 == 0 && attempt == 0 {
				return testkit.Nack
			}
			return testkit.Ack
		},
	})
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: bigTopic, DisableBatching: true,
		MaxPendingMessages: 2000})
	if err != nil {
		tb.Fatal(err)
	}
	var first pulsar.MessageID
	done := make(chan error, bigMessages)
	for i := range bigMessages {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if i == 0 {
					first = id
				}
				done <- err
			})
	}
	for range bigMessages {
		if err := <-done; err != nil {
			tb.Fatal(err)
		}
	}
	b.WaitBacklog(ctx, bigTopic, "s", 0)
	b.WaitMessages(ctx, bigTopic+"-dlq", bigMessages/100)
	return b, broker.MessageID{Ledger: first.LedgerID(), Entry: first.EntryID(), BatchIndex: -1}
}

// fetch gets u and returns the size of the body.
func fetch(tb testing.TB, u string, header ...string) int {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %s %v", u, resp.Status, err)
	}
	return int(n)
}

// BenchmarkPages10k fetches each page of the view over HTTP while the broker
// holds a topic of 10,000 messages and the history their 40,000-odd events:
// one op is one page, rendered and read.
func BenchmarkPages10k(b *testing.B) {
	tk, busy := tenThousand(b)
	base := tk.ViewURL()
	pages := []struct{ name, url, part string }{
		{"index", base, ""},
		{"topic", base + "topic?name=" + url.QueryEscape(bigFull), ""},
		{"topic-busiest", base + "topic?name=" + url.QueryEscape(bigFull) + "&sort=busiest", ""},
		{"topic-refresh", base + "topic?name=" + url.QueryEscape(bigFull), "main"},
		{"message", messageURL(base, bigFull, idText(busy)), ""},
	}
	runtime.GC() // the fixture's garbage is not the benchmark's
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			size := 0
			for b.Loop() {
				size = fetch(b, p.url, "X-View-Part", p.part)
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}

// BenchmarkLives10k builds the lives of the 10,000 messages from the
// history, the work behind a topic page.
func BenchmarkLives10k(b *testing.B) {
	tk, _ := tenThousand(b)
	events := tk.Events()
	runtime.GC() // the fixture's garbage is not the benchmark's
	for b.Loop() {
		view.Lives(events, nil, func(k view.Key) bool { return k.Topic == bigFull })
	}
	b.ReportMetric(float64(len(events)), "events")
}

// BenchmarkHistoryRecord records events in a history: one op is one event.
// bytes/event is the heap the held events take, measured after recording
// 100,000 delivery events like the broker's.
func BenchmarkHistoryRecord(b *testing.B) {
	ev := broker.Event{Kind: broker.EventDelivered, Topic: bigFull, Subscription: "s", Consumer: "c-0",
		ConsumerID: 1, ID: broker.MessageID{Ledger: 1, Entry: 42, BatchIndex: -1}, RedeliveryCount: 1}
	h := view.NewHistory(view.DefaultHistoryLimit)
	for b.Loop() {
		h.Record(ev)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	held := view.NewHistory(0)
	for i := range 100_000 {
		ev.Seq = uint64(i)
		held.Record(ev)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/100_000, "bytes/event")
	runtime.KeepAlive(held)
}

// BenchmarkBrowser10k loads the view's pages in a headless Chromium while the
// broker holds a topic of 10,000 messages, and reports the browser's own
// timings: response-ms when the page's last byte arrived (the data is in the
// page), load-ms when it had loaded and rendered (the load event ended), and
// for the topic page refresh-ms, a live update (fetch the page's main part
// again and swap it in, as the page's script does).
func BenchmarkBrowser10k(b *testing.B) {
	br := chromium.ForTest(b)
	tk, busy := tenThousand(b)
	ctx := context.Background()
	p, err := br.NewPage(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.SetViewport(ctx, 1280, 900, 1); err != nil {
		b.Fatal(err)
	}
	base := tk.ViewURL()
	pages := []struct{ name, url string }{
		{"index", base},
		{"topic", base + "topic?name=" + url.QueryEscape(bigFull)},
		{"message", messageURL(base, bigFull, idText(busy))},
	}
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			var response, load, refresh float64
			n := 0
			for b.Loop() {
				if err := p.Navigate(ctx, pg.url); err != nil {
					b.Fatal(err)
				}
				var t struct{ Response, Load float64 }
				// The load event's end is set once its handlers return.
				if err := p.Eval(ctx, `new Promise(done => setTimeout(() => {
					const n = performance.getEntriesByType('navigation')[0];
					done({Response: n.responseEnd, Load: n.loadEventEnd});
				}, 0))`, &t); err != nil {
					b.Fatal(err)
				}
				var r float64
				if err := p.Eval(ctx, `(async () => {
					const t0 = performance.now();
					const html = await (await fetch(location.href, {headers: {'X-View-Part': 'main'}})).text();
					document.getElementById('main').innerHTML = html;
					document.body.offsetHeight; // lay the page out
					return performance.now() - t0;
				})()`, &r); err != nil {
					b.Fatal(err)
				}
				response, load, refresh = response+t.Response, load+t.Load, refresh+r
				n++
			}
			b.ReportMetric(response/float64(n), "response-ms")
			b.ReportMetric(load/float64(n), "load-ms")
			b.ReportMetric(refresh/float64(n), "refresh-ms")
		})
	}
}
