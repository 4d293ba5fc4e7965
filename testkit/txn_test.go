package testkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

func txnCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTransactionsShowWhatEachProducedAndAcked consumes, transforms and
// produces in one transaction with a real client, and reads the broker's
// record of it before and after the commit.
func TestTransactionsShowWhatEachProducedAndAcked(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := txnCtx(t)
	c := b.TxnClient()
	in := b.Publish("in", testkit.ProducerMessage{Payload: []byte("order")})
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "in", SubscriptionName: "worker",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "out", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	txn, err := c.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: append([]byte("done "), m.Payload()...), Transaction: txn})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, txn); err != nil {
		t.Fatal(err)
	}
	id := testkit.TxnIDOf(txn)
	open := b.Transaction(id)
	if open.Status != "OPEN" || len(open.Produced) != 1 || open.Produced[0].ID.Entry != out.EntryID() ||
		len(open.Acked) != 1 || open.Acked[0].ID != in[0] || open.Acked[0].Subscription != "worker" {
		t.Fatalf("open transaction: %+v", open)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.Transaction(id); got.Status != "COMMITTED" || got.Ended.IsZero() {
		t.Fatalf("committed transaction: %+v", got)
	}
	b.WaitBacklog(ctx, "in", "worker", 0)
	kinds := map[testkit.EventKind]int{}
	for _, ev := range b.Events() {
		if ev.Txn != nil && *ev.Txn == id {
			kinds[ev.Kind]++
		}
	}
	for _, k := range []testkit.EventKind{testkit.EventTxnOpened, testkit.EventPublished, testkit.EventTxnAcked,
		testkit.EventAcked, testkit.EventTxnCommitted} {
		if kinds[k] == 0 {
			t.Errorf("no %s event of the transaction (saw %v)", k, kinds)
		}
	}
	txnName := id.String()
	for _, want := range []struct{ topic, text string }{
		{"in", "in transaction " + txnName + ": held until it ends"},
		{"in", "acked on worker by the commit of transaction " + txnName},
		{"out", "published by " + prod.Name() + " in transaction " + txnName},
		{"out", "transaction " + txnName + " committed"},
	} {
		id := in[0]
		if want.topic == "out" {
			id = testkit.MessageID{Ledger: out.LedgerID(), Entry: out.EntryID()}
		}
		if tl := b.Timeline(want.topic, id); !strings.Contains(tl, want.text) {
			t.Errorf("timeline of %s lacks %q:\n%s", want.topic, want.text, tl)
		}
	}
}

// pulsar-client-go leaves a transaction whose commit failed (other than
// TransactionNotFound or InvalidTxnStatus) committing on its side, so it
// cannot retry: the broker, which never saw the commit, aborts it at its
// timeout.
func TestAFailedCommitLeavesTheTransactionToItsTimeout(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := txnCtx(t)
	c := b.TxnClient()
	f := b.Fault(testkit.Fault{Command: "END_TXN", Count: 1, Error: testkit.ServerErrorServiceNotReady})
	txn, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var perr *pulsar.Error
	if err := txn.Commit(ctx); !errors.As(err, &perr) || perr.Result() != pulsar.UnknownError {
		t.Fatalf("the failed commit: %v", err)
	}
	if f.Fired() != 1 {
		t.Fatalf("fired %d times", f.Fired())
	}
	if got := b.Transaction(testkit.TxnIDOf(txn)); got.Status != testkit.TxnStatusOpen {
		t.Fatalf("after the failed commit: %s", got.Status)
	}
	b.Advance(time.Minute + time.Second)
	if got := b.WaitTransaction(ctx, testkit.TxnIDOf(txn), testkit.TxnStatusAborted); !got.TimedOut {
		t.Fatalf("at its timeout: %+v", got)
	}
}

func TestAHeldCommitKeepsTheMessagesBackUntilReleased(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := txnCtx(t)
	c := b.TxnClient()
	b.CreateSubscription("t", "s", testkit.Earliest)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	txn, err := c.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x"), Transaction: txn}); err != nil {
		t.Fatal(err)
	}
	h := b.Hold(testkit.Fault{Command: "END_TXN"})
	done := make(chan error, 1)
	go func() { done <- txn.Commit(context.Background()) }()
	held := b.NextHeld(ctx, h)
	if got := b.Transaction(testkit.TxnIDOf(txn)); got.Status != testkit.TxnStatusOpen {
		t.Fatalf("while the commit is held: %s", got.Status)
	}
	b.Release(ctx, held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if m, err := cons.Receive(ctx); err != nil || string(m.Payload()) != "x" {
		t.Fatalf("after the release: %v %v", m, err)
	}
}

func TestASeededTransactionTimesOutWhenTheClockAdvances(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	ctx := txnCtx(t)
	id := b.NewTransaction(10 * time.Second)
	b.PublishInTransaction(id, "t", testkit.ProducerMessage{Payload: []byte("x")})
	b.Advance(9 * time.Second)
	if got := b.Transaction(id); got.Status != testkit.TxnStatusOpen {
		t.Fatalf("before its timeout: %s", got.Status)
	}
	b.Advance(2 * time.Second)
	if got := b.WaitTransaction(ctx, id, testkit.TxnStatusAborted); !got.TimedOut {
		t.Fatalf("after its timeout: %+v", got)
	}
}
