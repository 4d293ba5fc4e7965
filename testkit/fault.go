package testkit

import (
	"context"
	"time"
)

// Fault puts f in force on the broker (see Fault: a command kind,
// optionally scoped to a topic, subscription, consumer or producer, answered
// with an error, delayed, dropped with its connection, or only counted) and
// returns its handle. The fault is removed when the test ends. Fault fails
// the test when the broker refuses f.
func (b *Broker) Fault(f Fault) *FaultHandle {
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
func (b *Broker) WaitFired(ctx context.Context, h *FaultHandle, n int) {
	b.tb.Helper()
	if err := h.Wait(ctx, n); err != nil {
		b.tb.Fatalf("pulsarsim: waiting for a fault to fire %d times (fired %d): %v", n, h.Fired(), err)
	}
}

// Hold sets aside the commands f matches (f.Hold is set for you) until the
// test releases them: NextHeld waits for one, Release hands it back. The
// connection goes on with its later commands meanwhile, so a test can force
// an interleaving, such as an ACK handled after the REDELIVER that follows
// it. The hold is removed when the test ends, releasing what it still holds.
// Hold fails the test when the broker refuses f.
func (b *Broker) Hold(f Fault) *FaultHandle {
	b.tb.Helper()
	f.Hold = true
	return b.Fault(f)
}

// NextHeld waits for the next command h holds and returns it (each held
// command once, in order). It fails the test when ctx ends first.
func (b *Broker) NextHeld(ctx context.Context, h *FaultHandle) *HeldCommand {
	b.tb.Helper()
	held, err := h.Next(ctx)
	if err != nil {
		b.tb.Fatalf("pulsarsim: waiting for a held command: %v", err)
	}
	return held
}

// Release releases held commands, in order, and waits until each has been
// handled, as if it had just arrived. It fails the test when one was
// already released, was dropped with its connection, or ctx ends first. It
// must not be called from an OnEvent hook (HeldCommand.Release may be).
func (b *Broker) Release(ctx context.Context, held ...*HeldCommand) {
	b.tb.Helper()
	for _, h := range held {
		if !h.Release() {
			b.tb.Fatalf("pulsarsim: %s on %s was already released or dropped", h.Command, h.Topic)
		}
		if err := h.Wait(ctx); err != nil {
			b.tb.Fatalf("pulsarsim: releasing %s on %s: %v", h.Command, h.Topic, err)
		}
	}
}

// FailNext makes the next n commands of a kind fail with code, from any
// connection; see broker.Broker.FailNext. Fault scopes a failure to a topic,
// subscription, consumer or producer. It fails the test when the broker
// refuses it (a command kind it does not know).
func (b *Broker) FailNext(kind CommandType, n int, code ServerError) {
	b.tb.Helper()
	b.must(b.srv.FailNext(kind, n, code), "fail the next %d %s", n, kind)
}

// DelayReplies delays the handling of each command of a kind by d; 0 removes
// the delay. See broker.Broker.DelayReplies. It fails the test when the
// broker refuses it.
func (b *Broker) DelayReplies(kind CommandType, d time.Duration) {
	b.tb.Helper()
	b.must(b.srv.DelayReplies(kind, d), "delay the replies to %s", kind)
}
