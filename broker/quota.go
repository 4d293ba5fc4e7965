package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Backlog quotas, as Pulsar 4.0.8 applies them (BacklogQuotaManager,
// PersistentTopic.checkBacklogQuotaExceeded). Two quotas apply to a
// persistent topic, each with its policy: destination_storage limits the
// backlog's size (Policies.BacklogQuota), message_age the age of its oldest
// message (Policies.MessageAgeBacklogQuota).
//
// The backlog's size is Pulsar's estimate: the bytes of the log after the
// mark-delete position of the slowest durable subscription, counted as the
// log's bytes minus (that position + 1) times the average entry size. The
// size quota is exceeded at or over its limit (a limit of 0 is always
// exceeded, as in Pulsar).
//
// The oldest message's age is, by default, Pulsar's estimate too: the time
// since the block (Pulsar's ledger) holding the slowest durable
// subscription's first unacknowledged entry closed. An entry of the open
// block has no age, so a topic that has not closed a block (50,000 entries
// or 64 MiB) is never over its age quota, as a Pulsar topic whose ledger has
// not rolled over is not. WithPreciseBacklogQuotaCheck uses the entry's
// publish time instead (preciseTimeBasedBacklogQuotaCheck).
//
// A new producer on a topic over a quota whose policy is producer_request_hold
// or producer_exception is refused with ProducerBlockedQuotaExceededError or
// ProducerBlockedQuotaExceededException. Every backlogQuotaCheckIntervalInSeconds
// (60 s) of broker time the broker checks every persistent topic, the size
// quota first: over the size quota, or else over the age quota, it applies
// the quota's policy: it disconnects the topic's producers (the two producer
// policies; they come back and are refused), or moves the slowest
// subscriptions forward (consumer_backlog_eviction): by size, each time the
// slowest by a share of its backlog until the backlog is down to 90% of the
// limit; by age, past whole closed blocks older than the limit (with the
// precise check, as a message TTL of 90% of the limit).

// WithBacklogQuotaCheckInterval sets backlogQuotaCheckIntervalInSeconds: how
// often, by the broker clock, the broker applies backlog quotas to the
// topics over them. Default 60 s; 0 turns the periodic check off
// (backlogQuotaCheckEnabled=false; producers are still refused).
func WithBacklogQuotaCheckInterval(d time.Duration) Option {
	return func(c *config) { c.quotaInterval = d }
}

// WithPreciseBacklogQuotaCheck sets preciseTimeBasedBacklogQuotaCheck: the
// message_age quota reads the publish time of the oldest unacknowledged
// entry instead of estimating it from block close times. Default off.
func WithPreciseBacklogQuotaCheck(on bool) Option { return func(c *config) { c.preciseQuota = on } }

// RunBacklogQuotaCheck applies backlog quotas to every topic now, by the
// broker clock, as the periodic check does.
func (b *Broker) RunBacklogQuotaCheck() { b.checkBacklogQuotas(b.cfg.clock.Now()) }

// checkBacklogQuotas is the periodic check at time now.
func (b *Broker) checkBacklogQuotas(now time.Time) {
	topics := b.topicsNow(true)
	for _, t := range topics {
		t.mu.Lock()
		t.applyBacklogQuotaLocked(now)
		t.mu.Unlock()
	}
}

// applyBacklogQuotaLocked applies the quota the topic is over, if any.
func (t *Topic) applyBacklogQuotaLocked(now time.Time) {
	if t.deleted {
		return
	}
	p := t.policiesLocked()
	switch {
	case t.sizeQuotaExceededLocked(p):
		t.enforceQuotaLocked(*p.BacklogQuota, false, now)
	case t.ageQuotaExceededLocked(p, now):
		t.enforceQuotaLocked(*p.MessageAgeBacklogQuota, true, now)
	}
}

// enforceQuotaLocked applies quota q (of type message_age when age) to the
// topic.
func (t *Topic) enforceQuotaLocked(q BacklogQuota, age bool, now time.Time) {
	switch q.Policy {
	case ProducerRequestHold, ProducerException:
		for p := range t.producers {
			t.closeProducerLocked(p)
		}
	case ConsumerBacklogEviction:
		if age {
			t.evictByAgeLocked(q, now)
		} else {
			t.evictBySizeLocked(q)
		}
	}
}

// quotaRefusal is the message of Pulsar's refusal of a producer over a
// backlog quota.
const quotaRefusal = "org.apache.pulsar.broker.service.BrokerServiceException$TopicBacklogQuotaExceededException: " +
	"Cannot create producer on topic with backlog quota exceeded"

// quotaRefusalLocked returns the refusal of a new producer by the topic's
// backlog quotas, or nil.
func (t *Topic) quotaRefusalLocked(reqID uint64) *pb.BaseCommand {
	if !t.name.Persistent {
		return nil
	}
	p := t.policiesLocked()
	for _, c := range []struct {
		q        *BacklogQuota
		exceeded func() bool
	}{
		{p.BacklogQuota, func() bool { return t.sizeQuotaExceededLocked(p) }},
		{p.MessageAgeBacklogQuota, func() bool { return t.ageQuotaExceededLocked(p, t.b.cfg.clock.Now()) }},
	} {
		code := pb.ServerError_ProducerBlockedQuotaExceededError
		switch c.q.Policy {
		case ProducerException:
			code = pb.ServerError_ProducerBlockedQuotaExceededException
		case ProducerRequestHold:
		default:
			continue
		}
		if c.exceeded() {
			return protocol.ErrorCommand(reqID, code, quotaRefusal)
		}
	}
	return nil
}

// slowestDurableLocked returns the durable subscription whose mark-delete
// position is lowest, or nil: Pulsar's slowest cursor (non-durable cursors
// have no place in that order).
func (t *Topic) slowestDurableLocked() *Subscription {
	var slowest *Subscription
	for _, s := range t.subs {
		if s.durable && (slowest == nil || s.cur.MarkDelete() < slowest.cur.MarkDelete()) {
			slowest = s
		}
	}
	return slowest
}

// backlogSizeLocked is Pulsar's estimated backlog size (see above).
func (t *Topic) backlogSizeLocked() int64 {
	s := t.slowestDurableLocked()
	if s == nil {
		return 0
	}
	return t.sizeAfterLocked(s.cur.MarkDelete())
}

// sizeAfterLocked estimates the bytes of the log after entry md, as
// Pulsar's managed ledger does: all of it less md + 1 average entries.
func (t *Topic) sizeAfterLocked(md int64) int64 {
	total, entries := t.log.TotalBytes, t.log.End()
	switch {
	case entries <= 0:
		return 0
	case entries <= md+1:
		return 0
	case md < 0:
		return total
	}
	return total - (md+1)*(total/entries)
}

// BacklogSize returns a topic's estimated backlog size in bytes, as its
// destination_storage backlog quota measures it (all partitions of a
// partitioned topic).
func (b *Broker) BacklogSize(topic string) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	ts := b.topicsNamed(tn)
	if len(ts) == 0 {
		return 0, topicNotFound(tn)
	}
	var n int64
	for _, t := range ts {
		t.mu.Lock()
		n += t.backlogSizeLocked()
		t.mu.Unlock()
	}
	return n, nil
}

// sizeQuotaExceededLocked is isSizeBacklogExceeded.
func (t *Topic) sizeQuotaExceededLocked(p *Policies) bool {
	limit := p.BacklogQuota.LimitBytes
	return limit >= 0 && t.backlogSizeLocked() >= limit
}

// oldestTimeLocked returns the time (ms) that the message_age quota counts
// the backlog's age from, or false when it has none (no durable
// subscription, no backlog, or an oldest entry in the open block).
func (t *Topic) oldestTimeLocked() (int64, bool) {
	s := t.slowestDurableLocked()
	if s == nil {
		return 0, false
	}
	first := s.cur.NextUnacked(s.cur.MarkDelete() + 1)
	if first >= t.log.End() {
		return 0, false
	}
	if t.b.cfg.preciseQuota {
		if e := t.log.Get(first); e != nil {
			return int64(e.PublishTime), true
		}
		return 0, false
	}
	return t.log.CloseTimeOf(s.cur.MarkDelete() + 1)
}

// ageQuotaExceededLocked is checkTimeBacklogExceeded. What it measures is
// kept for the stats' oldestBacklogMessageAgeSeconds.
func (t *Topic) ageQuotaExceededLocked(p *Policies, now time.Time) bool {
	limit := p.MessageAgeBacklogQuota.LimitSeconds
	if limit <= 0 {
		return false
	}
	at, ok := t.oldestTimeLocked()
	t.oldestAt, t.oldestMeasured = at, ok
	return ok && now.UnixMilli()-at > int64(limit)*1000
}

// evictBySizeLocked is dropBacklogForSizeLimit: while the backlog is over
// 90% of the limit, the slowest durable subscription skips the share of
// its backlog entries that is over; it stops when the slowest does not
// change or nothing is left to skip.
func (t *Topic) evictBySizeLocked(q BacklogQuota) {
	target := 0.9 * float64(q.LimitBytes)
	var previous *Subscription
	for size := t.backlogSizeLocked(); float64(size) > target; size = t.backlogSizeLocked() {
		s := t.slowestDurableLocked()
		if s == nil || s == previous {
			return
		}
		factor := (float64(size) - target) / float64(size)
		skip := int64(factor * float64(s.cur.Backlog(t.log.End())))
		if skip == 0 {
			return
		}
		t.skipLocked(s, skip)
		previous = s
	}
}

// skipLocked moves subscription s's mark-delete position n entries forward,
// acknowledged ones included (Pulsar's skipEntries with
// IndividualDeletedEntries.Include), as an expiry does.
func (t *Topic) skipLocked(s *Subscription, n int64) {
	first := s.cur.MarkDelete() + 1
	last := min(s.cur.MarkDelete()+n, t.log.End()-1)
	if last < first {
		return
	}
	s.cursorWrittenLocked()
	if s.disp != nil {
		s.disp.Expire(last)
	} else {
		s.cur.ExpireThrough(last)
	}
	s.persistLocked()
	s.noteMarkDeleteLocked(first - 1)
	t.b.emit(Event{Kind: EventExpired, Topic: t.full, Subscription: s.name, From: t.eventID(first),
		ID: t.eventID(last), Reason: "backlog-quota"})
	s.dispatchLocked()
}

// evictByAgeLocked is dropBacklogForTimeLimit: with the precise check, every
// subscription expires what is older than 90% of the limit; otherwise the
// slowest durable subscription skips, one after another, the closed blocks
// that closed more than the limit ago.
func (t *Topic) evictByAgeLocked(q BacklogQuota, now time.Time) {
	if t.b.cfg.preciseQuota {
		target := int64(0.9 * float64(q.LimitSeconds))
		t.expireLocked(now, target, "backlog-quota")
		return
	}
	for {
		s := t.slowestDurableLocked()
		if s == nil {
			return
		}
		end, closedAt, ok := t.log.BlockOf(s.cur.MarkDelete() + 1)
		if !ok || now.UnixMilli()-closedAt <= int64(q.LimitSeconds)*1000 {
			return
		}
		t.skipLocked(s, end-1-s.cur.MarkDelete())
	}
}

// startQuotaChecks registers the periodic backlog quota check, the first
// one an interval from now.
func (b *Broker) startQuotaChecks() {
	d := b.cfg.quotaInterval
	if d <= 0 {
		return
	}
	var run func(at int64)
	run = func(at int64) {
		b.checkBacklogQuotas(time.UnixMilli(at))
		next := at + d.Milliseconds()
		// Checks in a row with nothing else due between them: the last
		// does what they all would.
		if now := b.cfg.clock.Now().UnixMilli(); now-next >= d.Milliseconds() {
			if other, ok := b.timers.earliest(); !ok || other > now {
				next += (now - next) / d.Milliseconds() * d.Milliseconds()
			}
		}
		b.timers.addTask(next, run)
	}
	b.timers.addTask(b.cfg.clock.Now().Add(d).UnixMilli(), run)
}
