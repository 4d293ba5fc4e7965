package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// sentTo is how many messages a subscription's consumers were sent.
func sentTo(b *testkit.Broker, topic, sub string) int64 {
	return b.Stats(topic).Subscriptions[sub].MsgOutCounter
}

// A topic's dispatch rate lets a period's messages out, then nothing until
// the next period on the broker clock.
func TestTopicDispatchRateSendsAPeriodsMessagesAtATime(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/dispatch-rate"
	b.CreateSubscription(topic, "s", broker.Earliest)
	for range 10 {
		b.Publish(topic, broker.ProducerMessage{Payload: []byte("m")})
	}
	b.SetTopicPolicies(topic, broker.Policies{DispatchRate: &broker.DispatchRate{Messages: 3, PeriodSeconds: 1}})
	cons := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	for range 3 {
		cons.Ack(receive(t, ctx, cons))
	}
	if n := sentTo(b, topic, "s"); n != 3 {
		t.Fatalf("%d delivered in the first period, want 3", n)
	}
	// The acks make the dispatcher try again: no tokens, nothing goes.
	b.WaitBacklog(ctx, topic, "s", 7)
	if n := sentTo(b, topic, "s"); n != 3 {
		t.Fatalf("%d delivered without tokens, want 3", n)
	}
	for _, want := range []int64{6, 9, 10} {
		b.Advance(time.Second)
		b.WaitFor(ctx, "the next period's messages", func() bool { return sentTo(b, topic, "s") == want })
		ackReceived(cons)
	}
}

// ackReceived acknowledges what the consumer has received so far.
func ackReceived(c pulsar.Consumer) {
	for {
		select {
		case m := <-c.Chan():
			c.Ack(m)
		default:
			return
		}
	}
}

// A subscription dispatch rate limits each subscription on its own; the
// topic's limits them all together.
func TestSubscriptionAndTopicDispatchRates(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/dispatch-rates"
	b.CreateSubscription(topic, "a", broker.Earliest)
	b.CreateSubscription(topic, "b", broker.Earliest)
	for range 10 {
		b.Publish(topic, broker.ProducerMessage{Payload: []byte("m")})
	}
	b.SetNamespacePolicies("public/default", broker.Policies{SubscriptionDispatchRate: &broker.DispatchRate{Messages: 2}})
	client := b.Client()
	ca := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "a"})
	cb := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "b"})
	receive(t, ctx, ca)
	receive(t, ctx, cb)
	b.WaitFor(ctx, "two to each subscription", func() bool {
		return sentTo(b, topic, "a") == 2 && sentTo(b, topic, "b") == 2
	})

	const shared = "persistent://public/default/dispatch-shared-rate"
	b.CreateSubscription(shared, "a", broker.Earliest)
	b.CreateSubscription(shared, "b", broker.Earliest)
	for range 10 {
		b.Publish(shared, broker.ProducerMessage{Payload: []byte("m")})
	}
	b.SetTopicPolicies(shared, broker.Policies{DispatchRate: &broker.DispatchRate{Messages: 3},
		SubscriptionDispatchRate: &broker.DispatchRate{Messages: 100}})
	sa := subscribe(t, client, pulsar.ConsumerOptions{Topic: shared, SubscriptionName: "a"})
	sb := subscribe(t, client, pulsar.ConsumerOptions{Topic: shared, SubscriptionName: "b"})
	receive(t, ctx, sa)
	b.WaitFor(ctx, "the topic's three, in all", func() bool {
		return sentTo(b, shared, "a")+sentTo(b, shared, "b") == 3
	})
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	sb.Receive(short) // whatever b got of the three
	if n := sentTo(b, shared, "a") + sentTo(b, shared, "b"); n != 3 {
		t.Fatalf("%d delivered over both subscriptions in one period, want 3", n)
	}
}

// A rate set for one subscription by name replaces the topic's
// subscription dispatch rate for that subscription only.
func TestOneSubscriptionsOwnDispatchRate(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/dispatch-own-rate"
	b.CreateSubscription(topic, "slow", broker.Earliest)
	b.CreateSubscription(topic, "other", broker.Earliest)
	for range 10 {
		b.Publish(topic, broker.ProducerMessage{Payload: []byte("m")})
	}
	b.SetTopicPolicies(topic, broker.Policies{SubscriptionDispatchRate: &broker.DispatchRate{Messages: 4},
		SubscriptionDispatchRates: map[string]broker.DispatchRate{"slow": {Messages: 1}}})
	client := b.Client()
	slow := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "slow"})
	other := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "other"})
	receive(t, ctx, slow)
	receive(t, ctx, other)
	b.WaitFor(ctx, "one to slow and four to other", func() bool {
		return sentTo(b, topic, "slow") == 1 && sentTo(b, topic, "other") == 4
	})

	// Removing the subscription's own rate leaves it the topic's, in a new
	// and full bucket, as a changed rate does.
	b.UpdateTopicPolicies(topic, func(p *broker.Policies) { delete(p.SubscriptionDispatchRates, "slow") })
	b.WaitFor(ctx, "the topic's four to slow at once", func() bool {
		return sentTo(b, topic, "slow") == 5 && sentTo(b, topic, "other") == 4
	})
	b.Advance(time.Second)
	b.WaitFor(ctx, "four more to each in the next period", func() bool {
		return sentTo(b, topic, "slow") == 9 && sentTo(b, topic, "other") == 8
	})
}

// The broker-level dispatch rates set at run time reach a topic already
// loaded, with a consumer connected: the subscription's rate lets a
// period's messages out; removing it lets the rest go at once.
func TestDynamicSubscriptionDispatchRateReachesALoadedTopic(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/dynamic-dispatch-rate"
	b.CreateSubscription(topic, "s", broker.Earliest)
	cons := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("before")})
	cons.Ack(receive(t, ctx, cons))
	b.SetDynamicConfig("dispatchThrottlingRatePerSubscriptionInMsg", "2")
	for range 6 {
		b.Publish(topic, broker.ProducerMessage{Payload: []byte("m")})
	}
	for range 2 {
		cons.Ack(receive(t, ctx, cons))
	}
	b.WaitBacklog(ctx, topic, "s", 4)
	if n := sentTo(b, topic, "s"); n != 3 {
		t.Fatalf("%d sent with a rate of 2 a period, want 3 (1 before it)", n)
	}
	b.Advance(time.Second)
	b.WaitFor(ctx, "the next period's two", func() bool { return sentTo(b, topic, "s") == 5 })
	ackReceived(cons)
	b.DeleteDynamicConfig("dispatchThrottlingRatePerSubscriptionInMsg")
	b.WaitFor(ctx, "the rest once the rate is removed", func() bool { return sentTo(b, topic, "s") == 7 })
	if got := b.AppliedPolicies(topic).SubscriptionDispatchRate.Messages; got != 0 {
		t.Fatalf("applied subscription dispatch rate %d after the removal, want 0", got)
	}
}
