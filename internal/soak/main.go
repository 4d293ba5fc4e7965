// Command soak runs pulsarsim under a steady load of real clients for a
// while and checks that it holds up: N pulsar-client-go clients publish to M
// topics and consume them on a Shared, a Failover and a Key_Shared
// subscription each, acknowledging most messages, negatively acknowledging
// some, and now and then closing a consumer or losing a connection. It runs
// on loopback only, for a bounded time, and stops by itself. It checks that
// no published message is lost on any subscription, that the broker's
// counters never go down, that the settlement invariants hold throughout,
// and that the process's goroutines and heap return to their baseline once
// everything is closed. scripts/soak runs it; RELIABILITY.md records runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pulsarsim/pulsarsim/broker"
)

type options struct {
	clients, topics int
	duration        time.Duration
	rate            int // messages per second per producer
	size            int // payload bytes
	drainTimeout    time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 4, "clients; each has a producer per topic and a consumer per subscription")
	flag.IntVar(&o.topics, "topics", 4, "topics")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long the clients publish")
	flag.IntVar(&o.rate, "rate", 25, "messages per second of each producer")
	flag.IntVar(&o.size, "size", 256, "payload bytes")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 2*time.Minute, "how long the consumers may take to drain the backlog at the end")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("soak: passed")
}

// subscriptions are the subscriptions every topic has, one consumer per
// client on each.
var subscriptions = []struct {
	name string
	typ  pulsar.SubscriptionType
}{{"shared", pulsar.Shared}, {"failover", pulsar.Failover}, {"keyshared", pulsar.KeyShared}}

// memory is a snapshot of the process's goroutines and heap.
type memory struct {
	goroutines int
	heap       uint64
}

func measure() memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

func run(o options) error {
	base := measure()
	fmt.Printf("soak: %d clients x %d topics x %v, %d msg/s per producer of %d bytes; baseline %d goroutines, heap %s\n",
		o.clients, o.topics, o.duration, o.rate, o.size, base.goroutines, mib(base.heap))
	s, err := start(o)
	if err != nil {
		return err
	}
	start := time.Now()
	failure := s.load(o)
	fmt.Printf("soak: published %d messages in %v (%d failed sends, retried)\n",
		s.published.Load(), time.Since(start).Round(time.Second), s.sendErrors.Load())
	if failure == nil {
		failure = s.drain(o)
	}
	if failure == nil {
		failure = s.checkNothingLost()
	}
	s.close()
	if failure != nil {
		return failure
	}
	// What the soak itself recorded (every message's key) is not the
	// broker's: let it go before comparing with the baseline.
	peak := s.peak
	s = nil
	return backToBaseline(base, peak)
}

// soak is one run: the broker, the clients and what they saw.
type soak struct {
	b         *broker.Broker
	clients   []pulsar.Client
	producers []pulsar.Producer
	topics    []string

	mu        sync.Mutex
	consumers []*churnConsumer
	sent      map[string]bool              // message key -> published
	received  map[string]map[string]int    // subscription -> key -> times
	counters  map[string]broker.TopicStats // the last stats seen, per topic
	entries   map[string]int64             // the last entry count seen, per topic
	failures  []error

	published  atomic.Int64
	sendErrors atomic.Int64
	delivered  atomic.Int64
	nacked     atomic.Int64
	checks     atomic.Int64 // looks at the counters and invariants
	disturbed  atomic.Int64 // consumers reopened or disconnected
	peak       memory
}

func start(o options) (*soak, error) {
	b := broker.New(broker.WithLogger(slog.New(slog.DiscardHandler)))
	if err := b.Listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	s := &soak{b: b, sent: map[string]bool{}, received: map[string]map[string]int{},
		counters: map[string]broker.TopicStats{}, entries: map[string]int64{}}
	for _, sub := range subscriptions {
		s.received[sub.name] = map[string]int{}
	}
	for j := range o.topics {
		s.topics = append(s.topics, fmt.Sprintf("persistent://public/default/soak-%d", j))
	}
	for i := range o.clients {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: plog.DefaultNopLogger(),
			MetricsRegisterer: prometheus.NewRegistry(), OperationTimeout: 30 * time.Second})
		if err != nil {
			s.close()
			return nil, err
		}
		s.clients = append(s.clients, c)
		for _, topic := range s.topics {
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: 5 * time.Millisecond})
			if err != nil {
				s.close()
				return nil, err
			}
			s.producers = append(s.producers, p)
			for _, sub := range subscriptions {
				cc := &churnConsumer{s: s, client: c, topic: topic, sub: sub.name, typ: sub.typ,
					name: fmt.Sprintf("c%d", i), rng: rand.New(rand.NewPCG(uint64(i), uint64(len(s.consumers))))}
				if err := cc.open(); err != nil {
					s.close()
					return nil, err
				}
				s.consumers = append(s.consumers, cc)
			}
		}
	}
	return s, nil
}

func (s *soak) fail(err error) {
	s.mu.Lock()
	s.failures = append(s.failures, err)
	s.mu.Unlock()
}

func (s *soak) firstFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.failures...)
}

// load publishes for the run's duration while checking the broker every
// few seconds, and disturbs the clients now and then.
func (s *soak) load(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range s.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.publish(ctx, p, i, o)
		}()
	}
	check := time.NewTicker(5 * time.Second)
	defer check.Stop()
	disturb := time.NewTicker(7 * time.Second)
	defer disturb.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-check.C:
			s.check()
		case <-disturb.C:
			s.disturb(rng)
		}
		if err := s.firstFailure(); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	wg.Wait()
	for _, p := range s.producers {
		if err := p.Flush(); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	s.check()
	return s.firstFailure()
}

// publish sends messages at the rate until ctx ends. A send that fails is
// retried with the same key, so that every key ends up published.
func (s *soak) publish(ctx context.Context, p pulsar.Producer, n int, o options) {
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	payload := make([]byte, o.size)
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("p%d-%d", n, seq)
		msg := &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", seq%16), Payload: payload,
			Properties: map[string]string{"id": key}}
		var send func()
		send = func() {
			p.SendAsync(context.Background(), msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					// Not from the client's callback goroutine: a full
					// queue would wait for that goroutine.
					s.sendErrors.Add(1)
					go send()
					return
				}
				s.mu.Lock()
				s.sent[key] = true
				s.mu.Unlock()
				s.published.Add(1)
			})
		}
		send()
	}
}

// disturb closes a random consumer (it subscribes again) or drops its
// connection (the client reconnects), as clients come and go.
func (s *soak) disturb(rng *rand.Rand) {
	s.mu.Lock()
	cc := s.consumers[rng.IntN(len(s.consumers))]
	s.mu.Unlock()
	s.disturbed.Add(1)
	if rng.IntN(2) == 0 {
		cc.reopen()
		return
	}
	s.b.DropConsumerConnection(cc.topic, cc.sub, cc.name)
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
