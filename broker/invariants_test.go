package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// startInvariantBroker starts a broker with opts and a client for it.
func startInvariantBroker(t *testing.T, opts ...Option) (*Broker, pulsar.Client) {
	t.Helper()
	b := New(opts...)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return b, c
}

// waitSub waits until cond holds for the subscription's snapshot, re-checking
// after every broker event.
func waitSub(t *testing.T, b *Broker, topic, sub, what string, cond func(SubscriptionSnapshot) bool) SubscriptionSnapshot {
	t.Helper()
	wake := make(chan struct{}, 1)
	defer b.OnEvent(func(Event) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s, ok := b.Subscription(topic, sub); ok && cond(s) {
			return s
		}
		select {
		case <-ctx.Done():
			s, _ := b.Subscription(topic, sub)
			t.Fatalf("waiting for %s on %s/%s: %v; last state %+v", what, topic, sub, ctx.Err(), s)
		case <-wake:
		case <-tick.C:
		}
	}
}

func pendingOn(s SubscriptionSnapshot, consumer string) int {
	for _, c := range s.Consumers {
		if c.Name == consumer {
			return len(c.Pending)
		}
	}
	return -1
}

func subscribeInv(t *testing.T, c pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	if o.SubscriptionName == "" {
		o.SubscriptionName = "sub"
	}
	o.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	cons, err := c.Subscribe(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func receiveN(t *testing.T, cons pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]pulsar.Message, 0, n)
	for len(out) < n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("%s: receive %d of %d: %v", cons.Name(), len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// settle runs one topic's traffic to the end: every message acknowledged.
func settle(t *testing.T, b *Broker, topic, sub string) {
	t.Helper()
	waitSub(t, b, topic, sub, "backlog 0", func(s SubscriptionSnapshot) bool { return s.Backlog == 0 })
}

// TestCheckSettlementHoldsThroughBusyRealClientTraffic drives real clients
// through every kind of settlement state (Shared nacks and consumer churn,
// Key_Shared, Exclusive and Failover rewinds, partial batch-index acks,
// delayed entries, entries expired while pending, freed entries, a reader)
// while another goroutine checks the invariants over and over: a correct
// broker never violates them, and the final state holds each kind.
func TestCheckSettlementHoldsThroughBusyRealClientTraffic(t *testing.T) {
	clock := &OffsetClock{}
	b, client := startInvariantBroker(t, WithBatchIndexAck(true), WithClock(clock))
	b.trimBlock = 8

	// Check after every burst of events, while the clients run.
	stop, wake := make(chan struct{}), make(chan struct{}, 1)
	defer b.OnEvent(func(Event) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	var checks int
	var found []Violation
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-wake:
			}
			checks++
			found = append(found, b.CheckSettlement()...)
		}
	}()

	busySharedTraffic(t, b, client)
	busySingleActiveTraffic(t, b, client)
	heldStates := busyHeldStates(t, b, client, clock)

	close(stop)
	wg.Wait()
	if len(found) > 0 {
		t.Fatalf("a correct broker violated the invariants (%d checks):\n%v", checks, found)
	}
	if v := b.CheckSettlement(); v != nil {
		t.Fatalf("final state: %v", v)
	}
	t.Logf("%d checks while the clients ran", checks)
	heldStates()
}

// busySharedTraffic runs Shared and Key_Shared subscriptions to the end with
// nacks, batches, keys and a consumer that leaves midway.
func busySharedTraffic(t *testing.T, b *Broker, client pulsar.Client) {
	const n = 40
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "busy-shared", BatchingMaxMessages: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var conss []pulsar.Consumer
	for i := range 2 {
		conss = append(conss, subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-shared", Name: fmt.Sprint("s", i),
			Type: pulsar.Shared, NackRedeliveryDelay: 10 * time.Millisecond}))
	}
	for i := range 3 {
		conss = append(conss, subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-shared", SubscriptionName: "ks",
			Name: fmt.Sprint("k", i), Type: pulsar.KeyShared, NackRedeliveryDelay: 10 * time.Millisecond}))
	}
	for i := range n {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint("key-", i%5), Payload: []byte(fmt.Sprint(i))}, nil)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i, cons := range conss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nacked := map[string]bool{}
			for {
				var m pulsar.Message
				select {
				case <-done:
					return
				case cm := <-cons.Chan():
					m = cm.Message
				}
				switch id := fmt.Sprint(m.ID()); {
				case i == 4 && len(nacked) == 3:
					cons.Close() // leaves holding what it has
					return
				case !nacked[id] && m.Key() != "key-0":
					nacked[id] = true
					cons.Nack(m)
				default:
					cons.Ack(m)
				}
			}
		}()
	}
	settle(t, b, "busy-shared", "sub")
	settle(t, b, "busy-shared", "ks")
	close(done)
	wg.Wait()
	for _, cons := range conss {
		cons.Close()
	}
}

// busySingleActiveTraffic runs an Exclusive subscription through
// redeliveries (rewinds) and a cumulative ack, and a Failover one through
// its active consumer leaving.
func busySingleActiveTraffic(t *testing.T, b *Broker, client pulsar.Client) {
	produceUnbatched(t, client, "busy-single", 12)
	ex := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-single", Type: pulsar.Exclusive,
		NackRedeliveryDelay: 10 * time.Millisecond})
	for i, m := range receiveN(t, ex, 12) {
		if i == 3 || i == 7 {
			ex.Nack(m) // the broker rewinds and sends 3 and 7 again
		} else {
			ex.Ack(m)
		}
	}
	again := receiveN(t, ex, 2)
	if err := ex.AckCumulative(again[1]); err != nil {
		t.Fatal(err)
	}
	settle(t, b, "busy-single", "sub")

	fo1 := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-single", SubscriptionName: "fo", Name: "a", Type: pulsar.Failover})
	fo2 := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-single", SubscriptionName: "fo", Name: "b", Type: pulsar.Failover})
	// The Exclusive subscription freed the entries it acknowledged in
	// blocks of 8, so the Failover one starts at the first entry left.
	s := waitSub(t, b, "busy-single", "fo", "an active consumer holding everything", func(s SubscriptionSnapshot) bool {
		return s.Backlog > 0 && int64(pendingOn(s, "a")+pendingOn(s, "b")) == s.Backlog
	})
	active, standby := fo1, fo2
	if pendingOn(s, "b") > 0 {
		active, standby = fo2, fo1
	}
	active.Close()
	for _, m := range receiveN(t, standby, int(s.Backlog)) {
		standby.Ack(m)
	}
	settle(t, b, "busy-single", "fo")
}

// busyHeldStates leaves subscriptions holding entries in each lasting
// state, and returns a function that checks they are still there.
func busyHeldStates(t *testing.T, b *Broker, client pulsar.Client, clock *OffsetClock) func() {
	// A batch of 4 with half its indexes acknowledged, the rest held.
	bp, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "busy-held", BatchingMaxMessages: 4,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	part := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-held", SubscriptionName: "part", Type: pulsar.Shared,
		AckWithResponse: true, EnableBatchIndexAcknowledgment: true})
	for i := range 4 {
		bp.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}, nil)
	}
	if err := bp.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, m := range receiveN(t, part, 4)[:2] {
		if err := part.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// Entries delivered later: held for their delivery time.
	delayed := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-delayed", Type: pulsar.Shared})
	dp, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "busy-delayed", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	for range 3 {
		if _, err := dp.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("later"), DeliverAfter: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	_ = delayed
	// Entries expired by message TTL while a consumer holds them, and a reader.
	produceUnbatched(t, client, "busy-ttl", 3)
	holder := subscribeInv(t, client, pulsar.ConsumerOptions{Topic: "busy-ttl", Type: pulsar.Shared})
	receiveN(t, holder, 3)
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: "busy-ttl", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if err := b.UpdateTopicPolicies("busy-ttl", func(p *Policies) { p.MessageTTLSeconds = new(60) }); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	b.RunExpiryCheck()
	waitSub(t, b, "busy-ttl", "sub", "expiry", func(s SubscriptionSnapshot) bool { return s.Backlog == 0 })

	return func() {
		if s, _ := b.Subscription("busy-held", "part"); len(s.PartlyAcked) == 0 {
			t.Errorf("no partly acknowledged batch left: %+v", s)
		}
		if s, _ := b.Subscription("busy-ttl", "sub"); len(s.Consumers) != 1 || len(s.Consumers[0].Pending) != 3 {
			t.Errorf("the expired entries are no longer pending: %+v", s)
		}
		if ts, _ := b.Topic("busy-shared"); ts.Retained >= ts.Entries {
			t.Errorf("no entry freed: %+v", ts)
		}
		tp := b.topicByName("busy-delayed")
		tp.mu.Lock()
		n := len(tp.subs["sub"].disp.Delayed())
		tp.mu.Unlock()
		if n != 3 {
			t.Errorf("%d entries held for their delivery time, want 3", n)
		}
	}
}

// corruption is one deliberately broken state: setup brings a subscription
// "sub" of topic "t" into a correct state with real clients, corrupt breaks
// it under the topic's lock, and the check must report want.
type corruption struct {
	name    string
	opts    []Option
	setup   func(t *testing.T, b *Broker, c pulsar.Client)
	corrupt func(tp *Topic, s *Subscription)
	// copyOnly corrupts the copy of the state instead, for states the
	// dispatcher's API cannot reach (a bug inside it could).
	copyOnly func(st *topicSettlement)
	want     Rule
	entry    int64
	detail   string
}

// holdFour subscribes one Shared consumer "a" that stops at 4 unacked
// messages, and leaves it holding entries 0-3 of n.
func holdFour(n int) func(t *testing.T, b *Broker, c pulsar.Client) {
	return func(t *testing.T, b *Broker, c pulsar.Client) {
		subscribeInv(t, c, pulsar.ConsumerOptions{Topic: "t", Name: "a", Type: pulsar.Shared})
		produceUnbatched(t, c, "t", n)
		waitSub(t, b, "t", "sub", "a holding 4", func(s SubscriptionSnapshot) bool {
			return pendingOn(s, "a") == 4 && s.Consumers[0].Blocked
		})
	}
}

// holdAll subscribes one consumer "a" of type typ and leaves it holding all
// n entries.
func holdAll(typ pulsar.SubscriptionType, n int) func(t *testing.T, b *Broker, c pulsar.Client) {
	return func(t *testing.T, b *Broker, c pulsar.Client) {
		subscribeInv(t, c, pulsar.ConsumerOptions{Topic: "t", Name: "a", Type: typ})
		produceUnbatched(t, c, "t", n)
		waitSub(t, b, "t", "sub", "a holding all", func(s SubscriptionSnapshot) bool { return pendingOn(s, "a") == n })
	}
}

var limitFour = []Option{WithMaxUnackedMessagesPerConsumer(4)}

var corruptions = []corruption{{
	name: "pending on two consumers", opts: limitFour, setup: func(t *testing.T, b *Broker, c pulsar.Client) {
		holdFour(4)(t, b, c)
		subscribeInv(t, c, pulsar.ConsumerOptions{Topic: "t", Name: "b", Type: pulsar.Shared})
		waitSub(t, b, "t", "sub", "b with permits", func(s SubscriptionSnapshot) bool {
			return len(s.Consumers) == 2 && s.Consumers[1].Permits > 0
		})
	},
	// A rewind behind the dispatcher's back: the blocked "a" keeps 0-3 and
	// the dispatcher sends them to "b" as well.
	corrupt: func(_ *Topic, s *Subscription) { s.cur.SetReadPosition(0); s.dispatchLocked() },
	want:    RuleOneState, entry: 0, detail: "in 2 states at once: pending on a (consumer 1), pending on b (consumer 2)",
}, {
	name: "pending and in the replay queue", opts: limitFour, setup: holdFour(4),
	copyOnly: func(st *topicSettlement) { st.subs[0].state.Replay = []int64{2} },
	want:     RuleOneState, entry: 2, detail: "pending on a (consumer 1), in the replay queue",
}, {
	name: "pending and not yet dispatched", opts: limitFour, setup: holdFour(6),
	corrupt: func(_ *Topic, s *Subscription) { s.cur.SetReadPosition(2) },
	want:    RuleOneState, entry: 3, detail: "not yet dispatched (at or after the read position 2), and pending on a",
}, {
	name: "in no state", opts: limitFour, setup: holdFour(10),
	// The read position jumps over entries nobody received.
	corrupt: func(_ *Topic, s *Subscription) { s.cur.SetReadPosition(8) },
	want:    RuleOneState, entry: 6, detail: "in no state",
}, {
	name: "acknowledged and still pending", setup: holdAll(pulsar.Shared, 3),
	// An ack applied to the cursor without the dispatcher.
	corrupt: func(_ *Topic, s *Subscription) { s.cur.Ack(1) },
	want:    RuleOneState, entry: 1, detail: "acknowledged, and still pending on a",
}, {
	name: "replay queue on Exclusive", setup: holdAll(pulsar.Exclusive, 3),
	copyOnly: func(st *topicSettlement) { st.subs[0].state.Replay = []int64{1} },
	want:     RuleOneState, entry: -1, detail: "Exclusive subscription has a replay queue",
}, {
	name: "pending on a Failover consumer that is not active", setup: holdAll(pulsar.Failover, 3),
	copyOnly: func(st *topicSettlement) { st.subs[0].state.Consumers[0].Active = false },
	want:     RuleOneState, entry: 0, detail: "which is not the active consumer",
}, {
	name: "freed while not acknowledged", setup: holdAll(pulsar.Shared, 6),
	corrupt: func(tp *Topic, _ *Subscription) { tp.log.FreeThrough(2) },
	want:    RuleOneState, entry: 0, detail: "entries 0 to 2 were freed",
}, {
	name: "acknowledged before it was published", setup: holdAll(pulsar.Shared, 3),
	corrupt: func(_ *Topic, s *Subscription) { s.cur.Ack(7) },
	want:    RuleOneState, entry: 7, detail: "individually acknowledged, outside",
}, {
	name: "batch index beyond the batch", opts: []Option{WithBatchIndexAck(true)},
	setup: func(t *testing.T, b *Broker, c pulsar.Client) {
		subscribeInv(t, c, pulsar.ConsumerOptions{Topic: "t", Name: "a", Type: pulsar.Shared})
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", BatchingMaxMessages: 4, BatchingMaxPublishDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := range 4 {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}, nil)
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		waitSub(t, b, "t", "sub", "a holding the batch", func(s SubscriptionSnapshot) bool { return pendingOn(s, "a") == 1 })
	},
	// A partial ack read with the wrong batch size: index 70 of a batch of 4.
	corrupt: func(_ *Topic, s *Subscription) { s.cur.AckBatchIndexes(0, 100, []int64{1 << 1, 1 << 6}) },
	want:    RuleOneState, entry: 0, detail: "batch of 4 messages has index 70 left unacknowledged",
}, {
	name: "count on Exclusive", setup: holdAll(pulsar.Exclusive, 3),
	corrupt: func(_ *Topic, s *Subscription) { s.cur.IncrementRedelivery(2) },
	want:    RuleCounts, entry: 2, detail: "redelivery count 1, but Exclusive subscriptions keep none",
}, {
	name: "count kept after the last consumer left", setup: func(t *testing.T, b *Broker, c pulsar.Client) {
		cons := subscribeInv(t, c, pulsar.ConsumerOptions{Topic: "t", Name: "a", Type: pulsar.Shared})
		produceUnbatched(t, c, "t", 3)
		cons.Close()
		waitSub(t, b, "t", "sub", "no consumer", func(s SubscriptionSnapshot) bool { return len(s.Consumers) == 0 })
	},
	corrupt: func(_ *Topic, s *Subscription) { s.cur.IncrementRedelivery(1) },
	want:    RuleCounts, entry: 1, detail: "kept after the last consumer left",
}, {
	name: "consumer's unacked messages", setup: holdAll(pulsar.Shared, 3),
	// The dispatcher sends what "a" holds to "a" again: each entry is
	// pending once, but counted twice.
	corrupt: func(_ *Topic, s *Subscription) { s.cur.SetReadPosition(0); s.dispatchLocked() },
	want:    RuleBacklog, entry: -1, detail: "consumer a counts 6 unacked messages, but holds 3",
}, {
	name: "backlog", setup: holdAll(pulsar.Shared, 3),
	copyOnly: func(st *topicSettlement) { st.subs[0].backlog = 2 },
	want:     RuleBacklog, entry: -1, detail: "backlog 2, but 3 entries are not acknowledged",
}}

// TestCheckSettlementCatchesEachBrokenInvariant brings a subscription into a
// correct state with real clients, checks that it passes, breaks it as a bug
// would, and checks that the violation is reported with its rule, entry and
// what is wrong.
func TestCheckSettlementCatchesEachBrokenInvariant(t *testing.T) {
	for _, tc := range corruptions {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			b, client := startInvariantBroker(t, tc.opts...)
			tc.setup(t, b, client)
			if v := b.CheckSettlement(); v != nil {
				t.Fatalf("the correct state fails the check: %v", v)
			}
			tp := b.topicByName("t")
			tp.mu.Lock()
			if tc.corrupt != nil {
				tc.corrupt(tp, tp.subs["sub"])
			}
			st := tp.settlementLocked()
			tp.mu.Unlock()
			if tc.copyOnly != nil {
				tc.copyOnly(&st)
			}
			got := st.check()
			for _, v := range got {
				if v.Rule == tc.want && (tc.entry < 0 || v.Entry == tc.entry) && strings.Contains(v.Detail, tc.detail) {
					t.Logf("caught: %v", v)
					return
				}
			}
			t.Fatalf("want a %s violation at entry %d saying %q, got %v", tc.want, tc.entry, tc.detail, got)
		})
	}
}

// TestCheckSettlementReportsThroughTheBrokerAPI shows that CheckSettlement,
// the exported walk, reports a broken state, and only while it is broken.
func TestCheckSettlementReportsThroughTheBrokerAPI(t *testing.T) {
	b, client := startInvariantBroker(t)
	holdAll(pulsar.Exclusive, 3)(t, b, client)
	tp := b.topicByName("t")
	tp.mu.Lock()
	tp.subs["sub"].cur.IncrementRedelivery(2)
	tp.mu.Unlock()
	got := b.CheckSettlement()
	want := "persistent://public/default/t subscription sub entry 2: counts: redelivery count 1, but Exclusive subscriptions keep none"
	if len(got) != 1 || got[0].String() != want {
		t.Fatalf("got %v, want [%s]", got, want)
	}
	tp.mu.Lock()
	tp.subs["sub"].cur.ForgetRedelivery(2)
	tp.mu.Unlock()
	if got := b.CheckSettlement(); got != nil {
		t.Fatalf("after the repair: %v", got)
	}
}
