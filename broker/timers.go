package broker

import (
	"container/heap"
	"sync"
	"time"
)

// The broker's timers run on its clock (WithClock), as Pulsar's run on its
// own: the message-TTL check every expiry interval (5 minutes, the first one
// an interval after the broker started serving), each subscription's
// dispatcher timer, the end of a Failover switch delay or the release of
// delayed messages (dispatch.Dispatcher.NextTimer), and the transactions'
// timeouts (txn.go). One goroutine sleeps
// until the earliest of them; RunTimers runs, in time order, whatever the
// clock has reached, which is how moving a clock (testkit's Advance) makes
// time pass for the broker. A clock that never moves by itself (ManualClock)
// only ever reaches a timer through RunTimers.

// subTimer is a subscription's dispatcher timer, due at ms, or a task: a
// function the broker runs at ms (fn set, s nil), such as the periodic
// backlog quota check. A task runs under the timers' run lock, takes topic
// locks one at a time, and may register further tasks.
type subTimer struct {
	at int64
	s  *Subscription
	fn func(at int64)
}

// timerHeap orders subscription timers, earliest first. A subscription whose
// timer changed leaves its old entries behind; they are dropped when they
// come out (Subscription.timerAt tells the live one).
type timerHeap []subTimer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(subTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = subTimer{}
	*h = old[:len(old)-1]
	return x
}

// timers holds the broker's timers.
type timers struct {
	// mu guards subs; it is taken under topic locks and takes none itself.
	mu   sync.Mutex
	subs timerHeap
	// run makes RunTimers calls one at a time; nextExpiry is under it.
	run        sync.Mutex
	nextExpiry time.Time // zero: no periodic expiry check
	wake       chan struct{}
}

// add registers a subscription timer and wakes the timer goroutine when it
// is the earliest.
func (ts *timers) add(at int64, s *Subscription) {
	ts.mu.Lock()
	first := len(ts.subs) == 0 || at < ts.subs[0].at
	heap.Push(&ts.subs, subTimer{at: at, s: s})
	ts.mu.Unlock()
	if first {
		select {
		case ts.wake <- struct{}{}:
		default:
		}
	}
}

// addTask registers fn to run at ms, as add does a subscription's timer.
func (ts *timers) addTask(at int64, fn func(at int64)) {
	ts.mu.Lock()
	first := len(ts.subs) == 0 || at < ts.subs[0].at
	heap.Push(&ts.subs, subTimer{at: at, fn: fn})
	ts.mu.Unlock()
	if first {
		select {
		case ts.wake <- struct{}{}:
		default:
		}
	}
}

// popDue removes and returns the earliest subscription timer if it is due at
// or before limit (ms).
func (ts *timers) popDue(limit int64) (subTimer, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.subs) == 0 || ts.subs[0].at > limit {
		return subTimer{}, false
	}
	return heap.Pop(&ts.subs).(subTimer), true
}

// earliest returns the time of the earliest subscription timer.
func (ts *timers) earliest() (int64, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.subs) == 0 {
		return 0, false
	}
	return ts.subs[0].at, true
}

// startTimers starts the timer goroutine; the first expiry check is one
// interval from now.
func (b *Broker) startTimers() {
	b.timers.wake = make(chan struct{}, 1)
	if d := b.cfg.expiryInterval; d > 0 {
		b.timers.nextExpiry = b.cfg.clock.Now().Add(d)
	}
	b.startQuotaChecks()
	b.startInactiveTopicChecks()
	b.startPeriodic(b.cfg.compactionCheck, b.checkCompaction)
	b.startPeriodic(dedupPurgeEvery, b.purgeDedup)
	if b.cfg.store != nil || b.disk != nil {
		b.startPeriodic(cursorFlushEvery, b.flushCursors)
	}
	if b.cs != nil {
		b.startPeriodic(b.cfg.snapshotEvery, b.checkReplication)
	}
	b.wg.Add(1)
	go b.timerLoop()
	b.resumeTxnEnds()
}

// timerLoop sleeps until the earliest timer is due by the broker clock (or a
// new earlier one is registered), then runs what is due.
func (b *Broker) timerLoop() {
	defer b.wg.Done()
	sleep := time.NewTimer(time.Hour)
	defer sleep.Stop()
	for {
		b.runDue()
		sleep.Stop()
		if at, ok := b.nextTimer(); ok && !isManual(b.cfg.clock) {
			sleep.Reset(max(at.Sub(b.cfg.clock.Now()), time.Millisecond))
		}
		select {
		case <-b.done:
			return
		case <-b.timers.wake:
		case <-sleep.C:
		}
	}
}

// nextTimer returns the time of the earliest timer.
func (b *Broker) nextTimer() (time.Time, bool) {
	b.timers.run.Lock()
	next := b.timers.nextExpiry
	b.timers.run.Unlock()
	if ms, ok := b.timers.earliest(); ok && (next.IsZero() || ms < next.UnixMilli()) {
		next = time.UnixMilli(ms)
	}
	if ms, ok := b.nextTxnTimeout(); ok && (next.IsZero() || ms < next.UnixMilli()) {
		next = time.UnixMilli(ms)
	}
	return next, !next.IsZero()
}

// wakeTimers makes the timer goroutine look at the timers again (a
// transaction timeout that may be the earliest was registered).
func (b *Broker) wakeTimers() {
	select {
	case b.timers.wake <- struct{}{}:
	default:
	}
}

// RunTimers runs, in time order, every broker timer the broker clock has
// reached: the periodic message-TTL checks that fell due, the
// subscriptions' timers (the end of a Failover switch delay, the release of
// delayed messages) and the transactions' timeouts. The broker runs them by itself as its clock moves;
// after moving a clock by hand (ManualClock, OffsetClock), call RunTimers to
// let the broker see the time that passed. A TTL check that is not due does
// not run (RunExpiryCheck forces one). With authentication, RunTimers also
// checks the connections' credentials at once (which otherwise happens every
// WithAuthRefreshInterval of wall time).
func (b *Broker) RunTimers() {
	b.runDue()
	if b.cfg.authn != nil {
		b.checkCredentials()
	}
}

// runDue runs the timers the broker clock has reached.
func (b *Broker) runDue() {
	b.timers.run.Lock()
	defer b.timers.run.Unlock()
	now := b.cfg.clock.Now()
	interval := b.cfg.expiryInterval
	for {
		next := b.timers.nextExpiry
		expiryDue := !next.IsZero() && !next.After(now)
		limit := now.UnixMilli()
		if expiryDue {
			limit = next.UnixMilli() - 1 // a subscription timer strictly before the check goes first
		}
		subAt, subOK := b.timers.earliest()
		if at, ok := b.nextTxnTimeout(); ok && at <= limit && (!subOK || at < subAt) {
			b.abortTimedOut(at) // a transaction timeout before any subscription timer
			continue
		}
		if st, ok := b.timers.popDue(limit); ok {
			b.fireSubTimer(st)
			continue
		}
		if !expiryDue {
			return
		}
		// Checks in a row with nothing due between them: the last one does
		// what they all would (expiry only ever moves forward).
		if late := now.Sub(next) / interval; late > 0 {
			at, ok := b.timers.earliest()
			if tat, tok := b.nextTxnTimeout(); tok && (!ok || tat < at) {
				at, ok = tat, true
			}
			if !ok || at > next.Add(late*interval).UnixMilli() {
				next = next.Add(late * interval)
			}
		}
		b.timers.nextExpiry = next.Add(interval)
		b.expireAll(next)
	}
}

// fireSubTimer runs a subscription's timer at its time, if it is still the
// subscription's current one.
func (b *Broker) fireSubTimer(st subTimer) {
	if st.fn != nil {
		st.fn(st.at)
		return
	}
	s := st.s
	t := s.topic
	t.mu.Lock()
	defer t.mu.Unlock()
	if !s.timerSet || s.timerAt != st.at || t.subs[s.name] != s || s.disp == nil {
		return
	}
	s.timerSet = false
	s.dispatchAtLocked(time.UnixMilli(st.at))
}

// armTimerLocked registers the dispatcher's next timer, if it changed.
func (s *Subscription) armTimerLocked() {
	at, ok := s.disp.NextTimer()
	if s.retryAt != 0 && (!ok || s.retryAt < at) {
		at, ok = s.retryAt, true
	}
	if !ok || (s.timerSet && at == s.timerAt) {
		s.timerSet = s.timerSet && ok
		return
	}
	s.timerAt, s.timerSet = at, true
	s.topic.b.timers.add(at, s)
}
