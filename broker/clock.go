package broker

import (
	"sync"
	"time"
)

// Clock is the broker's source of time.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that only moves when told to. It is safe for
// concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// manual marks a clock that never moves by itself: the broker does not
// sleep towards its timers but waits for RunTimers.
func (c *ManualClock) manual() {}

// isManual reports whether clk only moves when told to.
func isManual(clk Clock) bool {
	_, ok := clk.(interface{ manual() })
	return ok
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// OffsetClock reads the wall clock plus an offset that only grows: time
// flows as usual, and a test can jump it forward with Advance. Real clients
// keep their own (real) time, so messages they publish "now" look older to
// the broker after an Advance. It is safe for concurrent use.
type OffsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the wall clock plus the offset.
func (c *OffsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *OffsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Clock returns the broker's clock.
func (b *Broker) Clock() Clock { return b.cfg.clock }

// nowMillis reads the broker clock in milliseconds since the epoch.
func (b *Broker) nowMillis() int64 { return b.cfg.clock.Now().UnixMilli() }
