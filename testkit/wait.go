package testkit

import (
	"context"
	"time"
)

// fallbackPoll bounds how long a Wait helper sleeps between two checks of its
// condition when no broker event wakes it.
const fallbackPoll = 20 * time.Millisecond

// WaitFor blocks until cond returns true, re-checking it after every broker
// event. It fails the test, naming what it waited for, when ctx ends or the
// test's deadline is near. cond runs on the test goroutine and may inspect
// the broker. When it returns, the hooks have seen every event so far (as
// after DeliverEvents); this holds for every Wait… helper.
func (b *Broker) WaitFor(ctx context.Context, what string, cond func() bool) {
	b.tb.Helper()
	if err := b.waitFor(ctx, cond); err != nil {
		b.tb.Fatalf("pulsarsim: waiting for %s: %v", what, err)
	}
}

func (b *Broker) waitFor(ctx context.Context, cond func() bool) error {
	if d, ok := b.tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Second))
			defer cancel()
		}
	}
	wake := make(chan struct{}, 1)
	cancel := b.OnEvent(func(Event) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer cancel()
	tick := time.NewTicker(fallbackPoll)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-tick.C:
		}
	}
	b.srv.DeliverEvents()
	return nil
}

// WaitBacklog blocks until the subscription's backlog is n entries.
func (b *Broker) WaitBacklog(ctx context.Context, topic, sub string, n int64) {
	b.tb.Helper()
	var last int64 = -1
	err := b.waitFor(ctx, func() bool {
		s, ok := b.Subscription(topic, sub)
		last = s.Backlog
		return ok && s.Backlog == n
	})
	if err != nil {
		b.tb.Fatalf("pulsarsim: waiting for the backlog of %s/%s to reach %d (last seen %d): %v", topic, sub, n, last, err)
	}
}

// WaitMessages blocks until topic holds at least n messages, and returns them.
func (b *Broker) WaitMessages(ctx context.Context, topic string, n int) []Message {
	b.tb.Helper()
	var ms []Message
	err := b.waitFor(ctx, func() bool {
		var err error
		ms, err = b.srv.Messages(topic)
		return err == nil && len(ms) >= n
	})
	if err != nil {
		b.tb.Fatalf("pulsarsim: waiting for %d messages on %s (have %d): %v", n, topic, len(ms), err)
	}
	return ms
}

// Sub returns a snapshot of the subscription, failing the test when it does
// not exist.
//
// Deprecated: use Subscription, which reports a missing subscription as a
// map lookup does (see the package doc's error convention).
func (b *Broker) Sub(topic, sub string) SubscriptionSnapshot {
	b.tb.Helper()
	s, ok := b.Subscription(topic, sub)
	if !ok {
		b.tb.Fatalf("pulsarsim: no subscription %s on %s", sub, topic)
	}
	return s
}
