package broker

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// Topic is one topic (or one partition of a partitioned topic) with its
// in-memory log. All of its state changes under its own lock.
type Topic struct {
	b    *Broker
	name TopicName
	full string
	// subRate counts the subscribes of the subscribe rate's period
	// (subscriberate.go).
	subRate subscribeRate

	mu     topicLock
	ledger uint64
	log    *entryLog
	// undurable counts the entries appended whose commit to the data
	// directory has not come yet, the last ones of the log; durableWake is
	// set while a task to dispatch the ones that came is queued
	// (datadir.go).
	undurable   atomic.Int64
	durableWake atomic.Bool
	producers   map[*Producer]struct{}
	// exclusive holds the topic under an exclusive access mode; waiting are
	// the WaitForExclusive producers queued for it (accessmode.go).
	exclusive  *Producer
	waiting    []waitingProducer
	topicEpoch uint64
	hasEpoch   bool
	// terminated topics refuse new messages (terminate.go).
	terminated bool
	// properties are the topic's own (topicproperties.go), nil for none;
	// replaced, never changed in place, so a ledger may share the map.
	properties map[string]string
	subs       map[string]*Subscription
	deleted    bool
	// released is set when the topic was taken off its broker (load.go):
	// it keeps nothing of its ledger, and a client reaching it must look
	// the topic up again.
	released bool
	// readyAt is when the topic's load from the store ends, by the wall
	// clock: the subscribes that wait for it are answered then
	// (topicload.go). Zero for a topic created here.
	readyAt time.Time
	// migrated topics moved to another cluster with theirs (migration.go).
	migrated bool
	// movingTo is the broker a transfer moves the topic to, while its
	// producers and consumers are told (their CLOSE_* name it).
	movingTo *bundles.Node
	// lastActive is when the topic was last seen active, by the broker
	// clock (inactive.go).
	lastActive time.Time
	// created is when the topic, and so its ledger, was created (broker
	// clock).
	created time.Time
	// oldestAt is the publish time (ms) of the oldest unacknowledged entry
	// as the last backlog quota check by age estimated it, when
	// oldestMeasured (stats).
	oldestAt       int64
	oldestMeasured bool
	// dedup is the topic's message deduplication (dedup.go).
	dedup dedup

	trimHolder *Subscription // the slowest subscription at the last trim

	// buf is the topic's transaction buffer (txntopic.go), nil until the
	// topic stores a transactional message or ends a transaction.
	buf *txn.Buffer

	// view is the topic's compacted view (compaction.go).
	view compactedView

	// pol are the policies in force, resolved when the broker's policies
	// were at generation polGen (policiesLocked).
	pol    *Policies
	polGen uint64
	// publish limits the rate of SENDs (publishrate.go), dispatchRate what
	// all subscriptions deliver (dispatchrate.go).
	publish      publishLimiter
	dispatchRate dispatchLimiter

	// messagesIndexed counts the messages the broker entry metadata index
	// has numbered (entrymetadata.go).
	messagesIndexed int64
}

// topicLock is a topic's lock. Events are queued while it is held (emit),
// and releasing it delivers them, so that no hook runs under it.
type topicLock struct {
	mu     sync.Mutex
	events *eventQueue
}

// Lock takes the topic's lock.
func (l *topicLock) Lock() { l.mu.Lock() }

// Unlock releases the topic's lock, then delivers the queued events.
func (l *topicLock) Unlock() {
	l.mu.Unlock()
	l.events.flush(false)
}

// DefaultTrimBlock and DefaultTrimBlockBytes bound a topic's blocks, the
// units in which acknowledged entries are freed, as Pulsar's ledgers bound
// what it deletes: a block closes once it holds DefaultTrimBlock entries
// (Pulsar's managedLedgerMaxEntriesPerLedger) or DefaultTrimBlockBytes of
// entries (far below Pulsar's 2 GiB per ledger, to bound a fake's memory),
// and only closed blocks are freed. Short tests thus still find every
// entry, as they would on Pulsar.
const (
	DefaultTrimBlock      = 50_000
	DefaultTrimBlockBytes = 64 << 20
)

// trimLocked frees the closed blocks whose entries every subscription has
// acknowledged: those at or below the lowest mark-delete position over the
// topic's subscriptions. A topic without subscriptions keeps every entry,
// so that a test can inspect what was produced. The subscription that held
// the log back last time is remembered, so the usual call costs O(1).
func (t *Topic) trimLocked() {
	if len(t.subs) == 0 || len(t.log.Closed) == 0 {
		return
	}
	first := t.log.Closed[0] - 1 // the last entry of the oldest closed block
	if h := t.trimHolder; h != nil && t.subs[h.name] == h && h.cur.MarkDelete() < first {
		return // the slowest subscription has not acknowledged that block
	}
	low := int64(math.MaxInt64)
	for _, s := range t.subs {
		if md := s.cur.MarkDelete(); md < low {
			low, t.trimHolder = md, s
		}
	}
	n := 0
	for n < len(t.log.Closed) && t.log.Closed[n]-1 <= low {
		n++
	}
	if n > 0 {
		t.log.FreeThrough(t.log.Closed[n-1] - 1)
		t.log.Closed = append(t.log.Closed[:0], t.log.Closed[n:]...)
		t.log.ClosedAt = append(t.log.ClosedAt[:0], t.log.ClosedAt[n:]...)
		if d := t.b.disk; d != nil && t.name.Persistent {
			d.FreeEntries(t.full, t.log)
		}
	}
}

// lookupTopic returns the topic with this canonical name, or nil. A topic
// whose ledger the store keeps but that no broker has loaded is loaded here
// when this broker may serve it, as Pulsar's getTopic loads it.
func (b *Broker) lookupTopic(name string) *Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.topics[name]; t != nil {
		return t
	}
	if l := b.data.Ledgers[name]; l != nil && !l.Loaded && !b.closed {
		if tn, err := ParseTopicName(name); err == nil && b.servesLocked(tn) {
			return b.createTopicLocked(tn)
		}
	}
	return nil
}

// lockTopic is getOrCreateTopic, returning the topic with its lock held: a
// topic its broker released (unloaded) between the two is looked up again,
// so that no producer or consumer attaches to a topic that keeps nothing of
// its ledger. releaseTopic forgets a topic before it lets go of its lock,
// so the second look finds the ledger, not the released topic.
func (b *Broker) lockTopic(tn TopicName, create bool) (*Topic, error) {
	for {
		t, err := b.getOrCreateTopic(tn, create)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		if !t.released {
			return t, nil
		}
		t.mu.Unlock()
	}
}

// getOrCreateTopic returns the topic, creating it when create is set. It
// fails with errNoNamespace when the topic's namespace does not exist (as
// Pulsar refuses anything on it, before it looks for the topic), else with
// ErrTopicNotFound when the topic does not exist and create is not set.
func (b *Broker) getOrCreateTopic(tn TopicName, create bool) (*Topic, error) {
	full := tn.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.topics[full]; t != nil {
		return t, nil
	}
	if !b.namespaceReadyLocked(tn.NamespaceName()) {
		return nil, errNoNamespace
	}
	if b.partitionPastCountLocked(tn) {
		return nil, errPartitionPastCount
	}
	// A partition of a partitioned topic is created whenever it is used:
	// an inactive-topic check may have deleted it. A topic whose ledger
	// the store keeps is loaded, not created.
	if l := b.data.Ledgers[full]; l != nil && l.Loaded || !b.servesLocked(tn) {
		// Another broker has the topic loaded (it is moving), or owns it.
		return nil, errNotServed
	}
	if !create && b.data.Ledgers[full] == nil && (tn.Partition < 0 || tn.Partition >= b.data.Partitioned[tn.Base().String()]) {
		return nil, topicNotFound(tn)
	}
	return b.createTopicLocked(tn), nil
}

func (b *Broker) createTopicLocked(tn TopicName) *Topic {
	t := &Topic{
		b:          b,
		name:       tn,
		full:       tn.String(),
		producers:  map[*Producer]struct{}{},
		subs:       map[string]*Subscription{},
		lastActive: b.cfg.clock.Now(),
		created:    b.cfg.clock.Now(),
	}
	t.mu.events = &b.events
	reason := "created"
	if tn.Persistent && b.loadLedgerLocked(t) {
		reason = "loaded"
		if d := b.cfg.topicLoadTime; d > 0 {
			t.readyAt = time.Now().Add(d)
		}
	} else {
		t.ledger = b.data.NextLedger
		b.data.NextLedger++
		t.log = &entryLog{}
		if tn.Persistent {
			b.newLedgerLocked(t)
		}
	}
	// Delivered with the next events of any topic (no topic lock is held).
	b.emit(Event{Kind: EventTopicLoaded, Topic: t.full, Reason: reason})
	// No other goroutine sees t before the broker's lock is released, so
	// its subscriptions are set up here without its own lock.
	p := b.appliedPoliciesLocked(tn)
	t.ensureCompactionSubscriptionLocked(&p)
	_, t.migrated = b.migrationURL() // a topic loads migrated (migration.go)
	b.topics[t.full] = t
	return t
}

// topicExists reports whether a topic, or a partitioned topic, has this name.
func (b *Broker) topicExists(tn TopicName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicExistsLocked(tn)
}

func (b *Broker) topicExistsLocked(tn TopicName) bool {
	if _, ok := b.topics[tn.String()]; ok {
		return true
	}
	if _, ok := b.data.Ledgers[tn.String()]; ok {
		return true
	}
	_, ok := b.data.Partitioned[tn.Base().String()]
	return ok
}

// partitions returns the partition count of a partitioned topic, or 0.
func (b *Broker) partitions(tn TopicName) int {
	if tn.Partition >= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.Partitioned[tn.String()]
}

// messageID builds the wire id of entry n of this topic.
func (t *Topic) messageID(n int64) *pb.MessageIdData {
	if !t.name.Persistent {
		return protocol.MessageID(0, 0, int32(t.name.Partition))
	}
	return protocol.MessageID(t.ledger, uint64(n), int32(t.name.Partition))
}

func (t *Topic) removeProducer(p *Producer) {
	t.mu.Lock()
	t.dropProducerLocked(p)
	t.mu.Unlock()
}

// appendLocked stores e as the topic's next entry, reports it as published by
// producer (before any delivery it causes), and offers it to every
// subscription. It returns the entry's number.
func (t *Topic) appendLocked(e *entry, producer string, md *pb.MessageMetadata) int64 {
	t.replicationLocked() // geo.go: replicators see the entry
	block, blockBytes := t.b.trimBlock, t.b.trimBlockBytes
	if block <= 0 {
		block = DefaultTrimBlock
	}
	if blockBytes <= 0 {
		blockBytes = DefaultTrimBlockBytes
	}
	if t.b.cfg.writesEntryMetadata() && t.name.Persistent {
		t.addEntryMetadataLocked(e)
	}
	n := t.log.Append(e, block, blockBytes, t.b.nowMillis)
	t.saveEntryLocked(n, e)
	if t.b.tracing() && !e.Marker {
		ev := Event{Kind: EventPublished, Topic: t.full, Producer: producer, ID: t.eventID(n),
			Properties: properties(md.GetProperties())}
		if e.InTxn {
			id := e.Txn
			ev.Txn = &id
		}
		t.b.emit(ev)
	}
	for _, s := range t.subs {
		s.entryAddedLocked()
	}
	t.trimLocked()
	return n
}
