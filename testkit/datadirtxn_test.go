package testkit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// transactionStatus returns the status the broker gives a transaction,
// "" when it does not know it.
func transactionStatus(b *testkit.Broker, tx pulsar.Transaction) testkit.TxnStatus {
	id := tx.GetTxnID()
	for _, t := range b.Transactions() {
		if t.ID.Most == id.MostSigBits && t.ID.Least == id.LeastSigBits {
			return t.Status
		}
	}
	return ""
}

// Transactions open when the broker stops or crashes are open after it
// starts again on its data directory, as Pulsar's coordinator recovers them
// from its log and each subscription its pending acks from its store:
// until they end, their messages hold back what follows and what they
// acknowledged is held; committed then, a transaction's messages are
// delivered and what it acknowledged stays acknowledged; aborted, what it
// acknowledged comes back; one nobody ends is aborted by its timeout,
// counted from when it was opened.
func TestOpenTransactionsSurviveARestartAndACrashOnTheDataDir(t *testing.T) {
	for _, stop := range []string{"restart", "crash"} {
		t.Run(stop, func(t *testing.T) {
			clk := broker.NewManualClock(time.Now())
			b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithTransactions(),
				testkit.WithBroker(broker.WithClock(clk)))
			ctx := txnCtx(t)
			topic := "persistent://public/default/txn-" + stop
			c := b.Client(func(o *pulsar.ClientOptions) { o.EnableTransaction = true })
			defer c.Close()
			cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for _, m := range []string{"m0", "m1", "m2", "m3"} {
				if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(m)}); err != nil {
					t.Fatal(err)
				}
			}
			got := map[string]pulsar.Message{}
			for range 4 {
				m, err := cons.Receive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got[string(m.Payload())] = m
			}
			open := func(timeout time.Duration) pulsar.Transaction {
				tx, err := c.NewTransaction(timeout)
				if err != nil {
					t.Fatal(err)
				}
				return tx
			}
			// committed acknowledges m0 and produces "c"; aborted acknowledges
			// m1 and produces "a"; timedOut acknowledges m3 and runs out.
			committed, aborted, timedOut := open(time.Hour), open(time.Hour), open(time.Minute)
			for tx, m := range map[pulsar.Transaction]string{committed: "m0", aborted: "m1", timedOut: "m3"} {
				if err := cons.AckWithTxn(got[m], tx); err != nil {
					t.Fatal(err)
				}
			}
			for tx, m := range map[pulsar.Transaction]string{committed: "c", aborted: "a"} {
				if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(m), Transaction: tx}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")}); err != nil {
				t.Fatal(err)
			}
			if stop == "crash" {
				b.Crash()
			}
			b.Restart()

			for _, tx := range []pulsar.Transaction{committed, aborted, timedOut} {
				if s := transactionStatus(b, tx); s != testkit.TxnStatusOpen {
					t.Fatalf("transaction %v after the %s: %q, want it open", tx.GetTxnID(), stop, s)
				}
			}
			// m2 was never acknowledged: it comes back. The open
			// transactions hold m0, m1 and m3, and their messages hold back
			// "after".
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Payload()) != "m2" {
				t.Fatalf("first after the %s: %q, want m2 (m0, m1, m3 held by open transactions)", stop, m.Payload())
			}
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
			if err := aborted.Abort(ctx); err != nil {
				t.Fatalf("abort after the %s: %v", stop, err)
			}
			if err := committed.Commit(ctx); err != nil {
				t.Fatalf("commit after the %s: %v", stop, err)
			}
			// pulsar-client-go v0.19.0 names a message's transaction in its
			// SEND only, and Pulsar's dispatcher looks for aborted ones in
			// the metadata: the aborted transaction's "a" is delivered too,
			// as Pulsar delivers it (FIDELITY.md, Transactions), once the
			// max read position is past it.
			var rest []string
			for range 4 {
				m, err := cons.Receive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				rest = append(rest, string(m.Payload()))
				if err := cons.Ack(m); err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(rest)
			if want := []string{"a", "after", "c", "m1"}; !slices.Equal(rest, want) {
				t.Fatalf("after the commit and the abort: %v, want %v (both transactions' messages, m1 given back by "+
					"the abort, the message behind them; not m0, which the commit acknowledged)", rest, want)
			}
			if s := transactionStatus(b, timedOut); s != testkit.TxnStatusOpen {
				t.Fatalf("the transaction with a minute's timeout before its minute: %q", s)
			}
			clk.Advance(2 * time.Minute)
			b.RunTimers()
			if s := transactionStatus(b, timedOut); s != testkit.TxnStatusAborted {
				t.Fatalf("the transaction past its timeout: %q, want it aborted by the timeout", s)
			}
			m, err = cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Payload()) != "m3" {
				t.Fatalf("after the timeout: %q, want m3 given back", m.Payload())
			}
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
			b.WaitBacklog(ctx, topic, "s", 0)
		})
	}
}
