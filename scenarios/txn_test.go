package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Transactions, as a consume-transform-produce worker uses them with
// pulsar-client-go. Each scenario returns what the client saw (txnTrace),
// asserts Pulsar's rules on it, and TestTransactionsMatchPulsar runs every
// one against pulsarsim and a real Pulsar with transactionCoordinatorEnabled
// (PULSAR_TXN_URL) and compares the traces.

// txnTrace is what a client sees of a transaction scenario, one line a
// fact: messages by payload, redelivery counts, outcomes of commits and
// acks (error kinds only: messages name run-specific topics).
type txnTrace []string

func (tr *txnTrace) add(format string, args ...any) { *tr = append(*tr, fmt.Sprintf(format, args...)) }

// errKind reduces a client error to what both brokers share: "ok", the
// server error of an ack response, the result of a client error.
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "ack response error: "); ok {
		kind, _, _ := strings.Cut(rest, ":")
		return kind
	}
	return "error"
}

type txnScenario struct {
	name string
	run  func(t *testing.T, tg *scenarios.Target) txnTrace
	want txnTrace // nil: checked by run itself
}

var txnScenarios = []txnScenario{
	{"consume-transform-produce exactly once", consumeTransformProduce, txnTrace{
		"output [out-0 out-1 out-2 out-3 out-4]", "next input on the worker's subscription: sentinel"}},
	{"crash before commit", crashBeforeCommit, txnTrace{
		"output readable while the transaction is open: false", "input back: in-0 count 1",
		"output after the abort: [out-0 sentinel]"}},
	{"abort gives the acked messages back (Shared)", abortGivesBack(pulsar.Shared), txnTrace{
		"acks: [ok ok ok]", "abort: ok", "back: [in-0/1 in-1/1 in-2/1]", "next: sentinel"}},
	{"abort gives the acked messages back (Key_Shared)", abortGivesBack(pulsar.KeyShared), txnTrace{
		"acks: [ok ok ok]", "abort: ok", "back: [in-0/1 in-1/1 in-2/1]", "next: sentinel"}},
	{"abort gives the acked messages back (Exclusive)", abortGivesBack(pulsar.Exclusive), txnTrace{
		"acks: [ok ok ok]", "abort: ok", "back: [in-0/0 in-1/0 in-2/0]", "next: sentinel"}},
	{"abort gives the acked messages back (Failover)", abortGivesBack(pulsar.Failover), txnTrace{
		"acks: [ok ok ok]", "abort: ok", "back: [in-0/0 in-1/0 in-2/0]", "next: sentinel"}},
	{"timeout aborts", timeoutAborts, txnTrace{
		"ack in the transaction: ok", "input back after the timeout: in-0 count 1", "commit: error"}},
	{"conflicting acks", conflictingAcks, txnTrace{
		"ack in the first: ok", "ack in the second: TransactionConflict", "commit of the second: error",
		"commit of the first: ok", "next: sentinel"}},
}

func TestTransactionScenarios(t *testing.T) {
	for _, sc := range txnScenarios {
		t.Run(sc.name, func(t *testing.T) {
			tg := scenarios.NewTxnTarget(t)
			got := sc.run(t, tg)
			if diff := cmp.Diff(sc.want, got); diff != "" {
				t.Errorf("trace (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTransactionsMatchPulsar runs every transaction scenario against
// pulsarsim and against the Pulsar at PULSAR_TXN_URL, and compares what the
// client saw.
func TestTransactionsMatchPulsar(t *testing.T) {
	url := os.Getenv("PULSAR_TXN_URL")
	if url == "" {
		t.Skip("set PULSAR_TXN_URL to a Pulsar with transactionCoordinatorEnabled=true (scripts/real-pulsar --transactions)")
	}
	for _, sc := range txnScenarios {
		t.Run(sc.name, func(t *testing.T) {
			real := sc.run(t, scenarios.RemoteTarget(t, url, os.Getenv("PULSAR_TXN_ADMIN_URL")))
			sim := sc.run(t, scenarios.SimTarget(t, txnSimOptions()...))
			if diff := cmp.Diff(real, sim); diff != "" {
				t.Errorf("pulsarsim differs from Pulsar (-pulsar +pulsarsim):\n%s", diff)
			}
		})
	}
}

// receiveIn receives the next message or fails the test.
func receiveIn(t testing.TB, ctx context.Context, c pulsar.Consumer) pulsar.Message {
	t.Helper()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return m
}

func newTxnIn(t testing.TB, c pulsar.Client, timeout time.Duration) pulsar.Transaction {
	t.Helper()
	txn, err := c.NewTransaction(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return txn
}

func producerFor(t testing.TB, c pulsar.Client, topic string) pulsar.Producer {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func send(t testing.TB, p pulsar.Producer, payload string, txn pulsar.Transaction) {
	t.Helper()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn}); err != nil {
		t.Fatalf("send %s: %v", payload, err)
	}
}

// nextIs produces a sentinel to topic and says what the consumer gets
// next: "sentinel" when nothing was left before it.
func nextIs(t testing.TB, ctx context.Context, p pulsar.Producer, c pulsar.Consumer) string {
	t.Helper()
	send(t, p, "sentinel", nil)
	m := receiveIn(t, ctx, c)
	c.Ack(m)
	return string(m.Payload())
}

// readUntilSentinel produces a sentinel to topic and reads the topic from
// the start up to it.
func readUntilSentinel(t testing.TB, ctx context.Context, tg *scenarios.Target, p pulsar.Producer, topic string) []string {
	t.Helper()
	send(t, p, "sentinel", nil)
	r, err := tg.Client().CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("reading %s up to the sentinel: %v (have %v)", topic, err, out)
		}
		out = append(out, string(m.Payload()))
		if string(m.Payload()) == "sentinel" {
			return out
		}
	}
}

func subscribeTo(t testing.TB, c pulsar.Client, topic string, typ pulsar.SubscriptionType) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "worker", Type: typ,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

// consumeTransformProduce: a worker takes each input, produces its output
// and acknowledges the input in one transaction, and commits. Every output
// is there once, and no input comes back.
func consumeTransformProduce(t *testing.T, tg *scenarios.Target) txnTrace {
	ctx := scenarios.Ctx(t)
	c := tg.TxnClient()
	in, out := tg.Topic("ctp-in"), tg.Topic("ctp-out")
	inProd, outProd := producerFor(t, c, in), producerFor(t, c, out)
	for i := range 5 {
		send(t, inProd, fmt.Sprintf("in-%d", i), nil)
	}
	worker := subscribeTo(t, c, in, pulsar.Shared)
	for range 5 {
		txn := newTxnIn(t, c, time.Minute)
		m := receiveIn(t, ctx, worker)
		send(t, outProd, "out-"+strings.TrimPrefix(string(m.Payload()), "in-"), txn)
		if err := worker.AckWithTxn(m, txn); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var tr txnTrace
	output := readUntilSentinel(t, ctx, tg, outProd, out)
	tr.add("output %v", output[:len(output)-1])
	tr.add("next input on the worker's subscription: %s", nextIs(t, ctx, inProd, worker))
	return tr
}

// crashBeforeCommit: the worker produces the output and acknowledges the
// input in a transaction, then dies before committing. Nothing of the
// output can be read while the transaction is open; at its timeout the
// input comes back to the next worker. pulsar-client-go v0.19.0 leaves the
// transaction out of its messages' metadata, so Pulsar delivers its aborted
// output after all (a client with the transaction in the metadata, such as
// Java's, never sees it: scenarios/clients).
func crashBeforeCommit(t *testing.T, tg *scenarios.Target) txnTrace {
	ctx := scenarios.Ctx(t)
	in, out := tg.Topic("crash-in"), tg.Topic("crash-out")
	setup := tg.TxnClient()
	inProd, outProd := producerFor(t, setup, in), producerFor(t, setup, out)
	send(t, inProd, "in-0", nil)

	doomed, err := pulsar.NewClient(pulsar.ClientOptions{URL: tg.URL, EnableTransaction: true, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	worker := subscribeTo(t, doomed, in, pulsar.Shared)
	txn := newTxnIn(t, doomed, 3*time.Second)
	m := receiveIn(t, ctx, worker)
	send(t, producerFor(t, doomed, out), "out-0", txn)
	if err := worker.AckWithTxn(m, txn); err != nil {
		t.Fatal(err)
	}
	doomed.Close() // the crash: no commit

	var tr txnTrace
	r, err := tg.Client().CreateReader(pulsar.ReaderOptions{Topic: out, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	tr.add("output readable while the transaction is open: %v", r.HasNext())
	r.Close()
	next := subscribeTo(t, setup, in, pulsar.Shared)
	back := receiveIn(t, ctx, next) // at the transaction's timeout
	tr.add("input back: %s count %d", back.Payload(), back.RedeliveryCount())
	next.Ack(back)
	tr.add("output after the abort: %v", readUntilSentinel(t, ctx, tg, outProd, out))
	return tr
}

// abortGivesBack: a consumer acknowledges three messages in a transaction
// that aborts; they come back, with their counts raised on Shared and
// Key_Shared, from a rewind with count 0 on Exclusive and Failover.
func abortGivesBack(typ pulsar.SubscriptionType) func(*testing.T, *scenarios.Target) txnTrace {
	return func(t *testing.T, tg *scenarios.Target) txnTrace {
		ctx := scenarios.Ctx(t)
		c := tg.TxnClient()
		in := tg.Topic("abort-in")
		inProd := producerFor(t, c, in)
		for i := range 3 {
			send(t, inProd, fmt.Sprintf("in-%d", i), nil)
		}
		cons := subscribeTo(t, c, in, typ)
		txn := newTxnIn(t, c, time.Minute)
		var acks []string
		for range 3 {
			acks = append(acks, errKind(cons.AckWithTxn(receiveIn(t, ctx, cons), txn)))
		}
		var tr txnTrace
		tr.add("acks: %v", acks)
		tr.add("abort: %s", errKind(txn.Abort(ctx)))
		var back []string
		for range 3 {
			m := receiveIn(t, ctx, cons)
			back = append(back, fmt.Sprintf("%s/%d", m.Payload(), m.RedeliveryCount()))
			cons.Ack(m)
		}
		tr.add("back: %v", back)
		tr.add("next: %s", nextIs(t, ctx, inProd, cons))
		return tr
	}
}

// timeoutAborts: a transaction nobody ends is aborted at its timeout: what
// it acknowledged comes back, and it cannot be committed any more.
func timeoutAborts(t *testing.T, tg *scenarios.Target) txnTrace {
	ctx := scenarios.Ctx(t)
	c := tg.TxnClient()
	in, out := tg.Topic("timeout-in"), tg.Topic("timeout-out")
	send(t, producerFor(t, c, in), "in-0", nil)
	cons := subscribeTo(t, c, in, pulsar.Shared)
	txn := newTxnIn(t, c, 2*time.Second)
	m := receiveIn(t, ctx, cons)
	send(t, producerFor(t, c, out), "out-0", txn)
	var tr txnTrace
	tr.add("ack in the transaction: %s", errKind(cons.AckWithTxn(m, txn)))
	back := receiveIn(t, ctx, cons) // comes back when the broker aborts it
	tr.add("input back after the timeout: %s count %d", back.Payload(), back.RedeliveryCount())
	// The client's own timer may or may not have marked it timed out yet:
	// either way the commit fails.
	tr.add("commit: %s", errKind(txn.Commit(ctx)))
	return tr
}

// conflictingAcks: two transactions acknowledge the same message; the
// broker refuses the second, and the first one's commit settles it.
func conflictingAcks(t *testing.T, tg *scenarios.Target) txnTrace {
	ctx := scenarios.Ctx(t)
	c := tg.TxnClient()
	in := tg.Topic("conflict-in")
	inProd := producerFor(t, c, in)
	send(t, inProd, "in-0", nil)
	cons := subscribeTo(t, c, in, pulsar.Shared)
	m := receiveIn(t, ctx, cons)
	first, second := newTxnIn(t, c, time.Minute), newTxnIn(t, c, time.Minute)
	var tr txnTrace
	tr.add("ack in the first: %s", errKind(cons.AckWithTxn(m, first)))
	tr.add("ack in the second: %s", errKind(cons.AckWithTxn(m, second)))
	tr.add("commit of the second: %s", errKind(second.Commit(ctx)))
	tr.add("commit of the first: %s", errKind(first.Commit(ctx)))
	tr.add("next: %s", nextIs(t, ctx, inProd, cons))
	return tr
}

// txnSimOptions are the options of the pulsarsim broker compared with a
// real one.
func txnSimOptions() []testkit.Option { return []testkit.Option{testkit.WithTransactions()} }
