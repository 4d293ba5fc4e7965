package broker_test

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// kib returns a payload of n KiB.
func kib(n int) []byte { return make([]byte, n<<10) }

// A topic over its size quota refuses new producers with the policy's
// error, and the periodic check disconnects the producers it has: under
// producer_exception they come back and are refused, until the backlog is
// acknowledged below the quota.
func TestSizeQuotaRefusesProducersAndTheCheckDisconnectsThem(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	ctx := testCtx(t)
	const topic = "persistent://public/default/quota-size"
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	b.SetTopicPolicies(topic, broker.Policies{BacklogQuota: &broker.BacklogQuota{
		LimitBytes: 10 << 10, LimitSeconds: -1, Policy: broker.ProducerException}})
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 3 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: kib(4)}); err != nil {
			t.Fatal(err)
		}
	}
	if size := b.BacklogSize(topic); size < 12<<10 {
		t.Fatalf("backlog size %d, want over 12 KiB", size)
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	wantRefusal(t, "a producer over the quota", err, "ProducerBlockedQuotaExceededException",
		"Cannot create producer on topic with backlog quota exceeded")

	// The periodic check, a minute of broker time later, closes the
	// producer; it comes back and is refused.
	closed := make(chan struct{}, 1)
	defer b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventProducerClosed && e.Reason == "broker" {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	})()
	b.Advance(time.Minute)
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the check did not close the producer")
	}
	if ts, _ := b.Topic(topic); len(ts.Producers) != 0 {
		t.Fatalf("producers %v after the check, want none", ts.Producers)
	}
	// Acknowledging the backlog lets producers in again.
	for range 3 {
		cons.Ack(receive(t, ctx, cons))
	}
	b.WaitBacklog(ctx, topic, "s", 0)
	p2, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("a producer once the backlog is acknowledged: %v", err)
	}
	p2.Close()
}

// producer_request_hold refuses with ProducerBlockedQuotaExceededError.
func TestRequestHoldQuotaRefusesWithItsOwnError(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	const topic = "persistent://public/default/quota-hold"
	b.CreateSubscription(topic, "s", broker.Earliest)
	b.Publish(topic, broker.ProducerMessage{Payload: kib(2)})
	b.SetNamespacePolicies("public/default", broker.Policies{BacklogQuota: &broker.BacklogQuota{
		LimitBytes: 1024, LimitSeconds: -1, Policy: broker.ProducerRequestHold}})
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	wantRefusal(t, "a producer over the namespace's quota", err, "ProducerBlockedQuotaExceededError", "backlog quota exceeded")
	// A topic without a durable subscription has no backlog.
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/quota-free"})
	if err != nil {
		t.Fatalf("a topic without subscriptions: %v", err)
	}
	p.Close()
}

// consumer_backlog_eviction moves the slowest subscription forward by the
// share of its backlog over 90% of the quota, once per check (Pulsar stops
// when the slowest subscription stays the slowest), rounding the entries to
// skip down; a subscription that keeps up is left alone.
func TestSizeQuotaEvictsTheSlowestSubscription(t *testing.T) {
	b := testkit.Start(t)
	const topic = "persistent://public/default/quota-evict"
	b.CreateSubscription(topic, "slow", broker.Earliest)
	for range 10 {
		b.Publish(topic, broker.ProducerMessage{Payload: kib(1)})
	}
	b.CreateSubscription(topic, "fast", broker.Latest)
	b.SetTopicPolicies(topic, broker.Policies{BacklogQuota: &broker.BacklogQuota{
		LimitBytes: 5 << 10, LimitSeconds: -1, Policy: broker.ConsumerBacklogEviction}})
	size := b.BacklogSize(topic)
	// The share over 90% of 5 KiB, of 10 entries, rounded down.
	want := int64(10 - int((float64(size)-0.9*5*1024)/float64(size)*10))
	b.RunBacklogQuotaCheck()
	if got := b.Sub(topic, "slow").Backlog; got != want {
		t.Fatalf("slow's backlog after the check: %d, want %d (backlog was %d bytes)", got, want, size)
	}
	// The next check finds less than one entry's share over: it rounds to
	// nothing, as in Pulsar.
	b.RunBacklogQuotaCheck()
	if got := b.Sub(topic, "slow").Backlog; got != want {
		t.Fatalf("slow's backlog after a second check: %d, want %d", got, want)
	}
	if b.Sub(topic, "fast").Backlog != 0 {
		t.Fatal("the subscriptions that kept up moved")
	}
	expired := false
	for _, e := range b.Events() {
		if e.Kind == broker.EventExpired && e.Subscription == "slow" && e.Reason == "backlog-quota" {
			expired = true
		}
	}
	if !expired {
		t.Fatal("no event tells of the eviction")
	}
}

// With the precise check, an age quota counts from the oldest message's
// publish time, and eviction expires what is older than 90% of it.
func TestPreciseAgeQuotaEvictsOldMessages(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithPreciseBacklogQuotaCheck(true)))
	const topic = "persistent://public/default/quota-age"
	b.CreateSubscription(topic, "s", broker.Earliest)
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("old")})
	b.SetTopicPolicies(topic, broker.Policies{MessageAgeBacklogQuota: &broker.BacklogQuota{
		LimitBytes: -1, LimitSeconds: 100, Policy: broker.ConsumerBacklogEviction}})
	b.Advance(95 * time.Second) // the check at 60 s finds it young
	if got := b.Sub(topic, "s").Backlog; got != 1 {
		t.Fatalf("backlog %d before the limit, want 1", got)
	}
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("new")})
	b.Advance(30 * time.Second) // the check at 120 s: the first is 120 s old
	if got := b.Sub(topic, "s").Backlog; got != 1 {
		t.Fatalf("backlog %d after the check, want the new message only", got)
	}
}

// Without the precise check, an age quota sees no age in the open block,
// as Pulsar sees none in its open ledger.
func TestEstimatedAgeQuotaIgnoresTheOpenBlock(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	const topic = "persistent://public/default/quota-age-open"
	b.CreateSubscription(topic, "s", broker.Earliest)
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("old")})
	b.SetTopicPolicies(topic, broker.Policies{MessageAgeBacklogQuota: &broker.BacklogQuota{
		LimitBytes: -1, LimitSeconds: 10, Policy: broker.ProducerException}})
	b.Advance(time.Hour)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer on a topic whose old message sits in the open block: %v", err)
	}
	p.Close()
}
