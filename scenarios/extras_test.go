package scenarios_test

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// A poison message that crashes its consumer again and again never reaches
// the dead-letter topic: disconnects do not count as redeliveries.
func TestPoisonMessageThatCrashesConsumersNeverReachesTheDeadLetterTopic(t *testing.T) {
	tg := scenarios.NewTarget(t)
	ctx := scenarios.Ctx(t)
	topic, dlq := tg.Topic("poison"), tg.Topic("poison-dlq")
	co := sharedConsumer(topic)
	co.DLQ = &pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: dlq}
	const crashes = 4
	d := tg.Drive(testkit.DriverOptions{Consumer: co, Script: func(_ pulsar.Message, attempt int) testkit.Outcome {
		if attempt < crashes {
			return testkit.Crash
		}
		return testkit.Ack
	}})
	tg.Produce(topic, 1, nil)
	d.Wait(ctx, "the ack after the crashes", acked(1))
	ds := d.Deliveries()
	if len(ds) != crashes+1 {
		t.Fatalf("%d deliveries, want %d", len(ds), crashes+1)
	}
	for _, del := range ds {
		if del.RedeliveryCount != 0 {
			t.Fatalf("after %d crashes the count is %d, want 0", del.Attempt, del.RedeliveryCount)
		}
	}
	if dead := tg.ReadAll(dlq, 300*time.Millisecond); len(dead) != 0 {
		t.Fatalf("dead-letter topic holds %d messages", len(dead))
	}
	if b := tg.Inspect(); b != nil {
		closes := 0
		for _, e := range b.Events() {
			if e.Kind == broker.EventConsumerClosed && e.Reason == "disconnect" {
				closes++
			}
		}
		if closes < crashes {
			t.Fatalf("the broker saw %d disconnects, want at least %d", closes, crashes)
		}
	}
}

// Message TTL: the mark-delete position moves past expired entries at the
// broker's periodic check (every 5 minutes by its clock) once the broker
// clock has passed their publish time plus the TTL. A message leaves a
// subscription by an ack, by the dead-letter policy, or by expiry.
func TestMessageTTLExpiresWhatNobodyAcknowledged(t *testing.T) {
	t.Run("namespace TTL, no consumer, at the periodic check", func(t *testing.T) {
		tg := scenarios.NewTarget(t)
		b := tg.RequireSim("advances the broker clock")
		client := tg.Client()
		topic := tg.Topic("ttl-idle")
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
		if err != nil {
			t.Fatal(err)
		}
		c.Close() // a durable subscription with no consumer
		ids := tg.Produce(topic, 3, nil)
		b.SetNamespacePolicies("public/default", broker.Policies{MessageTTLSeconds: new(60)})
		b.Advance(30 * time.Second)
		if got := mustSub(t, b, topic, "sub").Backlog; got != 3 {
			t.Fatalf("backlog %d before the TTL passed, want 3", got)
		}
		b.Advance(31 * time.Second) // past the TTL, before the first check
		if got := mustSub(t, b, topic, "sub").Backlog; got != 3 {
			t.Fatalf("backlog %d before the periodic check, want 3", got)
		}
		b.Advance(4 * time.Minute) // the check at 5 minutes
		s := mustSub(t, b, topic, "sub")
		if s.Backlog != 0 || s.MarkDelete.Entry != ids[2].EntryID() {
			t.Fatalf("after the check: backlog %d, mark-delete %d, want 0 and %d", s.Backlog, s.MarkDelete.Entry, ids[2].EntryID())
		}
	})

	t.Run("topic TTL, active consumer: no grace", func(t *testing.T) {
		tg := scenarios.NewTarget(t)
		b := tg.RequireSim("advances the broker clock")
		ctx := scenarios.Ctx(t)
		topic := tg.Topic("ttl-active")
		b.CreateTopic(topic)
		b.SetTopicPolicies(topic, broker.Policies{MessageTTLSeconds: new(60)})
		d := tg.Drive(testkit.DriverOptions{Consumer: sharedConsumer(topic), Script: func(pulsar.Message, int) testkit.Outcome {
			return testkit.NoAnswer
		}})
		tg.Produce(topic, 2, nil)
		d.Wait(ctx, "both deliveries", func(ds []testkit.Delivery) bool { return len(ds) == 2 })
		b.Advance(59 * time.Second)
		b.RunExpiryCheck()
		if got := mustSub(t, b, topic, "sub").Backlog; got != 2 {
			t.Fatalf("backlog %d before the TTL passed, want 2", got)
		}
		// Pulsar 4.0.8's periodic check expires a connected subscription's
		// messages at the TTL too: no 1.5 x TTL grace.
		b.Advance(2 * time.Second)
		b.RunExpiryCheck()
		b.WaitBacklog(ctx, topic, "sub", 0)
		expired := false
		for _, e := range b.Events() {
			expired = expired || (e.Kind == broker.EventExpired && e.Topic == topic)
		}
		if !expired {
			t.Fatal("no expiry event in the trace")
		}
	})
}

// mustSub returns a subscription's snapshot, failing the test when it does
// not exist.
func mustSub(t testing.TB, b *testkit.Broker, topic, name string) testkit.SubscriptionSnapshot {
	t.Helper()
	s, ok := b.Subscription(topic, name)
	if !ok {
		t.Fatalf("no subscription %s on %s", name, topic)
	}
	return s
}
