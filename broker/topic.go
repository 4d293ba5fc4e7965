package broker

import (
	"math"
	"sync"
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

	mu        topicLock
	ledger    uint64
	log       *entryLog
	producers map[*Producer]struct{}
	// exclusive holds the topic under an exclusive access mode; waiting are
	// the WaitForExclusive producers queued for it (accessmode.go).
	exclusive  *Producer
	waiting    []waitingProducer
	topicEpoch uint64
	hasEpoch   bool
	// terminated topics refuse new messages (terminate.go).
	terminated bool
	subs       map[string]*Subscription
	deleted    bool
	// released is set when the topic was taken off its broker (load.go):
	// it keeps nothing of its ledger, and a client reaching it must look
	// the topic up again.
	released bool
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

// entry is one stored entry: a SEND's bytes after its command, kept exactly
// as the producer sent them, with what dispatch needs to know about it.
type entry struct {
	data []byte
	// publishTime is the entry's time in ms since the epoch: the broker
	// entry metadata's timestamp when the broker writes one, else the
	// metadata's publish time (Pulsar's entry timestamp).
	publishTime uint64
	messages    int32 // num_messages_in_batch, 1 when not batched
	batched     bool
	key         []byte // sticky key for Key_Shared
	deliverAt   int64  // deliver_at_time in ms, 0 if none
	// txn is the transaction of a transactional message (inTxn), from
	// its SEND or its metadata; txnMeta says the metadata names it, which
	// is where Pulsar's dispatcher looks for aborted messages
	// (pulsar-client-go v0.19.0 puts it in the SEND only). marker is set
	// for a transaction's commit or abort marker (which also carries its
	// txn).
	txn     txn.ID
	inTxn   bool
	txnMeta bool
	marker  bool
	// metaLen is the length of the broker entry metadata that opens data,
	// 0 for none (entrymetadata.go).
	metaLen uint8
}

// entryLog is a topic's entries. Entry n has entryId n within the topic's
// ledger; entries below base have been freed.
type entryLog struct {
	base    int64
	entries []*entry

	freedMessages int64 // messages in the freed entries
	freedBytes    int64 // bytes of the freed entries
	totalBytes    int64 // bytes of every entry appended, freed or not

	// Blocks: closed lists the end (exclusive) of each closed block not yet
	// freed, oldest first, and closedAt when it closed (ms, broker clock);
	// the open block holds blockEntries entries and blockBytes bytes since
	// the last close.
	closed       []int64
	closedAt     []int64
	blockEntries int64
	blockBytes   int64
}

func (l *entryLog) end() int64 { return l.base + int64(len(l.entries)) }

func (l *entryLog) get(n int64) *entry {
	if n < l.base || n >= l.end() {
		return nil
	}
	return l.entries[n-l.base]
}

// append stores e, closing the open block at maxEntries or maxBytes (at
// the time now returns).
func (l *entryLog) append(e *entry, maxEntries, maxBytes int64, now func() int64) int64 {
	l.entries = append(l.entries, e)
	l.blockEntries++
	l.blockBytes += int64(len(e.data))
	l.totalBytes += int64(len(e.data))
	if l.blockEntries >= maxEntries || l.blockBytes >= maxBytes {
		l.closed = append(l.closed, l.end())
		l.closedAt = append(l.closedAt, now())
		l.blockEntries, l.blockBytes = 0, 0
	}
	return l.end() - 1
}

// freeThrough frees the entries up to and including n: base moves past
// them and their bytes become garbage. The freed entries' messages and bytes
// are added to freedMessages and freedBytes, so counters of everything
// published stay right.
func (l *entryLog) freeThrough(n int64) {
	k := min(n+1-l.base, int64(len(l.entries)))
	if k <= 0 {
		return
	}
	for _, e := range l.entries[:k] {
		l.freedMessages += int64(e.messages)
		l.freedBytes += int64(len(e.data))
	}
	clear(l.entries[:k])
	l.entries = l.entries[k:]
	l.base += k
	if cap(l.entries) > 64 && len(l.entries) < cap(l.entries)/4 {
		// Drop the freed front of the backing array too.
		l.entries = append(make([]*entry, 0, 2*len(l.entries)), l.entries...)
	}
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
	if len(t.subs) == 0 || len(t.log.closed) == 0 {
		return
	}
	first := t.log.closed[0] - 1 // the last entry of the oldest closed block
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
	for n < len(t.log.closed) && t.log.closed[n]-1 <= low {
		n++
	}
	if n > 0 {
		t.log.freeThrough(t.log.closed[n-1] - 1)
		t.log.closed = append(t.log.closed[:0], t.log.closed[n:]...)
		t.log.closedAt = append(t.log.closedAt[:0], t.log.closedAt[n:]...)
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
	if l := b.ledgers[name]; l != nil && !l.loaded && !b.closed {
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
	if l := b.ledgers[full]; l != nil && l.loaded || !b.servesLocked(tn) {
		// Another broker has the topic loaded (it is moving), or owns it.
		return nil, errNotServed
	}
	if !create && b.ledgers[full] == nil && (tn.Partition < 0 || tn.Partition >= b.partitioned[tn.Base().String()]) {
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
	reason := "loaded"
	if !tn.Persistent || !b.loadLedgerLocked(t) {
		t.ledger = b.nextLedger
		b.nextLedger++
		t.log = &entryLog{}
		if tn.Persistent {
			b.newLedgerLocked(t)
		}
		reason = "created"
	}
	// Delivered with the next events of any topic (no topic lock is held).
	b.emit(Event{Kind: EventTopicLoaded, Topic: t.full, Reason: reason})
	// No other goroutine sees t before the broker's lock is released, so
	// its subscriptions are set up here without its own lock.
	p := b.appliedPoliciesLocked(tn)
	t.ensureCompactionSubscriptionLocked(&p)
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
	if _, ok := b.ledgers[tn.String()]; ok {
		return true
	}
	_, ok := b.partitioned[tn.Base().String()]
	return ok
}

// partitions returns the partition count of a partitioned topic, or 0.
func (b *Broker) partitions(tn TopicName) int {
	if tn.Partition >= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.partitioned[tn.String()]
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
	n := t.log.append(e, block, blockBytes, t.b.nowMillis)
	if t.b.tracing() && !e.marker {
		ev := Event{Kind: EventPublished, Topic: t.full, Producer: producer, ID: t.eventID(n),
			Properties: properties(md.GetProperties())}
		if e.inTxn {
			id := e.txn
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
