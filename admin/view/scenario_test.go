package view_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The scenario the browser tests look at: orders on a Shared subscription
// served by two consumers whose handler nacks a poison message until the
// client's dead-letter policy moves it aside, nacks another once, crashes on
// a third and keeps the last one without an answer; and an Exclusive
// subscription that acks everything.
const (
	ordersTopic = "orders"
	ordersFull  = "persistent://public/default/orders"
	deadTopic   = "orders-dlq"
	workers     = "workers"
	audit       = "audit"
)

// payloads of the scenario, in publish order.
var payloads = []string{"order-1", "retry-once", "poison", "crash-once", "order-2", "held"}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runOrders runs the scenario to its end on a new broker and returns the
// broker and the ids of the published messages, by payload.
func runOrders(t *testing.T) (*testkit.Broker, map[string]broker.MessageID) {
	t.Helper()
	b := testkit.Start(t)
	ctx := ctxFor(t)
	d := b.Drive(testkit.DriverOptions{
		Consumers: 2,
		Consumer: pulsar.ConsumerOptions{Topic: ordersTopic, SubscriptionName: workers, Type: pulsar.Shared,
			Name: "worker", NackRedeliveryDelay: 20 * time.Millisecond,
			DLQ: &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: deadTopic}},
		Script: func(m pulsar.Message, attempt int) testkit.Outcome {
			switch string(m.Payload()) {
			case "poison":
				return testkit.Nack
			case "held":
				return testkit.NoAnswer
			case "retry-once":
				if attempt == 0 {
					return testkit.Nack
				}
			case "crash-once":
				if attempt == 0 {
					return testkit.Crash
				}
			}
			return testkit.Ack
		},
	})
	auditor, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: ordersTopic, SubscriptionName: audit,
		Type: pulsar.Exclusive, Name: "auditor"})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range auditor.Chan() {
			auditor.Ack(m)
		}
	}()
	ids := map[string]broker.MessageID{}
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: ordersTopic, Name: "shop", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	// One message at a time, each settled before the next is sent, so that
	// a crash only sends back the message it is about.
	for _, pl := range payloads {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)})
		if err != nil {
			t.Fatal(err)
		}
		ids[pl] = broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID(), BatchIndex: -1}
		switch pl {
		case "poison":
			b.WaitMessages(ctx, deadTopic, 1)
		case "held":
			b.WaitFor(ctx, "the last message pending at a consumer", func() bool {
				s, _ := b.Subscription(ordersTopic, workers)
				return s.Backlog == 1 && len(s.Consumers) == 2 && len(s.Consumers[0].Pending)+len(s.Consumers[1].Pending) == 1
			})
			continue
		}
		b.WaitBacklog(ctx, ordersTopic, workers, 0)
	}
	b.WaitBacklog(ctx, ordersTopic, audit, 0)
	d.Wait(ctx, "every message but the poison and the held one acked", func(ds []testkit.Delivery) bool {
		acked := 0
		for _, dl := range ds {
			if dl.Acked {
				acked++
			}
		}
		return acked == len(payloads)-2
	})
	return b, ids
}

// deliveriesOf reads from the broker's own events, independently of the
// view, each consumer's deliveries of a message on a subscription: the
// redelivery counts in order.
func deliveriesOf(events []broker.Event, sub string, id broker.MessageID) map[string][]int32 {
	out := map[string][]int32{}
	for _, e := range events {
		if e.Kind == broker.EventDelivered && e.Topic == ordersFull && e.Subscription == sub &&
			e.ID.Ledger == id.Ledger && e.ID.Entry == id.Entry {
			out[e.Consumer] = append(out[e.Consumer], e.RedeliveryCount)
		}
	}
	return out
}

// countKind counts the events of a kind by a consumer set on a subscription
// that name the message (or name none, for a request of all).
func countKind(events []broker.Event, kind broker.EventKind, sub string, id broker.MessageID) int {
	n := 0
	for _, e := range events {
		if e.Kind != kind || e.Topic != ordersFull || e.Subscription != sub {
			continue
		}
		for _, x := range e.IDs {
			if x.Ledger == id.Ledger && x.Entry == id.Entry {
				n++
			}
		}
	}
	return n
}

func idText(id broker.MessageID) string { return fmt.Sprintf("%d:%d", id.Ledger, id.Entry) }
