package testkit_test

import (
	"fmt"
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

// A broker stopped gracefully says so when it gives its topics up: their
// unload's reason is "stop", a crash's "crash", an admin unload's "unload".
func TestATopicUnloadNamesWhyItsBrokerGaveItUp(t *testing.T) {
	c := testkit.StartCluster(t, 3)
	client := c.Client()
	// Three topics of three bundles, each moved to its own broker.
	var topics []string
	seen := map[string]bool{}
	for n := 0; len(topics) < 3; n++ {
		topic := fmt.Sprintf("persistent://public/default/reason-%d", n)
		if b := c.Bundle(topic); !seen[b] {
			seen[b] = true
			topics = append(topics, topic)
		}
	}
	for i, topic := range topics {
		c.Move(topic, i)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
	}
	lastReason := func(topic string) string {
		reason := ""
		for _, e := range c.Events() {
			if e.Topic == topic && e.Kind == testkit.EventTopicUnloaded {
				reason = e.Reason
			}
		}
		return reason
	}
	for _, step := range []struct {
		topic, want string
		do          func()
	}{
		{topics[0], "unload", func() { c.Unload(topics[0]) }},
		{topics[1], "stop", func() { c.Stop(1) }},
		{topics[2], "crash", func() { c.Crash(2) }},
	} {
		step.do()
		if got := lastReason(step.topic); got != step.want {
			t.Errorf("%s: its unload's reason %q, want %q", step.topic, got, step.want)
		}
	}
}

// An acknowledgement held in a transaction survives its topic's move, as
// Pulsar's pending-ack store keeps it: the new owner does not deliver the
// held message again, the commit acknowledges it there; and one held by a
// transaction aborted after the move comes back.
func TestATransactionalAckHoldsAcrossAMove(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithTransactions())
	ctx := txnCtx(t)
	const topic = "persistent://public/default/txn-ack-moved"
	client := c.Client(func(o *pulsar.ClientOptions) { o.EnableTransaction = true })
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	c.Move(topic, 0)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	for _, payload := range []string{"committed", "aborted"} {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	commit, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	abort, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, txn := range []pulsar.Transaction{commit, abort} {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.AckWithTxn(m, txn); err != nil {
			t.Fatal(err)
		}
	}
	c.Move(topic, 1)
	if raceDetector {
		// A producer that reconnected races in the client (race_on_test.go).
		p.Close()
		if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer reconnects to broker 1, which holds both messages for
	// their transactions: a message sent now is the next one it gets.
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after the move")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "after the move" {
		t.Fatalf("after the move got %q, a message its transaction holds", m.Payload())
	}
	cons.Ack(m)
	if err := commit.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := abort.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	back, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Payload()) != "aborted" || back.RedeliveryCount() != 1 {
		t.Fatalf("after the abort got %q with count %d, want the aborted transaction's message with count 1",
			back.Payload(), back.RedeliveryCount())
	}
	cons.Ack(back)
	c.Broker(1).WaitBacklog(ctx, topic, "s", 0)
}
