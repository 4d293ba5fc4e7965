package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// manualBroker starts a broker on a clock that only moves when the test
// says so.
func manualBroker(t *testing.T, opts ...broker.Option) (*testkit.Broker, *broker.ManualClock) {
	t.Helper()
	clock := broker.NewManualClock(time.Now())
	return testkit.Start(t, testkit.WithBroker(append([]broker.Option{broker.WithClock(clock)}, opts...)...)), clock
}

// idleSubscription creates a durable subscription with no consumer and
// publishes n messages to it.
func idleSubscription(t *testing.T, b *testkit.Broker, topic string, n int) {
	t.Helper()
	c := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	c.Close()
	produceUnbatched(t, b.Client(), topic, n, numbered)
}

func TestExpiryCheckRunsEveryFiveMinutesOfBrokerTime(t *testing.T) {
	b, clock := manualBroker(t)
	idleSubscription(t, b, "ttl-cadence", 2)
	b.SetTopicPolicies("ttl-cadence", broker.Policies{MessageTTLSeconds: new(60)})
	clock.Advance(4 * time.Minute)
	b.RunTimers()
	if got := b.Sub("ttl-cadence", "s").Backlog; got != 2 {
		t.Fatalf("backlog %d four minutes in, before the first check; want 2", got)
	}
	clock.Advance(time.Minute)
	b.RunTimers()
	if got := b.Sub("ttl-cadence", "s").Backlog; got != 0 {
		t.Fatalf("backlog %d after the check at five minutes; want 0", got)
	}
}

func TestRunExpiryCheckExpiresAtOnceWithoutGraceForAConnectedSubscription(t *testing.T) {
	b, clock := manualBroker(t)
	c := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: "ttl-now", SubscriptionName: "s", Type: pulsar.Shared})
	defer c.Close()
	produceUnbatched(t, b.Client(), "ttl-now", 1, numbered)
	m := receive(t, testCtx(t), c) // held, not acknowledged
	b.SetTopicPolicies("ttl-now", broker.Policies{MessageTTLSeconds: new(1)})
	clock.Advance(m.PublishTime().Add(time.Second).Sub(clock.Now()))
	b.RunExpiryCheck()
	if got := b.Sub("ttl-now", "s").Backlog; got != 1 {
		t.Fatalf("backlog %d exactly a TTL after publishing; want 1", got)
	}
	clock.Advance(time.Millisecond)
	b.RunExpiryCheck()
	if got := b.Sub("ttl-now", "s").Backlog; got != 0 {
		t.Fatalf("backlog %d a TTL and 1 ms after publishing, with a consumer holding the message; want 0", got)
	}
}

func TestFailoverConsumerIsServedAfterTheSwitchDelay(t *testing.T) {
	b, clock := manualBroker(t)
	ctx := testCtx(t)
	produceUnbatched(t, b.Client(), "fo-delay", 1, numbered)
	c := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: "fo-delay", SubscriptionName: "s",
		Type: pulsar.Failover, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	defer c.Close()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(short); err == nil {
		t.Fatalf("got %q before activeConsumerFailoverDelayTimeMillis passed", m.Payload())
	}
	clock.Advance(time.Second)
	b.RunTimers()
	if m := receive(t, ctx, c); string(m.Payload()) != "0" {
		t.Fatalf("got %q", m.Payload())
	}
}

func TestFailoverSwitchDelayIsWhatTheBrokerIsConfiguredWith(t *testing.T) {
	b, clock := manualBroker(t, broker.WithFailoverDelay(10*time.Millisecond))
	ctx := testCtx(t)
	produceUnbatched(t, b.Client(), "fo-short", 1, numbered)
	c := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: "fo-short", SubscriptionName: "s",
		Type: pulsar.Failover, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(short); err == nil {
		t.Fatalf("got %q before the 10 ms switch delay passed on the broker's clock", m.Payload())
	}
	clock.Advance(10 * time.Millisecond)
	b.RunTimers()
	if m := receive(t, ctx, c); string(m.Payload()) != "0" {
		t.Fatalf("got %q", m.Payload())
	}

	none, _ := manualBroker(t, broker.WithFailoverDelay(0))
	produceUnbatched(t, none.Client(), "fo-none", 1, numbered)
	c = subscribe(t, none.Client(), pulsar.ConsumerOptions{Topic: "fo-none", SubscriptionName: "s",
		Type: pulsar.Failover, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if m := receive(t, ctx, c); string(m.Payload()) != "0" { // the clock never moves
		t.Fatalf("got %q", m.Payload())
	}
}

func TestSeekOnFailoverClosesOnlyTheActiveConsumer(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	client := b.Client()
	produceUnbatched(t, client, "fo-seek", 2, numbered)
	cons := map[string]pulsar.Consumer{}
	for _, name := range []string{"a", "b"} {
		cons[name] = subscribe(t, client, pulsar.ConsumerOptions{Topic: "fo-seek", SubscriptionName: "s",
			Type: pulsar.Failover, Name: name, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		defer cons[name].Close()
	}
	var active, standby string
	for _, c := range b.Sub("fo-seek", "s").Consumers {
		if c.Active {
			active = c.Name
		} else {
			standby = c.Name
		}
	}
	b.Advance(time.Second) // the switch delay
	first := receive(t, ctx, cons[active])
	if err := cons[active].Seek(first.ID()); err != nil {
		t.Fatal(err)
	}
	b.Advance(time.Second)
	receive(t, ctx, cons[active]) // served again once it came back
	closed := map[string]int{}
	for _, e := range b.Events() {
		if e.Kind == broker.EventConsumerClosed {
			closed[e.Consumer]++
		}
	}
	if closed[active] != 1 || closed[standby] != 0 {
		t.Fatalf("closed by the seek: %v, want only the active consumer %s", closed, active)
	}
}
