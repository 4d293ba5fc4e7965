package testkit

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Transactions: start the broker with the coordinator on, inspect open and
// ended transactions, seed them without a client, wait for them to end.

// WithTransactions turns the broker's transaction coordinator on
// (transactionCoordinatorEnabled), off by default as in a Pulsar
// standalone. Clients then use pulsar.ClientOptions.EnableTransaction;
// TxnClient is a shortcut.
func WithTransactions() Option { return WithBroker(broker.WithTransactions(true)) }

// TxnClient returns a client (as Client does) with transactions enabled.
func (b *Broker) TxnClient(opts ...func(*pulsar.ClientOptions)) pulsar.Client {
	b.tb.Helper()
	return b.Client(append([]func(*pulsar.ClientOptions){func(o *pulsar.ClientOptions) {
		o.EnableTransaction = true
	}}, opts...)...)
}

// Transactions returns what the broker knows of every transaction, open
// and ended (the newest broker.DefaultTxnHistory ended ones), in id order:
// each one's state, the partitions and subscriptions it registered, the
// messages it produced and those it acknowledged.
func (b *Broker) Transactions() []Transaction { return b.srv.Transactions() }

// Transaction returns one transaction; it fails the test when the broker
// does not know it.
func (b *Broker) Transaction(id TxnID) Transaction {
	b.tb.Helper()
	t, ok := b.srv.Transaction(id)
	if !ok {
		b.tb.Fatalf("pulsarsim: no transaction %v", id)
	}
	return t
}

// TxnIDOf returns the broker's id of a client's transaction.
func TxnIDOf(t pulsar.Transaction) TxnID {
	id := t.GetTxnID()
	return TxnID{Most: id.MostSigBits, Least: id.LeastSigBits}
}

// NewTransaction opens a transaction without a client, with a timeout on
// the broker clock (Advance moves it).
func (b *Broker) NewTransaction(timeout time.Duration) TxnID {
	b.tb.Helper()
	id, err := b.srv.NewTransaction(timeout)
	if err != nil {
		b.tb.Fatalf("pulsarsim: new transaction: %v", err)
	}
	return id
}

// PublishInTransaction stores msgs on topic in transaction id (one entry
// each) and returns their ids; consumers get them once it commits.
func (b *Broker) PublishInTransaction(id TxnID, topic string, msgs ...ProducerMessage) []MessageID {
	b.tb.Helper()
	ids, err := b.srv.PublishInTransaction(id, topic, msgs...)
	if err != nil {
		b.tb.Fatalf("pulsarsim: publish to %s in %v: %v", topic, id, err)
	}
	return ids
}

// CommitTransaction commits a transaction as a client's commit does; it
// fails the test on error.
func (b *Broker) CommitTransaction(id TxnID) {
	b.tb.Helper()
	if err := b.srv.CommitTransaction(id); err != nil {
		b.tb.Fatalf("pulsarsim: commit %v: %v", id, err)
	}
}

// AbortTransaction aborts a transaction as a client's abort does; it fails
// the test on error.
func (b *Broker) AbortTransaction(id TxnID) {
	b.tb.Helper()
	if err := b.srv.AbortTransaction(id); err != nil {
		b.tb.Fatalf("pulsarsim: abort %v: %v", id, err)
	}
}

// WaitTransaction blocks until transaction id is in status
// (TxnStatusCommitted, TxnStatusAborted…) and returns it.
func (b *Broker) WaitTransaction(ctx context.Context, id TxnID, status TxnStatus) Transaction {
	b.tb.Helper()
	var last Transaction
	err := b.waitFor(ctx, func() bool {
		t, ok := b.srv.Transaction(id)
		last = t
		return ok && t.Status == status
	})
	if err != nil {
		b.tb.Fatalf("pulsarsim: waiting for transaction %v to be %s (it is %q): %v", id, status, last.Status, err)
	}
	return last
}
