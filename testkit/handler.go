package testkit

import (
	"fmt"
	"runtime/debug"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Handler is a consumer's message handler, the code under test: it gets
// each message with the consumer it came from, and acks it, nacks it, or
// leaves it unanswered.
type Handler func(c pulsar.Consumer, m pulsar.Message)

// handlerCall is what a handler did with the delivery it is handling
// (deliveries[idx]).
type handlerCall struct {
	key           string
	idx           int
	acked, nacked bool
}

// recordingConsumer is the consumer a Handler gets: the real one, with its
// acks and nacks recorded by the driver. An ack counts when it returned no
// error (the driver's consumers ack with a response from the broker).
type recordingConsumer struct {
	pulsar.Consumer
	d   *Driver
	inc *incarnation
}

func (r *recordingConsumer) Ack(m pulsar.Message) error {
	return r.answer(m.ID(), func() error { return r.Consumer.Ack(m) })
}

func (r *recordingConsumer) AckID(id pulsar.MessageID) error {
	return r.answer(id, func() error { return r.Consumer.AckID(id) })
}

func (r *recordingConsumer) AckIDList(ids []pulsar.MessageID) error {
	var undo []func()
	for _, id := range ids {
		undo = append(undo, r.d.observe(r.inc, MessageKey(id), true))
	}
	err := r.Consumer.AckIDList(ids)
	if err != nil {
		for _, u := range undo {
			u()
		}
	}
	return err
}

func (r *recordingConsumer) AckWithTxn(m pulsar.Message, txn pulsar.Transaction) error {
	return r.answer(m.ID(), func() error { return r.Consumer.AckWithTxn(m, txn) })
}

// AckCumulative and AckIDCumulative count as an answer for the message they
// name only: the messages before it that the handler never acked are not
// acked by it (a loss, when the handler failed them).
func (r *recordingConsumer) AckCumulative(m pulsar.Message) error {
	return r.answer(m.ID(), func() error { return r.Consumer.AckCumulative(m) })
}

func (r *recordingConsumer) AckIDCumulative(id pulsar.MessageID) error {
	return r.answer(id, func() error { return r.Consumer.AckIDCumulative(id) })
}

func (r *recordingConsumer) Nack(m pulsar.Message) {
	r.Consumer.Nack(m)
	r.d.observe(r.inc, MessageKey(m.ID()), false)
}

func (r *recordingConsumer) NackID(id pulsar.MessageID) {
	r.Consumer.NackID(id)
	r.d.observe(r.inc, MessageKey(id), false)
}

// answer records an ack of id before it is sent (so that the broker cannot
// settle the message before the driver knows of the ack), sends it, and
// takes the record back when the ack failed.
func (r *recordingConsumer) answer(id pulsar.MessageID, send func() error) error {
	undo := r.d.observe(r.inc, MessageKey(id), true)
	err := send()
	if err != nil {
		undo()
	}
	return err
}

// observe records an ack (acked) or a nack of a message by inc's handler:
// for the delivery being handled when it is that message's, else for the
// message's last delivery. It returns what undoes the record.
func (d *Driver) observe(inc *incarnation, key string, acked bool) (undo func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, ok := d.lastOf[key]
	c := inc.call
	current := c != nil && c.key == key
	if current {
		i, ok = c.idx, true
	}
	if !ok {
		return func() {}
	}
	del := &d.deliveries[i]
	was := *del
	var wasCall handlerCall
	if current {
		wasCall = *c
		c.acked = c.acked || acked
		c.nacked = c.nacked || !acked
	}
	switch {
	case acked:
		del.Acked = true
		if del.Outcome == NoAnswer || current {
			del.Outcome = Ack
		}
	case del.Outcome == NoAnswer:
		del.Outcome = Nack
	}
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.deliveries[i].Outcome, d.deliveries[i].Acked = was.Outcome, was.Acked
		if current {
			*c = wasCall
		}
	}
}

// runHandler hands delivery idx to the handler and returns what it did
// with it. A panic is a crash.
func (d *Driver) runHandler(inc *incarnation, m pulsar.Message, idx int) (outcome Outcome, acked bool) {
	call := &handlerCall{key: MessageKey(m.ID()), idx: idx}
	d.mu.Lock()
	inc.call = call
	d.mu.Unlock()
	defer func() {
		r := recover()
		d.mu.Lock()
		inc.call = nil
		if r != nil {
			// An ack sent before the crash still counts.
			outcome, acked = Crash, call.acked
		}
		first := r != nil && !d.panicked
		if _, scripted := r.(scriptedCrash); scripted {
			first = false
		}
		if first {
			d.panicked = true
		}
		d.mu.Unlock()
		// Reported once: a handler that panics on a message panics again
		// on each redelivery of it.
		switch u, isUnindexed := r.(unindexed); {
		case first && isUnindexed:
			d.tb.Errorf("pulsarsim driver: %v", u)
		case first:
			d.tb.Errorf("pulsarsim driver: the handler panicked on %s: %v\n%s", call.key, r, debug.Stack())
		}
	}()
	d.opts.Handler(inc.rec, m)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case call.acked:
		return Ack, true
	case call.nacked:
		return Nack, false
	}
	return NoAnswer, false
}

// String describes a delivery on one line.
func (del Delivery) String() string {
	acked := ""
	if del.Outcome == Ack && !del.Acked {
		acked = " (ack failed)"
	}
	return fmt.Sprintf("%s to %s (count %d, attempt %d): %s%s", del.ID, del.Consumer, del.RedeliveryCount, del.Attempt, del.Outcome, acked)
}
