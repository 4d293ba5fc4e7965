package broker

import (
	"sync"

	"github.com/pulsarsim/pulsarsim/rate"
)

// Publish rate limits, as Pulsar 4.0.8 applies them (PublishRateLimiterImpl):
// the topic's publish rate policy (Policies.PublishRate) gives it a bucket
// of messages and one of bytes, each refilled per second in 16 ms steps and
// starting full. Every SEND takes its messages and bytes from them, and one
// that leaves a bucket empty (or owing) throttles its connection: the broker
// reads no more from it, for any producer on it, as Pulsar turns off the
// channel's auto-read. A timer on the broker clock, set for the time the
// buckets take to refill 1% of their rate, then lets every throttled
// connection read again if each bucket holds a token, or waits again. The
// SEND itself is stored and answered.

// publishLimiter is a topic's publish rate limiter, under the topic's lock.
type publishLimiter struct {
	limit      PublishRate // the policy the buckets were made for
	msgs       *rate.Bucket
	bytes      *rate.Bucket
	throttled  []*conn // connections waiting for the buckets
	timerArmed bool
}

// throttleDuration returns how long the buckets need to allow publishing
// again, in ns from now; 0 when they do.
func (l *publishLimiter) throttleDuration(now int64) int64 {
	var d int64
	for _, b := range []*rate.Bucket{l.msgs, l.bytes} {
		if b != nil {
			d = max(d, b.ThrottleDuration(now))
		}
	}
	return d
}

// publishRateLimitLocked takes a SEND of msgs messages and n bytes from c's
// producer out of the topic's publish buckets, throttling c when they run
// out.
func (t *Topic) publishRateLimitLocked(c *conn, msgs, n int64) {
	limit := *t.policiesLocked().PublishRate
	l := &t.publish
	if limit == l.limit && l.msgs == nil && l.bytes == nil {
		return // no limit: no clock to read
	}
	now := t.b.cfg.clock.Now().UnixNano()
	if limit != l.limit {
		// A new rate makes new, full buckets, as Pulsar's update does.
		l.limit, l.msgs, l.bytes = limit, nil, nil
		if limit.Messages > 0 {
			l.msgs = rate.New(int64(limit.Messages), rate.SecondNanos, rate.PublishResolution, now)
		}
		if limit.Bytes > 0 {
			l.bytes = rate.New(limit.Bytes, rate.SecondNanos, rate.PublishResolution, now)
		}
	}
	throttle := false
	if l.msgs != nil {
		throttle = !l.msgs.Consume(msgs, now)
	}
	if l.bytes != nil {
		throttle = !l.bytes.Consume(n, now) || throttle
	}
	if !throttle {
		return
	}
	c.pauseReads()
	l.throttled = append(l.throttled, c)
	if !l.timerArmed {
		l.timerArmed = true
		t.b.timers.addTask((now+l.throttleDuration(now)+999_999)/1_000_000, t.unthrottlePublishers)
	}
}

// unthrottlePublishers is the throttle's timer: once the buckets allow
// publishing, the throttled connections read again; otherwise the timer
// waits again for as long as the buckets need.
func (t *Topic) unthrottlePublishers(atMs int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := &t.publish
	l.timerArmed = false
	now := max(atMs*1_000_000, t.b.cfg.clock.Now().UnixNano())
	if d := l.throttleDuration(now); d > 0 && len(l.throttled) > 0 && !t.deleted {
		l.timerArmed = true
		t.b.timers.addTask((now+d+999_999)/1_000_000, t.unthrottlePublishers)
		return
	}
	for _, c := range l.throttled {
		c.resumeReads()
	}
	l.throttled = nil
}

// readGate pauses a connection's reader while a publish rate limit
// throttles it. Its lock is a leaf: taken under a topic's lock or alone.
type readGate struct {
	mu      sync.Mutex
	pauses  int
	resumed chan struct{} // closed when pauses returns to 0
}

// pauseReads stops the connection's reader before its next frame.
func (c *conn) pauseReads() {
	g := &c.reads
	g.mu.Lock()
	if g.pauses == 0 {
		g.resumed = make(chan struct{})
	}
	g.pauses++
	g.mu.Unlock()
}

// resumeReads undoes one pauseReads; the reader goes on when none is left.
func (c *conn) resumeReads() {
	g := &c.reads
	g.mu.Lock()
	if g.pauses > 0 {
		if g.pauses--; g.pauses == 0 {
			close(g.resumed)
		}
	}
	g.mu.Unlock()
}

// waitReads blocks the reader while its reads are paused, until they are
// resumed or the connection closes. The replies waiting for the reader go
// out first.
func (c *conn) waitReads() {
	g := &c.reads
	g.mu.Lock()
	ch := g.resumed
	paused := g.pauses > 0
	g.mu.Unlock()
	if !paused {
		return
	}
	c.wakeDeferred()
	select {
	case <-ch:
	case <-c.done:
	}
}

// PublishThrottled reports whether the publish rate limit holds back the
// reads of any connection producing to the topic.
func (b *Broker) PublishThrottled(topic string) bool {
	t := b.topicByName(topic)
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.publish.throttled) > 0
}
