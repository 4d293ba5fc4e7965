package broker

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// A broker that crashes while a transaction is being committed (its
// coordinator logged COMMITTING, its topics were not told yet) commits it
// once started again on its data directory, as Pulsar's recovered
// coordinator ends the transactions it finds committing: a consumer of
// pulsar-client-go gets its message.
func TestACrashWhileCommittingCommitsAfterTheRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "persistent://public/default/committing"
	start := func() *Broker {
		b := New(WithDataDir(dir), WithTransactions(true))
		if err := b.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := start()
	if err := b.CreateSubscription(topic, "s", Earliest); err != nil {
		t.Fatal(err)
	}
	id, err := b.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PublishInTransaction(id, topic, ProducerMessage{Payload: []byte("in the transaction")}); err != nil {
		t.Fatal(err)
	}
	// The first half of an end, as endTxn does it, then the crash.
	b.txns.mu.Lock()
	c := b.txns.coords[id.Most]
	if _, err := c.StartEnd(id, true, false); err != nil {
		b.txns.mu.Unlock()
		t.Fatal(err)
	}
	b.saveTxnLocked(c, id)
	b.txns.mu.Unlock()
	if err := b.WaitDurable(); err != nil {
		t.Fatal(err)
	}
	if err := b.Crash(); err != nil {
		t.Fatal(err)
	}

	b = start()
	defer b.Close()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatalf("the committing transaction's message after the restart: %v", err)
	}
	if string(m.Payload()) != "in the transaction" {
		t.Fatalf("after the restart: %q", m.Payload())
	}
}
