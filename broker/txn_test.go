package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// delivered returns how many times the broker delivered the message with
// this entry on topic.
func delivered(b *testkit.Broker, topic string, id pulsar.MessageID) int {
	tn, _ := broker.ParseTopicName(topic)
	n := 0
	for _, ev := range b.Events() {
		if ev.Kind == broker.EventDelivered && ev.Topic == tn.String() && ev.ID.Entry == id.EntryID() {
			n++
		}
	}
	return n
}

func sendTxn(t *testing.T, p pulsar.Producer, txn pulsar.Transaction, payload string) pulsar.MessageID {
	t.Helper()
	id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn})
	if err != nil {
		t.Fatalf("send %s: %v", payload, err)
	}
	return id
}

func newTxn(t *testing.T, c pulsar.Client) pulsar.Transaction {
	t.Helper()
	txn, err := c.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return txn
}

func TestTransactionalMessageReachesConsumersOnlyAfterCommit(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: pulsar.Shared})
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	txn := newTxn(t, c)
	inTxn := sendTxn(t, p, txn, "in-txn")
	plain := sendTxn(t, p, nil, "plain")
	// Both were stored and the consumer has permits, but the open
	// transaction holds both back: the later plain message too.
	if n, m := delivered(b, "t", inTxn), delivered(b, "t", plain); n+m != 0 {
		t.Fatalf("before commit: delivered %d and %d times", n, m)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"in-txn", "plain"} {
		m := receive(t, ctx, cons)
		if string(m.Payload()) != want {
			t.Fatalf("got %q, want %q", m.Payload(), want)
		}
		cons.Ack(m)
	}
	got := b.Transaction(testkit.TxnIDOf(txn))
	if got.Status != "COMMITTED" || len(got.Produced) != 1 || got.Produced[0].ID.Entry != inTxn.EntryID() {
		t.Fatalf("transaction: %+v", got)
	}
	// The commit marker took the entry after the plain message.
	b.WaitBacklog(ctx, "t", "s", 0)
}

func TestAbortedTransactionsMessagesAreNeverDelivered(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	b.CreateSubscription("t", "s", broker.Earliest)
	id := b.NewTransaction(time.Hour)
	// Seeded messages carry their transaction in their metadata, as the
	// Java client's do.
	aborted := b.PublishInTransaction(id, "t", broker.ProducerMessage{Payload: []byte("aborted")})
	b.Publish("t", broker.ProducerMessage{Payload: []byte("plain")})
	b.AbortTransaction(id)
	cons := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s"})
	m := receive(t, ctx, cons)
	if string(m.Payload()) != "plain" {
		t.Fatalf("got %q", m.Payload())
	}
	cons.Ack(m)
	// The aborted message and the marker are acknowledged as they are read.
	b.WaitBacklog(ctx, "t", "s", 0)
	for _, ev := range b.Events() {
		if ev.Kind == broker.EventDelivered && ev.ID.Entry == aborted[0].Entry {
			t.Fatalf("aborted message delivered: %+v", ev)
		}
	}
}

// pulsar-client-go v0.19.0 puts a message's transaction in the SEND only,
// not in the message's metadata, and Pulsar's dispatcher looks for it in the
// metadata: a Go client's messages of an aborted transaction reach the
// consumers once the abort lets them be read (found against Pulsar 4.0.8).
func TestGoClientsAbortedMessagesAreDeliveredAsOnPulsar(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s"})
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	txn := newTxn(t, c)
	aborted := sendTxn(t, p, txn, "aborted")
	if n := delivered(b, "t", aborted); n != 0 {
		t.Fatalf("delivered %d times while its transaction was open", n)
	}
	if err := txn.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, cons); string(m.Payload()) != "aborted" {
		t.Fatalf("got %q", m.Payload())
	}
}

func TestAbortGivesSharedAcksBackWithCountPlusOne(t *testing.T) {
	for _, typ := range []pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared} {
		b := testkit.Start(t, testkit.WithTransactions())
		ctx := testCtx(t)
		c := b.TxnClient()
		cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: typ})
		produceUnbatched(t, c, "t", 1, numbered)
		m := receive(t, ctx, cons)
		txn := newTxn(t, c)
		if err := cons.AckWithTxn(m, txn); err != nil {
			t.Fatal(err)
		}
		if s := b.Sub("t", "s"); len(s.Consumers[0].Pending) != 0 {
			t.Fatalf("%v: still pending on the consumer after the transactional ack: %+v", typ, s.Consumers[0])
		}
		if err := txn.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		again := receive(t, ctx, cons)
		if again.ID().EntryID() != m.ID().EntryID() || again.RedeliveryCount() != 1 {
			t.Fatalf("%v: after abort got entry %d count %d, want entry %d count 1", typ,
				again.ID().EntryID(), again.RedeliveryCount(), m.ID().EntryID())
		}
	}
}

func TestAbortRewindsExclusiveAndFailoverWithCountZero(t *testing.T) {
	for _, typ := range []pulsar.SubscriptionType{pulsar.Exclusive, pulsar.Failover} {
		b := testkit.Start(t, testkit.WithTransactions())
		ctx := testCtx(t)
		c := b.TxnClient()
		cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: typ})
		produceUnbatched(t, c, "t", 2, numbered)
		first, second := receive(t, ctx, cons), receive(t, ctx, cons)
		txn := newTxn(t, c)
		if err := cons.AckWithTxn(first, txn); err != nil {
			t.Fatal(err)
		}
		if err := cons.AckWithTxn(second, txn); err != nil {
			t.Fatal(err)
		}
		if err := txn.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		for _, want := range []pulsar.MessageID{first.ID(), second.ID()} {
			m := receive(t, ctx, cons)
			if m.ID().EntryID() != want.EntryID() || m.RedeliveryCount() != 0 {
				t.Fatalf("%v: got entry %d count %d, want entry %d count 0", typ, m.ID().EntryID(), m.RedeliveryCount(), want.EntryID())
			}
		}
	}
}

func TestCommitAcknowledgesWhatTheTransactionAcked(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: pulsar.Shared})
	produceUnbatched(t, c, "t", 3, numbered)
	txn := newTxn(t, c)
	for range 3 {
		if err := cons.AckWithTxn(receive(t, ctx, cons), txn); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.Sub("t", "s"); s.Backlog != 3 {
		t.Fatalf("before commit: backlog %d, want 3 (held, not acknowledged)", s.Backlog)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	b.WaitBacklog(ctx, "t", "s", 0)
	if got := b.Transaction(testkit.TxnIDOf(txn)); len(got.Acked) != 3 || got.Subscriptions[0].Subscription != "s" {
		t.Fatalf("transaction: %+v", got)
	}
}

func TestSecondTransactionAckingTheSameMessageIsRefused(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: pulsar.Shared})
	produceUnbatched(t, c, "t", 1, numbered)
	m := receive(t, ctx, cons)
	first, second := newTxn(t, c), newTxn(t, c)
	if err := cons.AckWithTxn(m, first); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, second); err == nil {
		t.Fatal("a second transaction acknowledged the same message")
	}
	if err := second.Commit(ctx); err == nil {
		t.Fatal("commit of a transaction whose ack failed: the client should refuse it")
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	b.WaitBacklog(ctx, "t", "s", 0)
}

func TestTimeoutAbortsOnTheBrokerClock(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: pulsar.Shared})
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produceUnbatched(t, c, "t", 1, numbered)
	m := receive(t, ctx, cons)
	txn, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sendTxn(t, p, txn, "timed-out")
	if err := cons.AckWithTxn(m, txn); err != nil {
		t.Fatal(err)
	}
	b.Advance(time.Minute + time.Second)
	got := b.WaitTransaction(ctx, testkit.TxnIDOf(txn), "ABORTED")
	if !got.TimedOut {
		t.Fatalf("transaction: %+v", got)
	}
	again := receive(t, ctx, cons)
	if again.ID().EntryID() != m.ID().EntryID() || again.RedeliveryCount() != 1 {
		t.Fatalf("after the timeout got entry %d count %d", again.ID().EntryID(), again.RedeliveryCount())
	}
	var perr *pulsar.Error
	if err := txn.Commit(ctx); !errors.As(err, &perr) || perr.Result() != pulsar.TransactionNoFoundError {
		t.Fatalf("commit after the timeout: %v", err)
	}
}

func TestSeededTransactionHoldsBackThePlainMessagesAfterIt(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := testCtx(t)
	b.CreateSubscription("t", "s", broker.Earliest)
	id := b.NewTransaction(time.Hour)
	b.PublishInTransaction(id, "t", broker.ProducerMessage{Payload: []byte("a")})
	b.Publish("t", broker.ProducerMessage{Payload: []byte("b")})
	cons := subscribe(t, b.Client(), pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s"})
	b.CommitTransaction(id)
	for _, want := range []string{"a", "b"} {
		if m := receive(t, ctx, cons); string(m.Payload()) != want {
			t.Fatalf("got %q, want %q", m.Payload(), want)
		}
	}
	if v := b.CheckSettlement(); v != nil {
		t.Fatalf("invariants: %v", v)
	}
}

func TestSeedingWithoutTheCoordinatorFails(t *testing.T) {
	b := broker.New()
	defer b.Close()
	if _, err := b.NewTransaction(time.Minute); !errors.Is(err, broker.ErrTransactionsDisabled) {
		t.Fatalf("NewTransaction: %v", err)
	}
	if _, err := b.PublishInTransaction(broker.TxnID{}, "t"); !errors.Is(err, broker.ErrTransactionsDisabled) {
		t.Fatalf("PublishInTransaction: %v", err)
	}
}

// While a commit is telling its topics, the transaction is committing: an
// abort then gets InvalidTxnStatus, as Pulsar's coordinator answers it.
func TestAbortWhileCommittingIsRefusedWithInvalidTxnStatus(t *testing.T) {
	b := broker.New(broker.WithTransactions(true))
	defer b.Close()
	id, err := b.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PublishInTransaction(id, "t", broker.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var abortErr error
	done := false
	cancel := b.OnEvent(func(ev broker.Event) {
		if ev.Kind == broker.EventTxnCommitted && ev.Topic != "" && !done {
			done = true
			abortErr = b.AbortTransaction(id)
		}
	})
	defer cancel()
	if err := b.CommitTransaction(id); err != nil {
		t.Fatal(err)
	}
	b.DeliverEvents()
	want := "Expect Txn `(0,0)` to be in ABORTING status but it is in COMMITTING status"
	if !errors.Is(abortErr, broker.ErrTxnInvalidStatus) || abortErr.Error() != want {
		t.Fatalf("abort during the commit: %v", abortErr)
	}
	if tr, _ := b.Transaction(id); tr.Status != "COMMITTED" {
		t.Fatalf("after the commit: %s", tr.Status)
	}
}

// Batch-index acks in a transaction hold only their indexes. pulsar-client-go
// sends them without a batch size, and then Pulsar's abort cannot give the
// held indexes back: the batch returns with the other indexes only, count
// 1, and the held ones are never delivered again. Pulsar 4.0.8 (with
// acknowledgmentAtBatchIndexLevelEnabled) did the same to the same client.
func TestGoClientsTransactionalBatchIndexAcksStayHeldAfterAbort(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions(), testkit.WithBroker(broker.WithBatchIndexAck(true)))
	ctx := testCtx(t)
	c := b.TxnClient()
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true, AckWithResponse: true})
	produce(t, c, "t", 4, numbered) // one batch of four
	var got []pulsar.Message
	for range 4 {
		got = append(got, receive(t, ctx, cons))
	}
	if got[0].ID().BatchSize() != 4 {
		t.Fatalf("batch size %d, want one batch of 4", got[0].ID().BatchSize())
	}
	txn := newTxn(t, c)
	for _, m := range got[:2] {
		if err := cons.AckWithTxn(m, txn); err != nil {
			t.Fatal(err)
		}
	}
	if v := b.CheckSettlement(); v != nil {
		t.Fatalf("invariants while held: %v", v)
	}
	if err := txn.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	var back []string
	for range 2 {
		m := receive(t, ctx, cons)
		back = append(back, fmt.Sprintf("%s/%d", m.Payload(), m.RedeliveryCount()))
		if err := cons.AckID(m.ID()); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(back) != "[2/1 3/1]" {
		t.Fatalf("given back: %v, want indexes 2 and 3 with count 1", back)
	}
	if s := b.Sub("t", "s"); s.Backlog != 1 {
		t.Fatalf("backlog %d, want the entry of the held indexes left", s.Backlog)
	}
	if v := b.CheckSettlement(); v != nil {
		t.Fatalf("invariants at the end: %v", v)
	}
}
