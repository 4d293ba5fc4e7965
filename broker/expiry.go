package broker

import (
	"time"
)

// Message TTL, as Pulsar applies it: the MessageTTLSeconds policy, a topic's
// over its namespace's over the broker's default; 0 means no TTL. A periodic
// check (every 5 minutes by default, as Pulsar's
// messageExpiryCheckIntervalInMinutes) moves each subscription's mark-delete
// position past the entries whose publish time is older than the TTL by the
// broker clock. RunExpiryCheck runs it at once.

// minBacklogForExpiryCheck and expiryThreshold are Pulsar's constants: a
// subscription with consumers and a small backlog is only expired once its
// oldest entry is 1.5 TTLs old.
const (
	minBacklogForExpiryCheck = 1000
	expiryThreshold          = 1.5
)

// WithExpiryCheckInterval sets how often the broker applies message TTL.
// Default 5 minutes; 0 turns the periodic check off (RunExpiryCheck still
// works).
func WithExpiryCheckInterval(d time.Duration) Option {
	return func(c *config) { c.expiryInterval = d }
}

// messageTTL returns the TTL in force for a topic (Policies.MessageTTLSeconds
// resolved); 0 means none.
func (b *Broker) messageTTL(tn TopicName) time.Duration {
	return time.Duration(*b.appliedPolicies(tn).MessageTTLSeconds) * time.Second
}

// RunExpiryCheck applies message TTL to every subscription of every topic
// now, by the broker clock.
func (b *Broker) RunExpiryCheck() {
	b.mu.Lock()
	topics := make([]*Topic, 0, len(b.topics))
	for _, t := range b.topics {
		topics = append(topics, t)
	}
	b.mu.Unlock()
	now := b.cfg.clock.Now()
	for _, t := range topics {
		if ttl := b.messageTTL(t.name); ttl > 0 && t.name.Persistent {
			t.expire(now, ttl)
		}
	}
}

// expire moves each subscription's mark-delete position past the entries
// older than ttl at now.
func (t *Topic) expire(now time.Time, ttl time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	expired := func(n int64) bool {
		e := t.log.get(n)
		return e != nil && now.After(time.UnixMilli(int64(e.publishTime)).Add(ttl))
	}
	for _, s := range t.subs {
		first := s.cur.MarkDelete() + 1
		backlog := s.cur.Backlog(t.log.end())
		if backlog == 0 {
			continue
		}
		if len(s.consumers) > 0 && backlog < minBacklogForExpiryCheck {
			e := t.log.get(first)
			if e == nil || !now.After(time.UnixMilli(int64(e.publishTime)).Add(time.Duration(float64(ttl)*expiryThreshold))) {
				continue
			}
		}
		// Publish times grow along the log, so the expired entries are a
		// prefix: find its last one.
		last := first - 1
		for n := first; n < t.log.end() && expired(n); n++ {
			last = n
		}
		if last < first {
			continue
		}
		if s.disp != nil {
			s.disp.Expire(last)
		} else {
			s.cur.ExpireThrough(last)
		}
		t.b.emit(Event{Kind: EventExpired, Topic: t.full, Subscription: s.name, From: t.eventID(first),
			ID: t.eventID(last)})
		s.dispatchLocked()
	}
}
