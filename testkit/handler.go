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

// handlerCall is what a handler did with the delivery it is handling.
type handlerCall struct {
	key           string
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

func (r *recordingConsumer) Ack(m pulsar.Message) error { return r.answer(m.ID(), r.Consumer.Ack(m)) }

func (r *recordingConsumer) AckID(id pulsar.MessageID) error {
	return r.answer(id, r.Consumer.AckID(id))
}

func (r *recordingConsumer) AckIDList(ids []pulsar.MessageID) error {
	err := r.Consumer.AckIDList(ids)
	for _, id := range ids {
		r.answer(id, err)
	}
	return err
}

func (r *recordingConsumer) AckWithTxn(m pulsar.Message, txn pulsar.Transaction) error {
	return r.answer(m.ID(), r.Consumer.AckWithTxn(m, txn))
}

// AckCumulative and AckIDCumulative count as an answer for the message they
// name only: the messages before it that the handler never acked are not
// acked by it (a loss, when the handler failed them).
func (r *recordingConsumer) AckCumulative(m pulsar.Message) error {
	return r.answer(m.ID(), r.Consumer.AckCumulative(m))
}

func (r *recordingConsumer) AckIDCumulative(id pulsar.MessageID) error {
	return r.answer(id, r.Consumer.AckIDCumulative(id))
}

func (r *recordingConsumer) Nack(m pulsar.Message) {
	r.Consumer.Nack(m)
	r.d.observe(r.inc, MessageKey(m.ID()), false)
}

func (r *recordingConsumer) NackID(id pulsar.MessageID) {
	r.Consumer.NackID(id)
	r.d.observe(r.inc, MessageKey(id), false)
}

func (r *recordingConsumer) answer(id pulsar.MessageID, err error) error {
	if err == nil {
		r.d.observe(r.inc, MessageKey(id), true)
	}
	return err
}

// observe records an ack (acked) or a nack of a message by inc's handler:
// for the delivery being handled when it is that message's, else for the
// message's last delivery.
func (d *Driver) observe(inc *incarnation, key string, acked bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := inc.call; c != nil && c.key == key {
		c.acked = c.acked || acked
		c.nacked = c.nacked || !acked
		return
	}
	i, ok := d.lastOf[key]
	if !ok {
		return
	}
	del := &d.deliveries[i]
	switch {
	case acked:
		del.Acked = true
		if del.Outcome == NoAnswer {
			del.Outcome = Ack
		}
	case del.Outcome == NoAnswer:
		del.Outcome = Nack
	}
}

// runHandler hands one delivery to the handler and returns what it did
// with it. A panic is a crash.
func (d *Driver) runHandler(inc *incarnation, m pulsar.Message) (outcome Outcome, acked bool) {
	call := &handlerCall{key: MessageKey(m.ID())}
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
		d.mu.Unlock()
		if _, scripted := r.(scriptedCrash); r != nil && !scripted {
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
