package broker

import (
	"sort"
	"time"

	"github.com/pulsarsim/pulsarsim/dispatch"
)

// TopicInternalStats is a persistent topic's storage as Pulsar's managed
// ledger reports it (the admin API's internalStats): the topic's one
// ledger, what it holds, and the state of each subscription's cursor.
// Positions are entry ids on Ledger; -1 is "before the first entry".
//
// pulsarsim keeps a topic's entries in one ledger for its whole life, where
// Pulsar rolls over to a new ledger every 50,000 entries (and after a
// broker restart): ledger counts agree with Pulsar's below that.
type TopicInternalStats struct {
	// Ledger is the id of the topic's ledger, created with the topic at
	// LedgerCreated (broker clock).
	Ledger        int64
	LedgerCreated time.Time
	// EntriesAdded counts the entries appended since the topic was created
	// (a batch is one entry), freed ones included; Entries and Size count
	// the entries still stored and their bytes.
	EntriesAdded int64
	Entries      int64
	Size         int64
	// LastEntry is the id of the last entry appended, -1 for none.
	LastEntry int64
	// Terminated is set once the topic was terminated.
	Terminated bool
	Cursors    map[string]CursorInternalStats
}

// CursorInternalStats is one subscription's cursor in TopicInternalStats.
type CursorInternalStats struct {
	// MarkDelete is the last entry of the acknowledged prefix;
	// ReadPosition the next entry to read for a first delivery, or
	// MarkDelete itself while a subscription created at the earliest
	// position has read and acknowledged nothing (Pulsar's cursor then
	// still reads from before the first entry).
	MarkDelete   int64
	ReadPosition int64
	// Acked lists the individually acknowledged entries after MarkDelete
	// as ranges, in order.
	Acked []EntryRange
	// Consumed counts the entries the cursor acknowledged since the
	// subscription was created (Pulsar's messagesConsumedCounter: the
	// entries added since, less the backlog's growth).
	Consumed int64
	// Ledger is the id of the ledger the cursor's state is kept in: 0 for
	// a durable cursor that has recorded no acknowledgement yet (Pulsar
	// creates that ledger on the first one) and for a non-durable one.
	Ledger  int64
	Durable bool
	// Active is set while the subscription has consumers; WaitingRead
	// while one of them has permits and the cursor has read everything
	// (Pulsar's pending read, waiting for the next entry).
	Active      bool
	WaitingRead bool
	// Created is when the subscription was created (broker clock).
	Created time.Time
}

// EntryRange is a range of entries, From excluded and To included: Pulsar
// writes it (L:From..L:To].
type EntryRange struct{ From, To int64 }

// TopicInternalStats returns a topic's (or one partition's) internal stats.
// A non-persistent topic stores nothing: its stats hold EntriesAdded and
// its subscriptions' names only, with zero cursors. A name that is not a
// topic of this broker, a partitioned topic's own name included, fails with
// ErrTopicNotFound.
func (b *Broker) TopicInternalStats(topic string) (TopicInternalStats, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return TopicInternalStats{}, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil || b.partitions(tn) > 0 {
		return TopicInternalStats{}, topicNotFound(tn)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !tn.Persistent {
		// Nothing is stored: the messages published, and the names of the
		// subscriptions.
		st := TopicInternalStats{EntriesAdded: t.log.End(), Cursors: map[string]CursorInternalStats{}}
		for name := range t.subs {
			st.Cursors[name] = CursorInternalStats{}
		}
		return st, nil
	}
	st := TopicInternalStats{Ledger: int64(t.ledger), LedgerCreated: t.created, EntriesAdded: t.log.End(),
		Entries: int64(len(t.log.Entries)), LastEntry: t.log.End() - 1, Terminated: t.terminated,
		Cursors: map[string]CursorInternalStats{}}
	for _, e := range t.log.Entries {
		st.Size += int64(len(e.Data))
	}
	for name, s := range t.subs {
		st.Cursors[name] = s.internalStatsLocked()
	}
	return st, nil
}

// internalStatsLocked reports the subscription's cursor.
func (s *Subscription) internalStatsLocked() CursorInternalStats {
	t := s.topic
	end := t.log.End()
	cs := CursorInternalStats{MarkDelete: s.cur.MarkDelete(), ReadPosition: s.cur.ReadPosition(),
		Ledger: int64(s.cursorLedger), Durable: s.durable, Active: len(s.consumers) > 0, Created: s.created}
	if s.fromFirst && cs.MarkDelete == s.settledAtStart-1 && cs.ReadPosition == cs.MarkDelete+1 {
		// Nothing read or acknowledged yet: the read position is still
		// before the first entry, as Pulsar's cursor opened there.
		cs.ReadPosition = cs.MarkDelete
	}
	cs.Acked = entryRanges(s.cur.Acked())
	cs.Consumed = end - s.cur.Backlog(end) - s.settledAtStart
	if s.disp == nil || len(s.consumers) == 0 || cs.ReadPosition < t.readEnd() {
		return cs
	}
	ds := s.disp.Snapshot()
	if len(ds.Replay) > 0 {
		return cs
	}
	onlyActive := s.typ == dispatch.Exclusive || s.typ == dispatch.Failover
	for _, c := range ds.Consumers {
		if c.Permits > 0 && !c.Blocked && (c.Active || !onlyActive) {
			cs.WaitingRead = true
		}
	}
	return cs
}

// entryRanges groups sorted entry ids into ranges of consecutive ones.
func entryRanges(ids []int64) []EntryRange {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []EntryRange
	for _, e := range ids {
		if n := len(out); n > 0 && out[n-1].To == e-1 {
			out[n-1].To = e
			continue
		}
		out = append(out, EntryRange{From: e - 1, To: e})
	}
	return out
}

// cursorWrittenLocked notes that a durable cursor records a change of its
// acknowledged entries: the first one gives it a ledger id, taken from the
// sequence of the topics' ledgers, as Pulsar's first mark-delete creates
// the cursor's ledger.
func (s *Subscription) cursorWrittenLocked() {
	if !s.durable || s.cursorLedger != 0 {
		return
	}
	b := s.topic.b
	b.mu.Lock()
	s.cursorLedger = b.data.NextLedger
	b.data.NextLedger++
	b.mu.Unlock()
}

// noteMarkDeleteLocked notes when the mark-delete position moved past
// before, for stats.
func (s *Subscription) noteMarkDeleteLocked(before int64) {
	if s.cur.MarkDelete() > before {
		s.lastMDMoved = s.topic.b.cfg.clock.Now()
	}
}

// rangesSerializedSize is the size Pulsar's cursor gives its individually
// deleted ranges when it stores them: each range as a protobuf message of
// two positions, a position as a ledger id and an entry id (varints).
func rangesSerializedSize(ledger int64, rs []EntryRange) int64 {
	pos := func(e int64) int64 { return 2 + varintLen(ledger) + varintLen(e) }
	var n int64
	for _, r := range rs {
		n += 2 + pos(r.From) + 2 + pos(r.To)
	}
	return n
}

// varintLen is the length of v as a protobuf varint (int64 encoding).
func varintLen(v int64) int64 {
	u := uint64(v)
	n := int64(1)
	for ; u >= 0x80; u >>= 7 {
		n++
	}
	return n
}
