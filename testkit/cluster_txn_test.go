package testkit_test

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// A transaction over topics on two brokers of a cluster commits on both,
// its messages and its acknowledgements, and an aborted one gives its
// acknowledged messages back on both: the coordinators are the cluster's,
// and a transaction's end reaches each topic at its owner.
func TestATransactionOverTwoBrokersCommitsOnBoth(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithTransactions())
	ctx := txnCtx(t)
	const a, b = "persistent://public/default/txn-on-0", "persistent://public/default/txn-on-1"
	client := c.Client(func(o *pulsar.ClientOptions) { o.EnableTransaction = true })
	consumers := map[string]pulsar.Consumer{}
	producers := map[string]pulsar.Producer{}
	for i, topic := range []string{a, b} {
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		c.Move(topic, i)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		consumers[topic], producers[topic] = cons, p
	}
	if c.Owner(a) != 0 || c.Owner(b) != 1 {
		t.Fatalf("owners: %s on %d, %s on %d", a, c.Owner(a), b, c.Owner(b))
	}
	send := func(txn pulsar.Transaction, payload string) {
		t.Helper()
		for _, topic := range []string{a, b} {
			if _, err := producers[topic].Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn}); err != nil {
				t.Fatalf("send %s to %s: %v", payload, topic, err)
			}
		}
	}
	expect := func(payload string) {
		t.Helper()
		for _, topic := range []string{a, b} {
			m, err := consumers[topic].Receive(ctx)
			if err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			if string(m.Payload()) != payload {
				t.Fatalf("%s: got %q, want %q", topic, m.Payload(), payload)
			}
			consumers[topic].Ack(m)
		}
	}

	committed, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	send(committed, "committed")
	send(nil, "outside")
	if err := committed.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Dispatch waited at the open transaction's first message, and goes on
	// past it once the commit reached each topic.
	expect("committed")
	expect("outside")

	// Acknowledgements in a transaction: aborted, the messages come back;
	// committed, they are acknowledged on both brokers.
	send(nil, "acked")
	var held []pulsar.Message
	for _, topic := range []string{a, b} {
		m, err := consumers[topic].Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, m)
	}
	aborted, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, topic := range []string{a, b} {
		if err := consumers[topic].AckWithTxn(held[i], aborted); err != nil {
			t.Fatal(err)
		}
	}
	if err := aborted.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for i, topic := range []string{a, b} {
		consumers[topic].Nack(held[i])
	}
	ackTxn, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{a, b} {
		m, err := consumers[topic].Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != "acked" {
			t.Fatalf("%s after the abort: got %q, want the message back", topic, m.Payload())
		}
		if err := consumers[topic].AckWithTxn(m, ackTxn); err != nil {
			t.Fatal(err)
		}
	}
	if err := ackTxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{a, b} {
		c.Broker(c.Owner(topic)).WaitBacklog(ctx, topic, "s", 0)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A transaction whose topic moves to another broker before the commit
// still commits there: the topic's transaction buffer is kept with its
// ledger, and the new owner writes the commit marker.
func TestATransactionCommitsAfterItsTopicMoved(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithTransactions())
	ctx := txnCtx(t)
	const topic = "persistent://public/default/txn-moved"
	client := c.Client(func(o *pulsar.ClientOptions) { o.EnableTransaction = true })
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	c.Move(topic, 0)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	txn, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in the move"), Transaction: txn}); err != nil {
		t.Fatal(err)
	}
	c.Move(topic, 1)
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "in the move" || c.Owner(topic) != 1 {
		t.Fatalf("got %q with the topic on broker %d", m.Payload(), c.Owner(topic))
	}
}
