package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Behaviours fixed while running pulsar-client-go's own suite.

func TestSharedDelayedMessageArrivesAfterItsDelay(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	ctx := testCtx(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "delayed", SubscriptionName: "s", Type: pulsar.Shared})
	// deliver_at_time is in whole milliseconds (the client's clock, truncated,
	// plus the delay), so the broker may deliver up to 1 ms before
	// time.Now() + 1.5 s here: measure from the millisecond.
	start := time.Now().Truncate(time.Millisecond)
	produceUnbatched(t, c, "delayed", 1, func(int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte("later"), DeliverAfter: 1500 * time.Millisecond}
	})
	produceUnbatched(t, c, "delayed", 1, numbered)
	if m := receive(t, ctx, cons); string(m.Payload()) != "0" {
		t.Fatalf("first message %q, want the undelayed one", m.Payload())
	}
	m := receive(t, ctx, cons)
	// Pulsar's tracker releases a message due within its tick (1 s) of
	// now, so it may come up to a second early.
	if string(m.Payload()) != "later" || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("got %q after %s", m.Payload(), time.Since(start))
	}
}

func TestKeySharedAutoSplitRangesSpreadKeys(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithKeySharedConsistentHashing(false)))
	c := b.Client()
	ctx := testCtx(t)
	opts := pulsar.ConsumerOptions{Topic: "ks", SubscriptionName: "s", Type: pulsar.KeyShared}
	c1 := subscribe(t, c, opts)
	c2 := subscribe(t, c, opts)
	produceUnbatched(t, c, "ks", 30, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: fmt.Sprintf("key-%d", i%10), Payload: []byte("x")}
	})
	got := map[pulsar.Consumer]int{}
	for i := 0; i < 30; i++ {
		select {
		case m := <-c1.Chan():
			got[c1]++
			c1.Ack(m)
		case m := <-c2.Chan():
			got[c2]++
			c2.Ack(m)
		case <-ctx.Done():
			t.Fatalf("received %v of 30", got)
		}
	}
	if got[c1] == 0 || got[c2] == 0 {
		t.Fatalf("one consumer got every key: %d and %d", got[c1], got[c2])
	}
}

func TestCumulativeAckUpToABatchIndexKeepsTheRest(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithBatchIndexAck(true)))
	c := b.Client()
	ctx := testCtx(t)
	opts := pulsar.ConsumerOptions{Topic: "cum", SubscriptionName: "s", EnableBatchIndexAcknowledgment: true,
		AckWithResponse: true}
	cons, err := c.Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "cum", BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 4; i++ {
		p.SendAsync(ctx, numbered(i), func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	}
	if err := p.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	var third pulsar.MessageID
	for i := 0; i < 4; i++ {
		m := receive(t, ctx, cons)
		if i == 1 {
			third = m.ID()
		}
	}
	if err := cons.AckIDCumulative(third); err != nil {
		t.Fatal(err)
	}
	// The ack was answered, so the broker has applied it: the batch stays
	// unacknowledged with its indexes 2 and 3.
	snap, ok := b.Subscription("cum", "s")
	if !ok {
		t.Fatal("no subscription")
	}
	if snap.MarkDelete.Entry != -1 || !slices.Equal(snap.PartlyAcked[0], []int32{2, 3}) {
		t.Fatalf("mark-delete %v, partly acked %v; want -1 and entry 0 with [2 3]", snap.MarkDelete, snap.PartlyAcked)
	}
}

func TestFailoverConsumerHearsItIsActive(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	l := &activeListener{active: make(chan bool, 4)}
	subscribe(t, c, pulsar.ConsumerOptions{Topic: "fo", SubscriptionName: "s", Type: pulsar.Failover,
		EventListener: l})
	select {
	case on := <-l.active:
		if !on {
			t.Fatal("told it is inactive")
		}
	case <-testCtx(t).Done():
		t.Fatal("never told it is active")
	}
}

type activeListener struct{ active chan bool }

func (l *activeListener) BecameActive(pulsar.Consumer, string, int32)   { l.active <- true }
func (l *activeListener) BecameInactive(pulsar.Consumer, string, int32) { l.active <- false }
