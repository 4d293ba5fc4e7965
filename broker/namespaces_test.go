package broker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A topic of a namespace that does not exist is refused to clients and to
// the broker's API alike, until the namespace is created.
func TestTopicOfAMissingNamespaceIsRefusedUntilTheNamespaceExists(t *testing.T) {
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	const topic = "persistent://acme/orders/t"
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
		t.Fatal("a producer on a missing namespace was created")
	}
	if _, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"}); err == nil {
		t.Fatal("a consumer on a missing namespace was created")
	}
	if _, err := b.Publish(topic, broker.ProducerMessage{Payload: []byte("x")}); !errors.Is(err, broker.ErrNamespaceNotFound) {
		t.Fatalf("Publish to a missing namespace: %v", err)
	}
	if err := b.CreateTopic(topic); !errors.Is(err, broker.ErrNamespaceNotFound) {
		t.Fatalf("CreateTopic in a missing namespace: %v", err)
	}
	if err := b.CreateSubscription(topic, "s", broker.Earliest); !errors.Is(err, broker.ErrNamespaceNotFound) {
		t.Fatalf("CreateSubscription in a missing namespace: %v", err)
	}
	if len(b.Topics()) != 0 || b.NamespaceExists("acme/orders") {
		t.Fatalf("the refusals left topics %v or the namespace behind", b.Topics())
	}
	if err := b.CreateTenant("acme"); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateNamespace("acme/orders"); err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer once the namespace exists: %v", err)
	}
	defer p.Close()
	if _, err := p.Send(testCtx(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
}

// WithAutoNamespaceCreation keeps the convenience of topics anywhere: the
// first use creates the namespace and its tenant.
func TestAutoNamespaceCreationCreatesTheNamespaceOnFirstUse(t *testing.T) {
	b, client := startBroker(t, broker.WithAutoNamespaceCreation(true))
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://acme/orders/t"})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if ns, err := b.Namespaces("acme"); err != nil || len(ns) != 1 || ns[0] != "acme/orders" {
		t.Fatalf("the tenant's namespaces: %v, %v", ns, err)
	}
}
