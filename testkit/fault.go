package testkit

import (
	"context"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Fault puts f in force on the broker (see broker.Fault: a command kind,
// optionally scoped to a topic, subscription, consumer or producer, answered
// with an error, delayed, dropped with its connection, or only counted) and
// returns its handle. The fault is removed when the test ends. Fault fails
// the test when the broker refuses f.
func (b *Broker) Fault(f broker.Fault) *broker.FaultHandle {
	b.tb.Helper()
	h, err := b.srv.AddFault(f)
	if err != nil {
		b.tb.Fatalf("pulsarsim: fault: %v", err)
	}
	b.tb.Cleanup(h.Remove)
	return h
}

// WaitFired blocks until the fault has fired n times. It fails the test when
// ctx ends first, or the fault was removed or retired after its Count.
func (b *Broker) WaitFired(ctx context.Context, h *broker.FaultHandle, n int) {
	b.tb.Helper()
	if err := h.Wait(ctx, n); err != nil {
		b.tb.Fatalf("pulsarsim: waiting for a fault to fire %d times (fired %d): %v", n, h.Fired(), err)
	}
}

// FailNext makes the next n commands of a kind fail with code, from any
// connection; see broker.Broker.FailNext. Fault scopes a failure to a topic,
// subscription, consumer or producer.
func (b *Broker) FailNext(kind string, n int, code broker.ServerError) error {
	return b.srv.FailNext(kind, n, code)
}

// DelayReplies delays the handling of each command of a kind by d; 0 removes
// the delay. See broker.Broker.DelayReplies.
func (b *Broker) DelayReplies(kind string, d time.Duration) error {
	return b.srv.DelayReplies(kind, d)
}
