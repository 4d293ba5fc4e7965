package broker

import (
	"time"
)

// Message TTL, as Pulsar 4.0.8 applies it: the MessageTTLSeconds policy, a
// topic's over its namespace's over the broker's default, in whole seconds;
// 0 means no TTL. A periodic check on the broker clock (every 5 minutes by
// default, as Pulsar's messageExpiryCheckIntervalInMinutes; see timers.go)
// finds, once per topic, the newest entry published more than the TTL ago,
// and moves the mark-delete position of every subscription that is behind it
// there (PersistentTopic.checkMessageExpiryWithSharedPosition). That check
// knows no exception: the 1.5 × TTL grace that
// PersistentSubscription.expireMessages gives a connected subscription with
// a small backlog is not on this path. RunExpiryCheck runs a check at once.

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
// now, by the broker clock, whenever the periodic check would next run.
func (b *Broker) RunExpiryCheck() { b.expireAll(b.cfg.clock.Now()) }

// expireAll runs an expiry check at the time given.
func (b *Broker) expireAll(now time.Time) {
	for _, t := range b.topicsNow(true) {
		if ttl := b.messageTTL(t.name) / time.Second; ttl > 0 {
			t.expire(now, int64(ttl))
		}
	}
}

// expire moves each subscription's mark-delete position past the entries
// published more than ttl seconds before now: up to the newest one, found
// from the first entry any subscription still needs (publish times grow
// along the log).
func (t *Topic) expire(now time.Time, ttl int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(now, ttl, "")
}

// expireLocked is expire with the topic's lock held; reason goes into the
// events ("" for the message TTL).
func (t *Topic) expireLocked(now time.Time, ttl int64, reason string) {
	if len(t.subs) == 0 {
		return
	}
	cutoff := now.UnixMilli() - ttl*1000
	from := t.log.End()
	for _, s := range t.subs {
		from = min(from, s.cur.MarkDelete()+1)
	}
	last := from - 1
	for n := max(from, t.log.Base); n < t.log.End(); n++ {
		if int64(t.log.Get(n).PublishTime) >= cutoff {
			break
		}
		last = n
	}
	for _, s := range t.subs {
		t.markDeleteThroughLocked(s, last, reason)
	}
}
