package broker

import "time"

// Inactive topics, as Pulsar 4.0 deletes them (brokerDeleteInactiveTopics*,
// on by default in a standalone): every Frequency of broker time (60 s; the
// first check an interval after the broker starts serving) each topic whose
// policy lets it go (Policies.InactiveTopics) is checked. A topic is active
// while it has subscriptions (mode delete_when_no_subscriptions, the
// default) or subscriptions with a backlog (delete_when_subscriptions_caught_up),
// or producers or consumers; a check that finds it active marks it active
// then. A topic inactive since at least MaxInactive (60 s) at a check is
// deleted, with its schema and policies (a partition keeps its partitioned
// topic's), unless its retention policy still keeps its entries. Pulsar's
// lastActive is also set when the topic is created, when a producer leaves
// and when a durable subscription is deleted; that is what this code follows
// (PersistentTopic.checkGC, isActive, shouldTopicBeRetained). Topics of the
// pulsar/system namespace are never deleted, as Pulsar's system topics are
// not.

// WithInactiveTopicDeletion sets how the broker deletes inactive topics.
// Default DefaultInactiveTopicDeletion, as in a Pulsar 4.0 standalone;
// WithInactiveTopicDeletion(InactiveTopicDeletion{}) keeps every topic, for
// a test that inspects topics nobody uses any more. The broker's
// InactiveTopics policy follows it (a WithDefaultPolicies value wins).
func WithInactiveTopicDeletion(d InactiveTopicDeletion) Option {
	return func(c *config) { c.inactive = d.WithDefaults() }
}

// EventTopicDeleted: a topic was deleted (Topic), by a request (Reason
// "request") or for inactivity (Reason "inactive").
const EventTopicDeleted EventKind = "topic-deleted"

// systemNamespace holds the topics Pulsar never deletes for inactivity.
const systemNamespace = "pulsar/system"

// startInactiveTopicChecks registers the periodic inactive-topic check,
// the first one an interval from now, when the broker deletes inactive
// topics at all. Each check runs at its own time, so that each one that
// finds a topic active marks it active then.
func (b *Broker) startInactiveTopicChecks() {
	d := b.cfg.inactive.Interval().Milliseconds()
	if d <= 0 {
		return
	}
	var run func(at int64)
	run = func(at int64) {
		b.deleteInactiveTopics(time.UnixMilli(at))
		b.timers.addTask(at+d, run)
	}
	b.timers.addTask(b.cfg.clock.Now().UnixMilli()+d, run)
}

// deleteInactiveTopics runs the inactive-topic check at the time given.
func (b *Broker) deleteInactiveTopics(at time.Time) {
	topics := b.topicsNow(false)
	for _, t := range topics {
		if t.name.NamespaceName() == systemNamespace {
			continue
		}
		t.mu.Lock()
		gone := !t.deleted && t.inactiveSinceLocked(at)
		if gone {
			t.deleted = true
			b.emit(Event{Kind: EventTopicDeleted, Topic: t.full, Reason: "inactive"})
		}
		t.mu.Unlock()
		if gone {
			b.removeTopic(t)
		}
	}
}

// inactiveSinceLocked applies one inactive-topic check at the time given:
// it marks an active topic active now, and reports whether an inactive one
// is to be deleted.
func (t *Topic) inactiveSinceLocked(at time.Time) bool {
	p := t.policiesLocked().InactiveTopics
	if !p.DeleteWhileInactive {
		return false
	}
	if t.activeLocked(p.Mode) {
		t.lastActive = at
		return false
	}
	idle := at.Sub(t.lastActive)
	return idle >= time.Duration(p.MaxInactiveDurationSeconds)*time.Second && !t.retainedLocked(idle)
}

// activeLocked is Pulsar's isActive: subscriptions (with a backlog, in
// mode caught-up), producers or consumers.
func (t *Topic) activeLocked(mode InactiveTopicDeleteMode) bool {
	if t.busyLocked() {
		return true
	}
	if mode != DeleteWhenSubscriptionsCaughtUp {
		return len(t.subs) > 0
	}
	for _, s := range t.subs {
		if s.cur.Backlog(t.log.End()) > 0 {
			return true
		}
	}
	return false
}

// retainedLocked is Pulsar's shouldTopicBeRetained: a topic that holds
// entries stays while its retention time, counted from when it was last
// active, has not passed (forever for -1).
func (t *Topic) retainedLocked(idle time.Duration) bool {
	if t.log.End() == t.log.Base {
		return false
	}
	minutes := t.policiesLocked().Retention.Minutes
	return minutes < 0 || idle < time.Duration(minutes)*time.Minute
}

// markActiveLocked records that the topic was active now: a producer left,
// or a durable subscription was deleted.
func (t *Topic) markActiveLocked() { t.lastActive = t.b.cfg.clock.Now() }
