package scenarios_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"

	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The property check of transactions: generated scripts of a worker that
// receives input messages, acknowledges them plainly or in transactions,
// sends outputs plainly or in transactions, commits, aborts, lets
// transactions time out and crashes, checked against a model of Pulsar's
// rules:
//   - a message is received only when it is available: not acknowledged,
//     not held by an open transaction's acknowledgement, not in the
//     worker's hands;
//   - its redelivery count is the aborts that gave it back since the last
//     consumer left (Shared and Key_Shared);
//   - a commit settles what its transaction acknowledged for good; an abort
//     or a timeout gives it back;
//   - a commit or abort of an ended transaction fails;
//   - in the end every input is settled once, and the output topic holds
//     every output sent, once, in order (pulsar-client-go leaves the
//     transaction out of its messages' metadata, so Pulsar delivers even an
//     aborted transaction's outputs once it ended).
// Against pulsarsim the settlement invariants are checked after every step.

type txnOpKind int

const (
	opReceive txnOpKind = iota
	opAck
	opAckTxn
	opSend
	opSendTxn
	opBegin
	opCommit
	opAbort
	opTimeout
	opCrash
)

func (k txnOpKind) String() string {
	return [...]string{"receive", "ack", "ack-txn", "send", "send-txn", "begin", "commit", "abort", "timeout", "crash"}[k]
}

type txnOp struct {
	Kind  txnOpKind
	Txn   int  // which transaction (begin order) for the transactional ops
	Short bool // begin: a transaction the script may let time out
}

func (o txnOp) String() string {
	switch o.Kind {
	case opAckTxn, opSendTxn, opCommit, opAbort:
		return fmt.Sprintf("%v(%d)", o.Kind, o.Txn)
	case opBegin:
		if o.Short {
			return "begin(short)"
		}
	}
	return o.Kind.String()
}

type txnCase struct {
	Type     pulsar.SubscriptionType
	Messages int
	Ops      []txnOp
}

func genTxnCase(t *rapid.T) txnCase {
	c := txnCase{
		Type:     rapid.SampledFrom([]pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared}).Draw(t, "type"),
		Messages: rapid.IntRange(1, 6).Draw(t, "messages"),
	}
	kind := rapid.SampledFrom([]txnOpKind{opReceive, opReceive, opReceive, opAck, opAckTxn, opAckTxn, opSend,
		opSendTxn, opBegin, opBegin, opCommit, opAbort, opTimeout, opCrash})
	for i := range rapid.IntRange(1, 16).Draw(t, "steps") {
		op := txnOp{Kind: kind.Draw(t, "op-"+strconv.Itoa(i)), Txn: rapid.IntRange(0, 2).Draw(t, "txn-"+strconv.Itoa(i))}
		if op.Kind == opBegin {
			op.Short = rapid.Bool().Draw(t, "short-"+strconv.Itoa(i))
		}
		c.Ops = append(c.Ops, op)
	}
	return c
}

// TestTransactionRulesHoldForAnyScript runs generated transaction scripts
// against pulsarsim, or the Pulsar at PULSAR_TXN_URL. Raise the cases with
// -rapid.checks=N.
func TestTransactionRulesHoldForAnyScript(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		runTxnCase(t, rt, genTxnCase(rt))
	})
}

// txnModel is what the model knows of one case.
type txnModel struct {
	acked   map[int]bool // settled for good
	hands   map[int]bool // received, not acknowledged
	holder  map[int]int  // acknowledged in an open transaction
	counts  map[int]int  // redelivery counts
	txns    []*modelTxn
	sent    []string // outputs in send order
	outSeq  int
	shortTO time.Duration
}

type modelTxn struct {
	txn   pulsar.Transaction
	open  bool // open at the broker, and usable
	short bool
}

func (m *txnModel) available(n int) []int {
	var out []int
	for i := range n {
		if _, held := m.holder[i]; !m.acked[i] && !m.hands[i] && !held {
			out = append(out, i)
		}
	}
	return out
}

// txnRun is one case in progress.
type txnRun struct {
	t    testing.TB
	rt   *rapid.T
	tg   *scenarios.Target
	c    pulsar.Client
	ctx  context.Context
	c0   txnCase
	in   string
	out  string
	cons pulsar.Consumer
	prod pulsar.Producer
	msgs map[int]pulsar.Message
	m    *txnModel
}

func runTxnCase(t *testing.T, rt *rapid.T, c txnCase) {
	tb, done := testkit.CaseTB(t, rt)
	defer done()
	tg := scenarios.NewTxnTarget(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := &txnRun{t: tb, rt: rt, tg: tg, c: tg.TxnClient(), ctx: ctx, c0: c, in: tg.Topic("txnprop-in"),
		out: tg.Topic("txnprop-out"), msgs: map[int]pulsar.Message{},
		m: &txnModel{acked: map[int]bool{}, hands: map[int]bool{}, holder: map[int]int{}, counts: map[int]int{},
			shortTO: 5 * time.Second}}
	p := producerFor(tb, r.c, r.in)
	for i := range c.Messages {
		send(tb, p, fmt.Sprintf("in-%d", i), nil)
	}
	r.prod = producerFor(tb, r.c, r.out)
	r.subscribe()
	for i, op := range c.Ops {
		r.step(op)
		r.checkSim(fmt.Sprintf("after step %d (%v)", i, op))
	}
	r.finish()
}

func (r *txnRun) subscribe() {
	cons, err := r.c.Subscribe(pulsar.ConsumerOptions{Topic: r.in, SubscriptionName: "worker", Type: r.c0.Type,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, AckWithResponse: true})
	if err != nil {
		r.rt.Fatal(err)
	}
	r.cons = cons
}

func (r *txnRun) checkSim(when string) {
	if b := r.tg.Inspect(); b != nil {
		if v := b.CheckSettlement(); v != nil {
			r.rt.Fatalf("%s: invariants broken: %v", when, v)
		}
	}
}

// pick returns the n-th (modulo) of a set's members, in order.
func pick(set map[int]bool, n int) (int, bool) {
	var keys []int
	for k, ok := range set {
		if ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return 0, false
	}
	slices.Sort(keys)
	return keys[n%len(keys)], true
}

// txn returns the transaction an op names, if it exists and is open.
func (r *txnRun) openTxn(i int) *modelTxn {
	if i < len(r.m.txns) && r.m.txns[i].open {
		return r.m.txns[i]
	}
	return nil
}

func (r *txnRun) step(op txnOp) {
	m := r.m
	switch op.Kind {
	case opReceive:
		r.receive()
	case opAck:
		if i, ok := pick(m.hands, op.Txn); ok {
			if err := r.cons.Ack(r.msgs[i]); err != nil {
				r.rt.Fatalf("ack in-%d: %v", i, err)
			}
			delete(m.hands, i)
			m.acked[i] = true
		}
	case opAckTxn:
		tx := r.openTxn(op.Txn)
		i, ok := pick(m.hands, op.Txn)
		if tx == nil || !ok {
			return
		}
		if err := r.cons.AckWithTxn(r.msgs[i], tx.txn); err != nil {
			r.rt.Fatalf("ack in-%d in %d: %v", i, op.Txn, err)
		}
		delete(m.hands, i)
		m.holder[i] = op.Txn
	case opSend, opSendTxn:
		var txn pulsar.Transaction
		if op.Kind == opSendTxn {
			tx := r.openTxn(op.Txn)
			if tx == nil {
				return
			}
			txn = tx.txn
		}
		payload := fmt.Sprintf("out-%d", m.outSeq)
		m.outSeq++
		if _, err := r.prod.Send(r.ctx, &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn}); err != nil {
			r.rt.Fatalf("send %s: %v", payload, err)
		}
		m.sent = append(m.sent, payload)
	case opBegin:
		timeout := time.Minute
		if op.Short {
			timeout = m.shortTO
		}
		txn, err := r.c.NewTransaction(timeout)
		if err != nil {
			r.rt.Fatal(err)
		}
		m.txns = append(m.txns, &modelTxn{txn: txn, open: true, short: op.Short})
	case opCommit, opAbort:
		r.end(op)
	case opTimeout:
		r.timeout()
	case opCrash:
		r.cons.Close()
		// The last consumer leaving: what it held goes back, and the
		// broker forgets every count.
		clear(m.hands)
		clear(m.counts)
		r.subscribe()
	}
}

// receive takes the next message when the model says one is available.
func (r *txnRun) receive() {
	m := r.m
	avail := m.available(r.c0.Messages)
	if len(avail) == 0 {
		return
	}
	msg, err := r.cons.Receive(r.ctx)
	if err != nil {
		r.rt.Fatalf("receive (available %v): %v", avail, err)
	}
	i, _ := strconv.Atoi(strings.TrimPrefix(string(msg.Payload()), "in-"))
	if !slices.Contains(avail, i) {
		r.rt.Fatalf("received in-%d, which is not available (available %v, acked %v, held %v, in hands %v)",
			i, avail, m.acked, m.holder, m.hands)
	}
	if got := int(msg.RedeliveryCount()); got != m.counts[i] {
		r.rt.Fatalf("in-%d came with redelivery count %d, want %d", i, got, m.counts[i])
	}
	m.hands[i] = true
	r.msgs[i] = msg
}

// end commits or aborts a transaction.
func (r *txnRun) end(op txnOp) {
	m := r.m
	if op.Txn >= len(m.txns) {
		return
	}
	tx := m.txns[op.Txn]
	var err error
	if op.Kind == opCommit {
		err = tx.txn.Commit(r.ctx)
	} else {
		err = tx.txn.Abort(r.ctx)
	}
	if !tx.open {
		if err == nil {
			r.rt.Fatalf("%v of an ended transaction succeeded", op)
		}
		return
	}
	if err != nil {
		r.rt.Fatalf("%v: %v", op, err)
	}
	tx.open = false
	r.settle(op.Txn, op.Kind == opCommit)
}

// settle applies the end of transaction k to the model.
func (r *txnRun) settle(k int, commit bool) {
	m := r.m
	for i, h := range m.holder {
		if h != k {
			continue
		}
		delete(m.holder, i)
		if commit {
			m.acked[i] = true
		} else {
			m.counts[i]++
		}
	}
}

// timeout lets every open short transaction time out: the broker clock
// jumps past their timeout on pulsarsim; against a real Pulsar the case
// waits for it.
func (r *txnRun) timeout() {
	m := r.m
	var due []int
	for k, tx := range m.txns {
		if tx.open && tx.short {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return
	}
	if b := r.tg.Inspect(); b != nil {
		b.Advance(m.shortTO + time.Second)
		for _, k := range due {
			b.WaitTransaction(r.ctx, testkit.TxnIDOf(m.txns[k].txn), testkit.TxnStatusAborted)
		}
	} else {
		time.Sleep(m.shortTO + 2*time.Second) // the real broker's own timer
	}
	for _, k := range due {
		m.txns[k].open = false
		r.settle(k, false)
	}
}

// finish aborts what is open, takes and acknowledges every input left, and
// reads the outputs.
func (r *txnRun) finish() {
	m := r.m
	for k, tx := range m.txns {
		if tx.open {
			r.end(txnOp{Kind: opAbort, Txn: k})
		}
	}
	for i := range m.hands {
		if err := r.cons.Ack(r.msgs[i]); err != nil {
			r.rt.Fatal(err)
		}
		m.acked[i] = true
	}
	clear(m.hands)
	for len(m.available(r.c0.Messages)) > 0 {
		r.receive()
		for i := range m.hands {
			if err := r.cons.Ack(r.msgs[i]); err != nil {
				r.rt.Fatal(err)
			}
			m.acked[i] = true
		}
		clear(m.hands)
	}
	r.checkSim("at the end")
	if got := nextIs(r.t, r.ctx, producerFor(r.t, r.c, r.in), r.cons); got != "sentinel" {
		r.rt.Fatalf("every input was settled, yet %s came again", got)
	}
	outputs := readUntilSentinel(r.t, r.ctx, r.tg, r.prod, r.out)
	if want := append(slices.Clone(m.sent), "sentinel"); !slices.Equal(outputs, want) {
		r.rt.Fatalf("outputs %v, want %v", outputs, want)
	}
}
