package broker

import (
	"time"
)

// A durable cursor's state reaches the store as Pulsar's managed cursor
// persists it, which is what a broker crash leaves behind (an unload or a
// graceful stop persists everything, load.go):
//   - a change of the acknowledged entries is persisted at once when the
//     cursor was last persisted a second ago or more
//     (managedLedgerDefaultMarkDeleteRateLimit, 1 a second);
//   - a change over that rate stays in memory, dirty, until the next change
//     the rate lets through or the periodic flush of dirty cursors
//     (managedLedgerCursorPositionFlushSeconds, 60 s), both on the broker
//     clock.
// A crash thus loses the acknowledgements since the cursor was last
// persisted, and their messages are delivered again. A broker of its own
// has nothing to crash into and keeps no copies.

const (
	// markDeleteRateLimit is the shortest time between two persists of one
	// cursor.
	markDeleteRateLimit = time.Second
	// cursorFlushEvery is how often dirty cursors are persisted anyway.
	cursorFlushEvery = 60 * time.Second
)

// persistLocked persists the subscription's cursor after a change, unless
// the rate limit holds it back (then it is dirty). Called under the topic's
// lock after the cursor changed.
func (s *Subscription) persistLocked() {
	s.topic.replicatedSubMovedLocked(s)
	if !s.durable || s.topic.b.cfg.store == nil && s.topic.b.disk == nil {
		return
	}
	now := s.topic.b.cfg.clock.Now()
	if s.persisted != nil && now.Sub(s.persistedAt) < markDeleteRateLimit {
		s.dirty = true
		return
	}
	s.writeCursorLocked(now)
}

// writeCursorLocked records the cursor's durable state as persisted now.
func (s *Subscription) writeCursorLocked(now time.Time) {
	s.persisted = s.cur.Durable()
	s.persistedAt = now
	s.dirty = false
	s.saveCursorLocked()
}

// flushCursors persists every dirty cursor of the topics loaded here, the
// managed ledger factory's periodic flush.
func (b *Broker) flushCursors(now time.Time) {
	for _, t := range b.topicsNow(true) {
		t.mu.Lock()
		for _, s := range t.subs {
			if s.durable && s.dirty {
				s.writeCursorLocked(now)
			}
		}
		t.mu.Unlock()
	}
}
