package broker_test

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Tests of the broker's exported API (the one admin/ and testkit/ use), with
// real clients where a client can see the outcome.

func startBroker(t *testing.T, opts ...broker.Option) (*broker.Broker, pulsar.Client) {
	t.Helper()
	b := broker.New(opts...)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return b, c
}

func TestDeleteSubscriptionWithAConsumerNeedsForce(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/busy-sub"
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	defer cons.Close()
	closed := make(chan broker.Event, 1)
	defer b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventConsumerClosed && e.Reason == "broker" {
			select {
			case closed <- e:
			default:
			}
		}
	})()
	if err := b.DeleteSubscription(topic, "s", false); !errors.Is(err, broker.ErrSubscriptionBusy) {
		t.Fatalf("delete without force: %v, want ErrSubscriptionBusy", err)
	}
	if snap, ok := b.Subscription(topic, "s"); !ok || len(snap.Consumers) != 1 {
		t.Fatalf("after a refused delete: %+v, %v", snap, ok)
	}
	if err := b.DeleteSubscription(topic, "s", true); err != nil {
		t.Fatalf("delete with force: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer was not closed by the forced delete")
	}
	if err := b.DeleteSubscription(topic, "none", false); !errors.Is(err, broker.ErrSubscriptionNotFound) {
		t.Fatalf("delete of a missing subscription: %v", err)
	}
	if err := b.DeleteSubscription("persistent://public/default/no-topic", "s", false); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("delete on a missing topic: %v", err)
	}
}

func TestEntryReturnsWhatAProducerSent(t *testing.T) {
	b, c := startBroker(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/entry"
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, Name: "writer",
		CompressionType: pulsar.LZ4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	payload := bytes.Repeat([]byte("compressible "), 100)
	props := map[string]string{"a": "1"}
	id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payload, Key: "k", Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	e, err := b.Entry(topic, broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID()})
	if err != nil {
		t.Fatal(err)
	}
	if e.Producer != "writer" || e.BatchSize != 0 || len(e.Messages) != 1 || !bytes.Equal(e.Body, payload) {
		t.Fatalf("entry %+v", e)
	}
	if m := e.Messages[0]; !bytes.Equal(m.Payload, payload) || m.Key != "k" || !maps.Equal(m.Properties, props) || m.Compression != "LZ4" {
		t.Fatalf("message %+v", m)
	}

	batching, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer batching.Close()
	ids := make(chan pulsar.MessageID, 3)
	for _, pl := range []string{"x", "y", "z"} {
		batching.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)}, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Error(err)
			}
			ids <- id
		})
	}
	if err := batching.Flush(); err != nil {
		t.Fatal(err)
	}
	bid := <-ids
	e, err = b.Entry(topic, broker.MessageID{Ledger: bid.LedgerID(), Entry: bid.EntryID()})
	if err != nil {
		t.Fatal(err)
	}
	if e.BatchSize != 3 || len(e.Messages) != 3 || string(e.Messages[2].Payload) != "z" || e.Messages[2].ID.BatchIndex != 2 {
		t.Fatalf("batch entry %+v", e)
	}
	if _, err := b.Entry(topic, broker.MessageID{Ledger: bid.LedgerID(), Entry: 99}); !errors.Is(err, broker.ErrMessageNotFound) {
		t.Fatalf("entry beyond the end: %v", err)
	}
}

func TestPublishRefusesWhatAProducerWouldBeRefused(t *testing.T) {
	b, _ := startBroker(t, broker.WithMaxMessageSize(1024))
	msg := broker.ProducerMessage{Payload: []byte("m")}
	if err := b.CreatePartitionedTopic("parted", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish("parted", msg); err == nil {
		t.Fatal("publish to a partitioned topic's name succeeded")
	}
	if ids, err := b.Publish("parted-partition-1", msg); err != nil || ids[0].Partition != 1 {
		t.Fatalf("publish to a partition: %v, %v", ids, err)
	}
	if _, err := b.Publish("big", broker.ProducerMessage{Payload: make([]byte, 2048)}); !errors.Is(err, broker.ErrInvalidMessage) {
		t.Fatalf("publish above maxMessageSize: %v", err)
	}
	if _, err := b.TerminateTopic("parted-partition-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish("parted-partition-1", msg); !errors.Is(err, broker.ErrTopicTerminated) {
		t.Fatalf("publish to a terminated topic: %v", err)
	}
	strict, _ := startBroker(t, broker.WithAutoTopicCreation(false))
	if _, err := strict.Publish("missing", msg); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("publish to a missing topic without auto-creation: %v", err)
	}
}

func TestPoliciesResolveTopicOverNamespaceOverBroker(t *testing.T) {
	b, _ := startBroker(t, broker.WithDefaultPolicies(broker.Policies{MessageTTLSeconds: new(7)}))
	const topic = "persistent://public/default/resolved"
	if _, err := b.AppliedPolicies(topic); !errors.Is(err, broker.ErrTopicNotFound) {
		t.Fatalf("policies of a missing topic: %v", err)
	}
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	ttl := func() int {
		t.Helper()
		p, err := b.AppliedPolicies(topic)
		if err != nil {
			t.Fatal(err)
		}
		return *p.MessageTTLSeconds
	}
	if got := ttl(); got != 7 {
		t.Fatalf("broker default: %d, want 7", got)
	}
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.MessageTTLSeconds = new(60) }); err != nil {
		t.Fatal(err)
	}
	if got := ttl(); got != 60 {
		t.Fatalf("namespace over broker: %d, want 60", got)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.MessageTTLSeconds = new(0) }); err != nil {
		t.Fatal(err)
	}
	if got := ttl(); got != 0 {
		t.Fatalf("topic over namespace: %d, want 0", got)
	}
	err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.MessageTTLSeconds = new(-1) })
	if !errors.Is(err, broker.ErrInvalidPolicy) {
		t.Fatalf("negative TTL: %v, want ErrInvalidPolicy", err)
	}
	if own, _ := b.TopicPolicies(topic); own.MessageTTLSeconds == nil || *own.MessageTTLSeconds != 0 {
		t.Fatalf("a refused update changed the topic's policies: %+v", own)
	}
	if err := b.UpdateNamespacePolicies("public/none", func(*broker.Policies) {}); !errors.Is(err, broker.ErrNamespaceNotFound) {
		t.Fatalf("policies of a missing namespace: %v", err)
	}
}

func TestPoliciesAreCopiesNotShared(t *testing.T) {
	b, _ := startBroker(t)
	v := 30
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.MessageTTLSeconds = &v }); err != nil {
		t.Fatal(err)
	}
	v = 99
	got, err := b.NamespacePolicies("public/default")
	if err != nil || *got.MessageTTLSeconds != 30 {
		t.Fatalf("policies %+v, %v: the broker kept the caller's pointer", got, err)
	}
	*got.MessageTTLSeconds = 1
	if again, _ := b.NamespacePolicies("public/default"); *again.MessageTTLSeconds != 30 {
		t.Fatal("a returned copy changed the broker's policies")
	}
}

// Policies' resolution and copies work field by field through reflection:
// every field must be a pointer or a map, so that nil can mean unset.
func TestEveryPolicyFieldIsAPointerOrAMap(t *testing.T) {
	typ := reflect.TypeFor[broker.Policies]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if k := f.Type.Kind(); k != reflect.Pointer && k != reflect.Map {
			t.Errorf("Policies.%s is a %s, want a pointer or a map", f.Name, f.Type)
		}
	}
}

func TestSchemaPutByTheAPIMatchesAProducersSchema(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/schema-api"
	def := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewJSONSchema(def, nil)})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	got, err := b.Schema(topic, -1)
	if err != nil || got.Type != "JSON" || got.Version != 0 {
		t.Fatalf("the producer's schema: %+v, %v", got, err)
	}
	if v, err := b.PutSchema(topic, broker.Schema{Type: "JSON", Data: got.Data}); err != nil || v != 0 {
		t.Fatalf("putting the producer's schema again: version %d, %v; want 0", v, err)
	}
	if _, err := b.PutSchema(topic, broker.Schema{Type: "STRING"}); !errors.Is(err, broker.ErrIncompatibleSchema) {
		t.Fatalf("a new type under the default strategy: %v", err)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = new(broker.SchemaAlwaysCompatible) }); err != nil {
		t.Fatal(err)
	}
	if v, err := b.PutSchema(topic, broker.Schema{Type: "STRING", Properties: map[string]string{"p": "1"}}); err != nil || v != 1 {
		t.Fatalf("putting a new schema: version %d, %v; want 1", v, err)
	}
	if _, err := b.PutSchema(topic, broker.Schema{Type: "json"}); !errors.Is(err, broker.ErrInvalidSchema) {
		t.Fatalf("put of an unknown type: %v", err)
	}
	list, err := b.Schemas(topic)
	if err != nil || len(list) != 2 || list[1].Type != "STRING" || list[1].Properties["p"] != "1" {
		t.Fatalf("versions %+v, %v", list, err)
	}
	if v, err := b.DeleteSchema(topic, false); err != nil || v != 2 {
		t.Fatalf("delete: version %d, %v; want 2", v, err)
	}
	if _, err := b.Schema(topic, -1); !errors.Is(err, broker.ErrSchemaNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
