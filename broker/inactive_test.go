package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// has reports whether the broker holds the topic.
func has(b *testkit.Broker, topic string) bool {
	return slices.Contains(b.Topics(), "persistent://public/default/"+topic)
}

// produceAndClose publishes one message to topic with pulsar-client-go and
// closes the producer.
func produceAndClose(t *testing.T, client pulsar.Client, topic string) {
	t.Helper()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	p.Close()
}

func TestTopicWithoutSubscriptionsIsDeletedAtTheCheckAMinuteAfterItsLastProducerLeft(t *testing.T) {
	b := testkit.Start(t)
	b.Advance(10 * time.Second) // the checks run at 60 s, 120 s… from the start
	produceAndClose(t, b.Client(), "gone")
	b.Advance(55 * time.Second) // the check at 60 s: inactive for 50 s only
	if !has(b, "gone") {
		t.Fatal("deleted after 50 s of inactivity")
	}
	b.Advance(60 * time.Second) // the check at 120 s
	if has(b, "gone") {
		t.Fatal("still there after 110 s of inactivity")
	}
	deleted := false
	for _, e := range b.Events() {
		if e.Kind == broker.EventTopicDeleted && e.Topic == "persistent://public/default/gone" && e.Reason == "inactive" {
			deleted = true
		}
	}
	if !deleted {
		t.Fatal("no topic-deleted event")
	}
	// The topic comes back empty on its next use, as on Pulsar.
	r, err := b.Client().CreateReader(pulsar.ReaderOptions{Topic: "gone", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.HasNext() {
		t.Fatal("the deleted topic's message is still readable")
	}
}

func TestSubscriptionsProducersAndConsumersKeepATopic(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	produceAndClose(t, client, "subscribed")
	b.CreateSubscription("subscribed", "s", broker.Earliest)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "producing"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: "reading", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b.Advance(10 * time.Minute)
	for _, topic := range []string{"subscribed", "producing", "reading"} {
		if !has(b, topic) {
			t.Errorf("%s was deleted", topic)
		}
	}
}

func TestAnInactiveTopicCountsFromTheLastCheckThatSawItActive(t *testing.T) {
	b := testkit.Start(t)
	r, err := b.Client().CreateReader(pulsar.ReaderOptions{Topic: "read", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	b.Advance(90 * time.Second) // the check at 60 s sees the reader
	r.Close()
	b.WaitFor(context.Background(), "the reader's subscription gone", func() bool {
		s, _ := b.Topic("read")
		return len(s.Subscriptions) == 0
	})
	b.Advance(30 * time.Second) // the check at 120 s: inactive since 60 s
	if has(b, "read") {
		t.Fatal("a non-durable subscription's end does not make the topic active; the check at 60 s did")
	}
	b.CreateTopic("persistent://public/default/unsubscribed")
	b.CreateSubscription("unsubscribed", "s", broker.Latest)
	b.Advance(60 * time.Second)                      // check at 180 s: active
	b.DeleteSubscription("unsubscribed", "s", false) // just after 180 s
	b.Advance(60 * time.Second)                      // check at 240 s: inactive for not quite 60 s
	if !has(b, "unsubscribed") {
		t.Fatal("deleted less than 60 s after its subscription was")
	}
	b.Advance(60 * time.Second) // check at 300 s
	if has(b, "unsubscribed") {
		t.Fatal("kept more than 60 s after its subscription was deleted")
	}
}

func TestCaughtUpModeDeletesATopicWhoseSubscriptionsHaveNoBacklog(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithInactiveTopicDeletion(broker.InactiveTopicDeletion{
		Enabled: true, Mode: broker.DeleteWhenSubscriptionsCaughtUp})))
	b.CreateSubscription("behind", "s", broker.Earliest)
	b.CreateSubscription("caught", "s", broker.Earliest)
	b.Publish("behind", broker.ProducerMessage{Payload: []byte("m")})
	b.Advance(2 * time.Minute)
	if !has(b, "behind") || has(b, "caught") {
		t.Fatalf("topics %v: want behind kept (backlog 1) and caught deleted", b.Topics())
	}
}

func TestRetentionAndPoliciesKeepInactiveTopics(t *testing.T) {
	b := testkit.Start(t)
	for _, topic := range []string{"kept-forever", "kept-5min", "empty-5min", "policy-off"} {
		b.Publish(topic, broker.ProducerMessage{Payload: []byte("m")})
	}
	b.CreateTopic("persistent://public/default/empty-5min-no-entries")
	b.SetTopicPolicies("kept-forever", broker.Policies{Retention: &broker.Retention{Minutes: -1, SizeMB: -1}})
	b.SetTopicPolicies("kept-5min", broker.Policies{Retention: &broker.Retention{Minutes: 5, SizeMB: -1}})
	b.SetTopicPolicies("empty-5min-no-entries", broker.Policies{Retention: &broker.Retention{Minutes: 5, SizeMB: -1}})
	b.SetTopicPolicies("policy-off", broker.Policies{InactiveTopics: &broker.InactiveTopicPolicies{
		DeleteWhileInactive: false, MaxInactiveDurationSeconds: 60, Mode: broker.DeleteWhenNoSubscriptions}})
	b.Advance(2 * time.Minute)
	for topic, want := range map[string]bool{"kept-forever": true, "kept-5min": true, "empty-5min-no-entries": false,
		"policy-off": true, "empty-5min": false} {
		if has(b, topic) != want {
			t.Errorf("after 2 min: %s kept %v, want %v", topic, !want, want)
		}
	}
	b.Advance(4 * time.Minute)
	if has(b, "kept-5min") {
		t.Error("retained past its 5 minutes")
	}
	if !has(b, "kept-forever") {
		t.Error("infinite retention did not keep the topic")
	}
}

func TestPartitionsOfAnInactivePartitionedTopicGoAndComeBack(t *testing.T) {
	b := testkit.Start(t)
	b.CreatePartitionedTopic("parted", 2)
	b.Advance(2 * time.Minute)
	if has(b, "parted-partition-0") || has(b, "parted-partition-1") {
		t.Fatalf("partitions kept: %v", b.Topics())
	}
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "parted"})
	if err != nil {
		t.Fatalf("producer on the partitioned topic after its partitions went: %v", err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
}

func TestKeptInactiveTopicsStay(t *testing.T) {
	b := testkit.Start(t, testkit.WithInactiveTopicsKept())
	b.Publish("idle", broker.ProducerMessage{Payload: []byte("m")})
	b.Advance(time.Hour)
	if got := b.Messages("idle"); len(got) != 1 {
		t.Fatalf("messages %v", got)
	}
}

func TestSystemTopicsAreNeverDeletedForInactivity(t *testing.T) {
	b := testkit.Start(t, testkit.WithAutoNamespaces())
	b.CreateTopic("persistent://pulsar/system/idle")
	b.Advance(10 * time.Minute)
	if !slices.Contains(b.Topics(), "persistent://pulsar/system/idle") {
		t.Fatalf("topics %v", b.Topics())
	}
}
