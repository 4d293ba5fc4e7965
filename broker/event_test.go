package broker_test

import (
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// A hook runs after the topic lock is released, so it may call back into the
// broker: here it reads a snapshot on every delivery and closes the consumer
// from the broker side on the first one. The events of that close reach the
// hooks after the hook returns, in order.
func TestHookThatCallsBackIntoTheBrokerDoesNotDeadlock(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	var mu sync.Mutex
	var seqs []uint64
	var kinds []broker.EventKind
	closedOnce := false
	snapshots := 0
	b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventDelivered {
			if _, ok := b.Subscription(e.Topic, e.Subscription); ok {
				mu.Lock()
				snapshots++
				mu.Unlock()
			}
		}
		mu.Lock()
		seqs = append(seqs, e.Seq)
		kinds = append(kinds, e.Kind)
		first := e.Kind == broker.EventDelivered && !closedOnce
		if first {
			closedOnce = true
		}
		mu.Unlock()
		if first && !b.CloseConsumer(e.Topic, e.Subscription, e.Consumer) {
			t.Error("the hook did not find the consumer it was told about")
		}
	})
	client := b.Client()
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "hooked", SubscriptionName: "s", Name: "c",
		Type: pulsar.Shared})
	produceUnbatched(t, client, "hooked", 5, numbered)
	got := map[string]bool{}
	for len(got) < 5 {
		m := receive(t, ctx, cons)
		got[string(m.Payload())] = true
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	b.WaitBacklog(ctx, "hooked", "s", 0)

	mu.Lock()
	defer mu.Unlock()
	if snapshots == 0 {
		t.Fatal("the hook never read a snapshot")
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("hook saw seq %d after %d: events out of order or missing", seqs[i], seqs[i-1])
		}
	}
	// The broker-side close the hook asked for follows the first delivery.
	firstDelivery, closed := -1, -1
	for i, k := range kinds {
		if k == broker.EventDelivered && firstDelivery < 0 {
			firstDelivery = i
		}
		if k == broker.EventConsumerClosed && closed < 0 {
			closed = i
		}
	}
	if firstDelivery < 0 || closed < firstDelivery {
		t.Fatalf("events %v: want a consumer close after the first delivery", kinds)
	}
}
