package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// A namespace policy overrides the broker's limit and a topic policy the
// namespace's, through the same resolution the broker's own limits take;
// a topic's 0 lifts the limit.
func TestProducerLimitResolvesTopicOverNamespaceOverBroker(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxProducersPerTopic: 1})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	const topic = "persistent://public/default/resolved-limit"
	open := func(n int) (opened int, err error) {
		var ps []pulsar.Producer
		defer func() {
			for _, p := range ps {
				p.Close()
			}
		}()
		for range n {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err != nil {
				return len(ps), err
			}
			ps = append(ps, p)
		}
		return len(ps), nil
	}
	if got, err := open(2); got != 1 {
		t.Fatalf("broker limit 1: opened %d (%v)", got, err)
	}
	b.SetNamespacePolicies("public/default", broker.Policies{MaxProducersPerTopic: new(3)})
	if got, err := open(4); got != 3 {
		t.Fatalf("namespace limit 3: opened %d (%v)", got, err)
	} else {
		wantRefusal(t, "fourth producer", err, "ProducerBusy", "reached max producers limit")
	}
	b.SetTopicPolicies(topic, broker.Policies{MaxProducersPerTopic: new(0)})
	if got, err := open(5); got != 5 {
		t.Fatalf("topic limit 0 (none): opened %d (%v)", got, err)
	}
}

// A topic's maxUnackedMessagesOnConsumer limits a Shared consumer that the
// broker's default would let have more; raising it lets the consumer go on
// once it acknowledges.
func TestTopicUnackedLimitHoldsBackAConsumer(t *testing.T) {
	b, client := startBroker(t)
	const topic = "persistent://public/default/unacked-policy"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.MaxUnackedMessagesPerConsumer = new(3) }); err != nil {
		t.Fatal(err)
	}
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	produceUnbatched(t, client, topic, 10, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte{byte(i)}}
	})
	ctx := testCtx(t)
	var got []pulsar.Message
	for range 3 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if m, err := cons.Receive(short); err == nil {
		t.Fatalf("a fourth message %v while 3 are unacked at a limit of 3", m.ID())
	}
	snap, _ := b.Subscription(topic, "s")
	if len(snap.Consumers) != 1 || !snap.Consumers[0].Blocked {
		t.Fatalf("the consumer is not blocked: %+v", snap.Consumers)
	}
	for _, m := range got {
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	for range 7 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("after the acks: %v", err)
		}
		cons.Ack(m)
	}
}

// The subscription-wide limit stops a Shared subscription with several
// consumers from reading more than its limit until they acknowledge; then
// the rest comes.
func TestSubscriptionUnackedLimitHoldsBackTheSubscription(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	const topic = "persistent://public/default/sub-unacked"
	b.SetNamespacePolicies("public/default", broker.Policies{MaxUnackedMessagesPerSubscription: new(4)})
	var cons []pulsar.Consumer
	for range 2 {
		cons = append(cons, subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			Type: pulsar.Shared, ReceiverQueueSize: 1}))
	}
	produceUnbatched(t, client, topic, 12, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte{byte(i)}}
	})
	ctx := testCtx(t)
	b.WaitFor(ctx, "the subscription blocked", func() bool { return b.Sub(topic, "s").Blocked })
	s := b.Sub(topic, "s")
	held := 0
	for _, c := range s.Consumers {
		held += c.Unacked
	}
	if held < 4 {
		t.Fatalf("blocked with %d unacked, limit 4", held)
	}
	received := 0
	for received < 12 {
		for _, c := range cons {
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			m, err := c.Receive(short)
			cancel()
			if err == nil {
				received++
				c.Ack(m)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("received %d of 12", received)
		}
	}
}

// A raised subscription-wide limit does not lift the block by itself: as in
// Pulsar, the subscription decides again when its unacked count next
// changes, here at an ack. Before that, the whole first read (100 entries)
// has gone out over the limit of 10.
func TestRaisedSubscriptionUnackedLimitActsAtTheNextAck(t *testing.T) {
	b, client := startBroker(t)
	const topic = "persistent://public/default/sub-unacked-raised"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	setLimit := func(n int) {
		t.Helper()
		if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.MaxUnackedMessagesPerSubscription = new(n) }); err != nil {
			t.Fatal(err)
		}
	}
	setLimit(10)
	produceUnbatched(t, client, topic, 150, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte{byte(i)}}
	})
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 1000})
	ctx := testCtx(t)
	var first pulsar.Message
	for i := range 100 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("message %d of the first read: %v", i, err)
		}
		if i == 0 {
			first = m
		}
	}
	setLimit(1000)
	s, _ := b.Subscription(topic, "s")
	unacked := 0
	for _, c := range s.Consumers {
		unacked += c.Unacked
	}
	if !s.Blocked || unacked != 100 {
		t.Fatalf("after the raise: blocked %v with %d unacked; want still blocked with 100", s.Blocked, unacked)
	}
	if err := cons.Ack(first); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := cons.Receive(ctx); err != nil {
			t.Fatalf("message %d after the ack: %v", i, err)
		}
	}
}
