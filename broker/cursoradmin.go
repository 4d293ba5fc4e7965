package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/dispatch"
)

// The admin operations that move a subscription's cursor (pulsar-admin
// topics skip, clear-backlog, reset-cursor, expire-messages), as Pulsar
// 4.0.8's PersistentSubscription does them. Each applies to every partition
// of a partitioned topic that has the subscription.

// SkipMessages moves subscription sub's mark-delete position past its next n
// unacknowledged entries (Pulsar's skipEntries with individually deleted
// entries excluded: an entry acknowledged already does not count). A batch
// entry counts once.
func (b *Broker) SkipMessages(topic, sub string, n int64) error {
	return b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		last, left := s.cur.MarkDelete(), n
		for e := s.cur.NextUnacked(last + 1); left > 0 && e < t.log.End(); e = s.cur.NextUnacked(e + 1) {
			last, left = e, left-1
		}
		t.markDeleteThroughLocked(s, last, "skip")
	})
}

// ClearBacklog acknowledges everything subscription sub has not consumed
// yet (skip_all).
func (b *Broker) ClearBacklog(topic, sub string) error {
	return b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		t.markDeleteThroughLocked(s, t.log.End()-1, "clear-backlog")
	})
}

// ExpireMessages expires, for subscription sub, the entries published more
// than age before now by the broker clock, as an expiry by message TTL would.
// An age of 0 is "no TTL" to Pulsar: nothing expires. As Pulsar, it fails
// with ErrExpiryNotIssued, expiring nothing, on a subscription with no
// backlog, and on one with consumers, a backlog under 1000 entries and an
// oldest entry that has not expired yet (PersistentSubscription's "almost
// caught up"); on a partitioned topic the other partitions still expire.
func (b *Broker) ExpireMessages(topic, sub string, age time.Duration) error {
	cutoff := b.cfg.clock.Now().UnixMilli() - age.Milliseconds()
	var refused error
	err := b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		backlog := s.cur.Backlog(t.log.End())
		oldest := max(s.cur.NextUnacked(s.cur.MarkDelete()+1), t.log.Base)
		expired := func(e int64) bool { return age != 0 && int64(t.log.Get(e).PublishTime) < cutoff }
		if backlog == 0 || len(s.consumers) > 0 && backlog < 1000 && !(oldest < t.log.End() && expired(oldest)) {
			refused = errorf(ErrExpiryNotIssued, "Expire message by timestamp not issued on topic %s for subscription %s"+
				" due to ongoing message expiration not finished or subscription almost catch  up. If it's performed on"+
				" a partitioned topic operation might succeeded on other partitions, please check stats of individual"+
				" partition.", t.full, s.name)
			return
		}
		last := s.cur.MarkDelete()
		for e := max(last+1, t.log.Base); e < t.log.End() && expired(e); e++ {
			last = e
		}
		t.markDeleteThroughLocked(s, last, "expire-messages")
	})
	if err != nil {
		return err
	}
	return refused
}

// ResetCursorToTime resets subscription sub to the first entry published at
// or after ms (milliseconds since the epoch), or to the end of the topic.
// As a consumer's seek, it first disconnects the subscription's consumers.
func (b *Broker) ResetCursorToTime(topic, sub string, ms int64) error {
	return b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		t.resetCursorLocked(s, t.firstAtOrAfterLocked(uint64(max(ms, 0))))
	})
}

// ResetCursorToMessage resets subscription sub to the entry of id (the one
// after it when excluded): an id of an older ledger, or a negative one, is
// the earliest position; one beyond the end, the latest. It first
// disconnects the subscription's consumers.
func (b *Broker) ResetCursorToMessage(topic, sub string, id MessageID, excluded bool) error {
	return b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		var target int64
		switch {
		case id.Ledger < 0 || id.Ledger < int64(t.ledger):
			target = t.log.Base
		case id.Ledger > int64(t.ledger) || id.Entry < 0 || id.Entry >= t.log.End():
			target = t.log.End()
		default:
			target = max(id.Entry, t.log.Base)
			if excluded {
				target++
			}
		}
		t.resetCursorLocked(s, target)
	})
}

// onSubscriptions runs fn, under the topic's lock, on subscription sub of
// every topic the name stands for. It fails with ErrTopicNotFound when none
// exists, and ErrSubscriptionNotFound when none has the subscription.
func (b *Broker) onSubscriptions(topic, sub string, fn func(*Topic, *Subscription)) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	ts := b.topicsNamed(tn)
	if len(ts) == 0 {
		return topicNotFound(tn)
	}
	found := false
	for _, t := range ts {
		t.mu.Lock()
		if s := t.subs[sub]; s != nil && !t.deleted {
			found = true
			fn(t, s)
		}
		t.mu.Unlock()
	}
	if !found {
		return errorf(ErrSubscriptionNotFound, "Subscription %s not found for topic %s", sub, tn)
	}
	return nil
}

// markDeleteThroughLocked acknowledges every entry of s up to last, as an
// expiry does, and tells the event listeners why.
func (t *Topic) markDeleteThroughLocked(s *Subscription, last int64, reason string) {
	first := s.cur.MarkDelete() + 1
	if last < first {
		return
	}
	s.cursorWrittenLocked()
	backlog := s.cur.Backlog(t.log.End())
	if s.disp != nil {
		s.disp.Expire(last)
	} else {
		s.cur.ExpireThrough(last)
	}
	s.persistLocked()
	s.noteMarkDeleteLocked(first - 1)
	if reason != "skip" && reason != "clear-backlog" && reason != "replicated-subscription" {
		// An expiry (message TTL, a request, a backlog quota by age):
		// Pulsar's stats count the entries it acknowledged.
		s.expired.add(time.Now(), backlog-s.cur.Backlog(t.log.End()))
		s.lastExpired = t.b.cfg.clock.Now()
	}
	t.b.emit(Event{Kind: EventExpired, Topic: t.full, Subscription: s.name, From: t.eventID(first),
		ID: t.eventID(last), Reason: reason})
	s.dispatchLocked()
}

// resetCursorLocked makes target the next entry s reads, as Pulsar's
// resetCursor: it first disconnects the consumers (each gets
// CLOSE_CONSUMER and reconnects), all of them on Shared and Key_Shared and
// only the active one on Exclusive and Failover. Individually acknowledged
// entries after the target become unacknowledged again.
func (t *Topic) resetCursorLocked(s *Subscription, target int64) {
	s.resetting = true
	if s.disp != nil && (s.typ == dispatch.Exclusive || s.typ == dispatch.Failover) {
		if id, ok := s.disp.Active(); ok && s.consumers[id] != nil {
			s.closeConsumersLocked(nil, s.consumers[id])
		}
	} else {
		s.closeConsumersLocked(nil, nil)
	}
	s.resetting = false
	s.cursorWrittenLocked()
	if s.disp != nil {
		s.disp.ResetTo(target)
	} else {
		s.cur.ResetTo(target)
	}
	s.persistLocked()
	t.b.emit(Event{Kind: EventSubscriptionSeek, Topic: t.full, Subscription: s.name, ID: t.eventID(target)})
}
