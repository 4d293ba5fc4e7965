package broker

import (
	"maps"
	"time"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/txn"
)

// A persistent topic lives in two places, as in Pulsar: its ledger in the
// store (entries and durable cursors, store.go), and the topic a broker has
// loaded from it (producers, consumers, dispatchers and everything else the
// broker holds in memory). Loading reads the ledger; releasing (an unload,
// a broker that stops or crashes) writes back what the managed ledger keeps
// and drops the rest:
//   - a durable subscription comes back with its mark-delete position, its
//     individually acknowledged entries and its batch-index acknowledgements,
//     its read position rewound to the first unacknowledged entry, and no
//     redelivery counters (Pulsar keeps them in the dispatcher's memory);
//   - non-durable subscriptions (readers) are gone, as Pulsar's non-durable
//     cursors are; their clients subscribe again at the position they hold;
//   - the subscriptions' properties and the acknowledgements transactions
//     hold on them (Pulsar's pending-ack store), the producers' last
//     sequence ids, the exclusive producers' epoch, the termination, the
//     compacted view and the transaction buffer are kept;
//   - pending acknowledgements, replay queues, the delayed-delivery index
//     and the rate limiters start empty.
// A non-persistent topic has no ledger: releasing it loses it, messages and
// subscriptions.

// newLedgerLocked gives t a new ledger in the store. Called under the store's
// lock, for a persistent topic created on this broker.
func (b *Broker) newLedgerLocked(t *Topic) {
	l := &ledger{ID: t.ledger, Log: t.log, Created: t.created, Loaded: true}
	b.data.Ledgers[t.full] = l
	if b.disk != nil {
		b.disk.PutLedger(t.full, l, false)
	}
}

// createOrRecordLocked creates a topic the admin API asked for: loaded here
// when this broker serves it, else (a broker of a cluster that does not own
// its bundle) only its ledger is written, and its owner loads it when it is
// used, as Pulsar's admin creates the managed ledger wherever it runs. A
// non-persistent topic of another broker's bundle has nothing to record.
func (b *Broker) createOrRecordLocked(tn TopicName) {
	if b.servesLocked(tn) {
		b.createTopicLocked(tn)
		return
	}
	if tn.Persistent {
		l := &ledger{ID: b.data.NextLedger, Log: &entryLog{}, Created: b.cfg.clock.Now()}
		b.data.Ledgers[tn.String()] = l
		b.data.NextLedger++
		if b.disk != nil {
			b.disk.PutLedger(tn.String(), l, false)
		}
	}
}

// loadLedgerLocked fills a topic being created from its ledger, if the store
// has one, and reports whether it had. Called under the store's lock, before
// any other goroutine sees t.
func (b *Broker) loadLedgerLocked(t *Topic) bool {
	l := b.data.Ledgers[t.full]
	if l == nil {
		return false
	}
	l.Loaded = true
	t.ledger, t.log, t.created = l.ID, l.Log, l.Created
	t.terminated = l.Terminated
	t.properties = l.Properties
	t.topicEpoch, t.hasEpoch = l.TopicEpoch, l.HasEpoch
	t.view = l.View
	t.buf = l.Buf
	if l.DedupLast != nil {
		t.dedup = dedup{on: true, last: maps.Clone(l.DedupLast), idle: map[string]time.Time{}}
	}
	for name, d := range l.Subs {
		// The cursor comes back as persisted: read position at the first
		// unacknowledged entry, no redelivery counters (cursor.Durable).
		s := t.newSubscriptionLocked(name, true, d.Cursor.MarkDelete())
		s.cur = d.Cursor
		s.created = d.Created
		s.cursorLedger = d.CursorLedger
		s.fromFirst = d.FromFirst
		s.properties = d.Properties
		s.pending = d.Pending
		s.settledAtStart = t.log.Base
		if s.persisted != nil {
			s.writeCursorLocked(time.Time{}) // what was persisted is the cursor loaded
		}
	}
	return true
}

// releaseLocked takes t off this broker: its producers and consumers are
// closed and told so when tell is set (an unload; a crashed broker's
// connections are already cut),
// what its ledger keeps is written back, and the topic keeps nothing of the
// ledger's, so nothing it still runs can touch what the next broker loads.
// Called under t's lock; the caller then forgets t under the store's lock
// (forgetReleased).
func (t *Topic) releaseLocked(tell bool, dst *bundles.Node) *ledger {
	if tell {
		t.movingTo = dst
		t.disconnectAllLocked()
		t.movingTo = nil
	}
	t.released = true
	t.b.mu.Lock()
	stopping := t.b.stopping
	t.b.mu.Unlock()
	reason := "unload"
	switch {
	case !tell:
		reason = "crash"
	case stopping:
		reason = "stop"
	}
	t.b.emit(Event{Kind: EventTopicUnloaded, Topic: t.full, Reason: reason})
	if !t.name.Persistent {
		return nil
	}
	l := &ledger{
		ID: t.ledger, Log: t.log, Created: t.created,
		Subs:       map[string]durableSub{},
		Terminated: t.terminated,
		TopicEpoch: t.topicEpoch, HasEpoch: t.hasEpoch,
		DedupLast:  maps.Clone(t.dedup.last),
		Properties: t.properties,
		View:       t.view,
		Buf:        t.buf,
	}
	// Pulsar loads the topic anew: its compaction status starts again
	// from NOT_RUN (the compacted view stays).
	l.View.Ran = false
	for name, s := range t.subs {
		if !s.durable {
			continue
		}
		// Closing persists everything; a crash leaves what was persisted
		// last. The ledger gets a copy, so that nothing the released
		// topic still runs (a timer) touches what the next load uses.
		cur := s.cur.Durable()
		if !tell && s.persisted != nil {
			cur = s.persisted
		}
		// Transactional acknowledgements are written to the pending-ack
		// store as they come, so a crash keeps them too.
		var pending *txn.PendingAcks
		if s.pending != nil && !s.pending.Empty() {
			pending = s.pending.Clone()
		}
		l.Subs[name] = durableSub{Cursor: cur, Created: s.created, CursorLedger: s.cursorLedger, FromFirst: s.fromFirst,
			Properties: s.properties, Pending: pending}
	}
	if tell && t.b.disk != nil {
		t.b.disk.PutLedger(t.full, l, true) // a clean unload persists everything
	}
	t.log = &entryLog{}
	t.subs = map[string]*Subscription{}
	t.buf = nil
	t.view = compactedView{}
	return l
}

// forgetReleased removes a released topic from the broker's table and puts
// its ledger back in the store (nil for a non-persistent topic).
func (b *Broker) forgetReleased(t *Topic, l *ledger) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics[t.full] == t {
		delete(b.topics, t.full)
	}
	if l != nil && b.data.Ledgers[t.full] != nil {
		b.data.Ledgers[t.full] = l
	}
}

// releaseTopic unloads one topic from this broker (release, then forget);
// dst, when set, is the broker its clients are told to move to.
func (b *Broker) releaseTopic(t *Topic, tell bool, dst *bundles.Node) {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		return
	}
	l := t.releaseLocked(tell, dst)
	b.forgetReleased(t, l) // under t's lock: see lockTopic
	t.mu.Unlock()
}
