package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
)

// startCluster starts n brokers over one store, closed when the test ends.
func startCluster(t *testing.T, n int, opts ...broker.Option) *broker.Cluster {
	t.Helper()
	c := broker.NewCluster(n, opts...)
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clientOf(t *testing.T, url string) pulsar.Client {
	t.Helper()
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func sendNumbered(t *testing.T, p pulsar.Producer, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

func TestClusterLookupRedirectsToTheBundleOwner(t *testing.T) {
	c := startCluster(t, 2)
	topic := "persistent://public/default/redirected"
	produceVia(t, c, topic, 0, 1, 3)
	if got := c.Broker(0).LoadedTopics(); slices.Contains(got, topic) {
		t.Errorf("broker 0, which does not own the bundle, loaded %s", topic)
	}
	if owner, _ := c.Owner(topic); owner != 1 {
		t.Errorf("owner %d, want 1", owner)
	}
}

func TestClusterTopicMoveKeepsEveryMessageAndResetsRedeliveryCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startCluster(t, 3)
	topic := "persistent://public/default/moving"
	if err := c.Move(topic, 0); err != nil {
		t.Fatal(err)
	}
	cl := clientOf(t, c.URL())
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	sendNumbered(t, p, 0, 10)
	// Ack the first five; nack message 5 once so that it comes back with
	// count 1 before the move; leave 6..9 delivered, unacknowledged.
	for range 5 {
		if err := cons.Ack(receive(t, ctx, cons)); err != nil {
			t.Fatal(err)
		}
	}
	var rest []pulsar.Message
	for len(rest) < 5 {
		rest = append(rest, receive(t, ctx, cons))
	}
	cons.Nack(rest[0])
	again := receive(t, ctx, cons)
	if string(again.Payload()) != "5" || again.RedeliveryCount() != 1 {
		t.Fatalf("after a nack got %q count %d, want \"5\" count 1", again.Payload(), again.RedeliveryCount())
	}

	if err := c.Move(topic, 2); err != nil {
		t.Fatal(err)
	}
	// The producer goes on on broker 2.
	p = producerAfterMove(t, cl, p, c.Broker(2), topic)
	sendNumbered(t, p, 10, 5)

	// What was delivered and not acknowledged comes back from broker 2,
	// with its counter reset (Pulsar keeps counters in the dispatcher's
	// memory); then the new messages. Nothing acknowledged comes back.
	got := map[string]uint32{}
	for len(got) < 10 {
		m := receive(t, ctx, cons)
		got[string(m.Payload())] = m.RedeliveryCount()
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 5; i < 15; i++ {
		n, ok := got[fmt.Sprint(i)]
		if !ok {
			t.Errorf("message %d lost across the move; got %v", i, got)
		}
		if n != 0 {
			t.Errorf("message %d came back from the new owner with count %d, want 0", i, n)
		}
	}
	if got := c.Broker(2).LoadedTopics(); !slices.Contains(got, topic) {
		t.Errorf("broker 2 has %v loaded, want %s", got, topic)
	}
	if got := c.Broker(0).LoadedTopics(); slices.Contains(got, topic) {
		t.Errorf("broker 0 still has %s loaded after the move", topic)
	}
}

func TestClusterCrashedOwnersBundlesAreTakenOverAfterTheOwnershipTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clock := broker.NewManualClock(time.Unix(1_700_000_000, 0))
	c := startCluster(t, 2, broker.WithClock(clock))
	topic := "persistent://public/default/crashing"
	if err := c.Move(topic, 1); err != nil {
		t.Fatal(err)
	}
	// The service URL names broker 0 only: it is the one that survives.
	cl := clientOf(t, c.Broker(0).URL())
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	sendNumbered(t, p, 0, 4)
	if err := cons.Ack(receive(t, ctx, cons)); err != nil { // "0"
		t.Fatal(err)
	}
	// Wait until the broker has the acknowledgement before crashing it.
	waitUntil(t, "the acknowledgement", func() bool {
		s, ok := c.Broker(1).Subscription(topic, "s")
		return ok && s.Backlog == 3
	})
	if err := c.Crash(1); err != nil {
		t.Fatal(err)
	}
	if owner, _ := c.Owner(topic); owner != 1 {
		t.Fatalf("owner right after the crash %d, want 1 (until the timeout)", owner)
	}
	clock.Advance(broker.DefaultOwnershipTimeout)
	if owner, _ := c.Owner(topic); owner != -1 {
		t.Fatalf("owner after the timeout %d, want none (-1)", owner)
	}
	// The clients' next lookup gives the bundle to broker 0.
	p = producerAfterMove(t, cl, p, c.Broker(0), topic)
	sendNumbered(t, p, 4, 2)
	got := map[string]bool{}
	for len(got) < 5 {
		m := receive(t, ctx, cons)
		got[string(m.Payload())] = true
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < 6; i++ {
		if !got[fmt.Sprint(i)] {
			t.Errorf("message %d lost across the crash; got %v", i, got)
		}
	}
	if got["0"] {
		t.Errorf("the acknowledged message 0 came back after the crash")
	}
}

func TestClusterRestartedBrokerServesOnItsAddressAgain(t *testing.T) {
	c := startCluster(t, 2)
	addr := c.Broker(1).URL()
	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	if got := c.Broker(1).URL(); got != addr {
		t.Fatalf("restarted on %s, want %s", got, addr)
	}
	produceVia(t, c, "persistent://public/default/after-restart", 0, 1, 1)
}

// produceVia names broker owner as topic's next owner, produces n messages
// through a client of broker via, and checks that the owner loaded it.
func produceVia(t *testing.T, c *broker.Cluster, topic string, via, owner, n int) {
	t.Helper()
	if err := c.Move(topic, owner); err != nil {
		t.Fatal(err)
	}
	p, err := clientOf(t, c.Broker(via).URL()).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendNumbered(t, p, 0, n)
	if got := c.Broker(owner).LoadedTopics(); !slices.Contains(got, topic) {
		t.Errorf("broker %d has %v loaded, want %s", owner, got, topic)
	}
}

// producerAfterMove returns the producer to go on with once topic has moved
// to broker b: p itself, reconnected there, or under the race detector a new
// producer on the same client (see raceDetector).
func producerAfterMove(t *testing.T, cl pulsar.Client, p pulsar.Producer, b *broker.Broker, topic string) pulsar.Producer {
	t.Helper()
	waitProducerOn(t, b, topic)
	if !raceDetector {
		return p
	}
	p.Close()
	np, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	return np
}

// waitProducerOn waits until a producer of topic is attached on broker b.
func waitProducerOn(t *testing.T, b *broker.Broker, topic string) {
	t.Helper()
	waitUntil(t, "a producer on "+topic, func() bool {
		ts, ok := b.Topic(topic)
		return ok && len(ts.Producers) > 0
	})
}

// crashScene is a Shared subscription on a topic owned by broker 1 of two,
// with a consumer and a producer whose service URL names broker 0 (the one
// that survives), and messages "0".."n-1" delivered to the consumer.
type crashScene struct {
	c     *broker.Cluster
	clock *broker.ManualClock
	topic string
	cons  pulsar.Consumer
	prod  pulsar.Producer
	got   []pulsar.Message
}

func newCrashScene(t *testing.T, ctx context.Context, n int) *crashScene {
	t.Helper()
	clock := broker.NewManualClock(time.Unix(1_700_000_000, 0))
	c := startCluster(t, 2, broker.WithClock(clock))
	sc := &crashScene{c: c, clock: clock, topic: "persistent://public/default/" + t.Name()}
	if err := c.Move(sc.topic, 1); err != nil {
		t.Fatal(err)
	}
	cl := clientOf(t, c.Broker(0).URL())
	var err error
	sc.cons, err = cl.Subscribe(pulsar.ConsumerOptions{Topic: sc.topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.cons.Close)
	sc.prod, err = cl.CreateProducer(pulsar.ProducerOptions{Topic: sc.topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.prod.Close)
	sendNumbered(t, sc.prod, 0, n)
	for range n {
		sc.got = append(sc.got, receive(t, ctx, sc.cons))
	}
	return sc
}

// ack acknowledges the i-th message and waits until broker 1 has it, which
// leaves the backlog at backlog.
func (sc *crashScene) ack(t *testing.T, i int, backlog int64) {
	t.Helper()
	if err := sc.cons.Ack(sc.got[i]); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the acknowledgement", func() bool {
		s, ok := sc.c.Broker(1).Subscription(sc.topic, "s")
		return ok && s.Backlog == backlog
	})
}

// crashAndTakeOver crashes broker 1 and lets broker 0 take its bundles.
func (sc *crashScene) crashAndTakeOver(t *testing.T) {
	t.Helper()
	if err := sc.c.Crash(1); err != nil {
		t.Fatal(err)
	}
	sc.clock.Advance(broker.DefaultOwnershipTimeout)
}

// redelivered returns what broker 0 delivers until the backlog's messages
// have all come back once, acknowledging each.
func (sc *crashScene) redelivered(t *testing.T, ctx context.Context, want int) map[string]uint32 {
	t.Helper()
	got := map[string]uint32{}
	for len(got) < want {
		m := receive(t, ctx, sc.cons)
		got[string(m.Payload())] = m.RedeliveryCount()
		if err := sc.cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func TestClusterCrashLosesTheAcknowledgementsTheCursorHadNotPersisted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := newCrashScene(t, ctx, 4)
	sc.ack(t, 0, 3) // persisted at once: the cursor's first change
	sc.ack(t, 1, 2) // within the second: held back by the rate limit
	sc.ack(t, 2, 1)
	sc.crashAndTakeOver(t)
	got := sc.redelivered(t, ctx, 3)
	if _, again := got["0"]; again {
		t.Errorf("message 0, whose acknowledgement was persisted, came back: %v", got)
	}
	for _, m := range []string{"1", "2", "3"} {
		if n, ok := got[m]; !ok || n != 0 {
			t.Errorf("message %s: delivered again %v with count %d, want once with count 0 (got %v)", m, ok, n, got)
		}
	}
}

func TestClusterCrashKeepsWhatTheCursorPersistedAfterTheRateLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := newCrashScene(t, ctx, 4)
	sc.ack(t, 0, 3)
	sc.clock.Advance(time.Second) // the next change goes through
	sc.ack(t, 1, 2)
	sc.ack(t, 2, 1) // held back...
	sc.clock.Advance(time.Minute)
	sc.c.Broker(1).RunTimers() // ...until the periodic flush
	sc.crashAndTakeOver(t)
	got := sc.redelivered(t, ctx, 1)
	if len(got) != 1 || got["3"] != 0 {
		t.Errorf("after the crash got %v, want only message 3, count 0", got)
	}
}

func TestClusterExtensibleTransferSendsClientsToTheNewOwnerWithoutALookup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startCluster(t, 3, broker.WithLoadManager(broker.ExtensibleLoadManager))
	topic := "persistent://public/default/transferred"
	cl := clientOf(t, c.URL())
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	from, _ := c.Owner(topic)
	to := (from + 1) % 3
	lookups := func() (n int64) {
		for _, b := range c.Brokers() {
			n += b.LookupsAnswered()
		}
		return n
	}
	before := lookups()
	if err := c.Move(topic, to); err != nil {
		t.Fatal(err)
	}
	if owner, _ := c.Owner(topic); owner != to {
		t.Fatalf("owner right after the transfer %d, want %d", owner, to)
	}
	waitUntil(t, "the consumer on the new owner", func() bool {
		s, ok := c.Broker(to).Subscription(topic, "s")
		return ok && len(s.Consumers) == 1
	})
	p = producerAfterMove(t, cl, p, c.Broker(to), topic)
	if !raceDetector {
		if n := lookups() - before; n != 0 {
			t.Errorf("the clients made %d lookups after the transfer, want none (CLOSE_* named the new owner)", n)
		}
	}
	sendNumbered(t, p, 0, 1)
	if m := receive(t, ctx, cons); string(m.Payload()) != "0" {
		t.Errorf("got %q after the transfer", m.Payload())
	}
	if err := c.Move(topic, to); err == nil || !errors.Is(err, broker.ErrNotAllowed) {
		t.Errorf("a transfer to the owner itself: %v, want ErrNotAllowed", err)
	}
}

func TestATopicUnloadKeepsWhatTheLedgerKeepsAndForgetsTheCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, cl := startBroker(t)
	const topic = "persistent://public/default/reloaded"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 10 * time.Millisecond, SubscriptionProperties: map[string]string{"team": "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	sendNumbered(t, p, 0, 2)
	p.Close() // sends after the reload would race in the client (race_on_test.go)
	first := receive(t, ctx, cons)
	if err := cons.Ack(first); err != nil {
		t.Fatal(err)
	}
	m := receive(t, ctx, cons)
	cons.Nack(m)
	if m = receive(t, ctx, cons); m.RedeliveryCount() != 1 {
		t.Fatalf("after a nack count %d, want 1", m.RedeliveryCount())
	}
	if err := b.UnloadTopic(topic); err != nil {
		t.Fatal(err)
	}
	// The topic is loaded again from its ledger: the held message comes
	// back with its count at 0, the acknowledged one does not.
	m = receive(t, ctx, cons)
	if string(m.Payload()) != "1" || m.RedeliveryCount() != 0 {
		t.Errorf("after the unload got %q count %d, want \"1\" count 0", m.Payload(), m.RedeliveryCount())
	}
	cons.Ack(m)
	st, err := b.TopicStats(topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Subscriptions["s"].Properties; got["team"] != "billing" {
		t.Errorf("the subscription's properties after the unload: %v", got)
	}
}
