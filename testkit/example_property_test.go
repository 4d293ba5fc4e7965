package testkit_test

import (
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// Worker is the code under test in this example: a consumer's handler that
// saves each message to a store and acks it, or nacks it when the store
// fails, so that it comes again.
type Worker struct {
	Store interface{ Do(pulsar.Message) error }
	saved sync.Map // message index -> true
}

// Handle is the Worker's handler.
func (w *Worker) Handle(c pulsar.Consumer, m pulsar.Message) {
	if err := w.Store.Do(m); err != nil {
		c.Nack(m)
		return
	}
	w.saved.Store(testkit.MessageIndex(m), true)
	c.Ack(m)
}

// Saved reports whether message i was saved.
func (w *Worker) Saved(i int) bool { _, ok := w.saved.Load(i); return ok }

// TestWorkerLosesNoMessage is the example of a property check of your own
// consumer (the README's "Property checks of your own consumer"). rapid
// generates the subscription type, consumers, messages, dead-letter policy,
// the store's failures and crashes, and broker faults; CheckHandler runs the
// Worker through them on a fresh topic, waits until everything is settled,
// and fails the case if a message was lost or a settlement invariant broke;
// the loop adds the Worker's own rule. A failing case shrinks to a small one,
// which rapid prints.
func TestWorkerLosesNoMessage(t *testing.T) {
	b := testkit.Start(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := testkit.HandlerCases().Draw(rt, "case") // type, consumers, messages, dead letters, failures, faults
		w := &Worker{Store: c.Script.Flaky()}        // the store fails where the case's script says
		run := b.CheckHandler(rt, c, w.Handle)       // nothing lost, invariants hold
		for i := range run.Acked() {
			if !w.Saved(i) {
				rt.Fatalf("message %d acked but never saved", i)
			}
		}
	})
}
