package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// startTrimBroker starts a broker that frees acknowledged entries in blocks
// of block entries, and a client for it.
func startTrimBroker(t *testing.T, block int64) (*Broker, pulsar.Client) {
	t.Helper()
	b := New()
	b.trimBlock = block
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

func produceUnbatched(t *testing.T, c pulsar.Client, topic string, n int) {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < n; i++ {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeAndAck receives n messages on sub and acks each one, waiting for
// the broker to confirm every ack.
func consumeAndAck(t *testing.T, c pulsar.Client, topic, sub string, n int) {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
	}
}

func (b *Broker) mustTopic(t *testing.T, name string) TopicSnapshot {
	t.Helper()
	ts, ok := b.Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return ts
}

func TestEntriesEverySubscriptionAckedAreFreedInBlocks(t *testing.T) {
	b, c := startTrimBroker(t, 10)
	produceUnbatched(t, c, "trim", 35)
	// A subscription made before acknowledging holds the log back.
	slow, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "trim", SubscriptionName: "slow",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	consumeAndAck(t, c, "trim", "fast", 35)
	if ts := b.mustTopic(t, "trim"); ts.Retained != 35 {
		t.Fatalf("with one subscription behind, %d of 35 entries retained, want all", ts.Retained)
	}
	slow.Close()
	consumeAndAck(t, c, "trim", "slow", 35)
	ts := b.mustTopic(t, "trim")
	if ts.Entries != 35 || ts.Retained != 5 {
		t.Fatalf("after both subscriptions acked 35 entries: Entries %d, Retained %d; want 35 and 5 (three blocks of 10 freed)",
			ts.Entries, ts.Retained)
	}
	ms, err := b.Messages("trim")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 5 || ms[0].ID.Entry != 30 || string(ms[0].Payload) != "30" || ms[4].ID.Entry != 34 {
		t.Fatalf("messages after the trim: %+v", ms)
	}
	sub, _ := b.Subscription("trim", "slow")
	if sub.MarkDelete.Entry != 34 || sub.Backlog != 0 {
		t.Fatalf("subscription after the trim: %+v", sub)
	}
	// Production goes on after a trim, with the ids following on.
	produceUnbatched(t, c, "trim", 1)
	if ms, _ := b.Messages("trim"); len(ms) != 6 || ms[5].ID.Entry != 35 {
		t.Fatalf("messages after one more send: %+v", ms)
	}
}

func TestTopicWithoutSubscriptionKeepsEveryEntry(t *testing.T) {
	b, c := startTrimBroker(t, 10)
	produceUnbatched(t, c, "keep", 25)
	if ts := b.mustTopic(t, "keep"); ts.Retained != 25 {
		t.Fatalf("retained %d of 25 entries on a topic without subscriptions", ts.Retained)
	}
}

func TestAFewAckedEntriesStayAtTheDefaultBlock(t *testing.T) {
	b, c := startTrimBroker(t, 0)
	produceUnbatched(t, c, "few", 20)
	consumeAndAck(t, c, "few", "s", 20)
	if ts := b.mustTopic(t, "few"); ts.Retained != 20 {
		t.Fatalf("retained %d of 20 acknowledged entries, want all: fewer than a block of %d", ts.Retained, DefaultTrimBlock)
	}
}
