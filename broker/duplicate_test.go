package broker

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestDuplicateFaultSendsANackedMessageToTwoConsumersWithOneCount(t *testing.T) {
	b, client := startInvariantBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "persistent://public/default/dup"
	subscribe := func(name string) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			Name: name, NackRedeliveryDelay: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	first := subscribe("first")
	if _, err := b.AddFault(Fault{Command: "REDELIVER_UNACKNOWLEDGED_MESSAGES", Topic: topic, Duplicate: true, Count: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	m, err := first.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := subscribe("second")
	waitSub(t, b, topic, "s", "both consumers' permits", func(s SubscriptionSnapshot) bool {
		return len(s.Consumers) == 2 && s.Consumers[0].Permits > 0 && s.Consumers[1].Permits > 0
	})
	first.Nack(m)
	got := map[string]uint32{}
	for name, c := range map[string]pulsar.Consumer{"first": first, "second": second} {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = m.RedeliveryCount()
		// Both hold it now, which the settlement rules allow for an entry
		// the broker was asked to duplicate.
		if v := b.CheckSettlement(); len(v) != 0 {
			t.Fatalf("settlement violations: %v", v)
		}
		if err := c.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	if got["first"] != 1 || got["second"] != 1 {
		t.Fatalf("counts %v, want the copy at both consumers with count 1", got)
	}
	waitSub(t, b, topic, "s", "the backlog to empty", func(s SubscriptionSnapshot) bool { return s.Backlog == 0 })
}

func TestDuplicateIsOnlyForRedeliver(t *testing.T) {
	b := New()
	if _, err := b.AddFault(Fault{Command: "ACK", Duplicate: true}); err == nil {
		t.Fatal("a Duplicate fault on ACK was accepted")
	}
}
