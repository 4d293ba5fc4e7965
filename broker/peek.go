package broker

import (
	"errors"
)

// The read-only views of a topic's entries that Pulsar's admin API serves:
// the nth entry of a subscription's backlog (peek), the nth from either end
// of the topic (examine), the last message id, and the entry at a publish
// time. Each applies to one topic or partition, never to a partitioned
// topic's name.

// Errors of the entry views.
var (
	// ErrNoEntries: the topic holds no entry to examine.
	ErrNoEntries = errors.New("Could not examine messages due to the total message is zero")
	// ErrBeyondEntries: a position counted from the end of the topic lies
	// before its first entry.
	ErrBeyondEntries = errors.New("position beyond the topic's entries")
)

// entryLocked returns the bytes and id of entry n of t, nil bytes when it
// is not stored.
func (t *Topic) entryLocked(n int64) ([]byte, MessageID) {
	var data []byte
	if e := t.log.Get(n); e != nil {
		data = e.Data
	}
	return data, t.eventID(n)
}

// PeekEntry returns the nth entry (from 1) of subscription sub's backlog:
// the entries after its mark-delete position that it has not acknowledged
// one by one, as Pulsar's peek reads them (an entry whose batch is acked in
// part is whole). As Pulsar 4.0.8 does, a subscription that does not exist
// is created first, durable, at the earliest position. It fails with
// ErrTopicNotFound, or ErrMessageNotFound when the backlog is shorter than
// n; n must be at least 1.
func (b *Broker) PeekEntry(topic, sub string, n int) (Entry, error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return Entry{}, err
	}
	if n < 1 {
		return Entry{}, errorf(ErrInvalidMessage, "peek position %d is not positive", n)
	}
	t.mu.Lock()
	if t.deleted {
		t.mu.Unlock()
		return Entry{}, topicNotFound(t.name)
	}
	s := t.subs[sub]
	if s == nil {
		s = t.newSubscriptionLocked(sub, true, t.log.Base-1)
		s.fromFirst = true
	}
	var data []byte
	var id MessageID
	left := n
	for e := s.cur.NextUnacked(max(s.cur.MarkDelete()+1, t.log.Base)); e < t.log.End(); e = s.cur.NextUnacked(e + 1) {
		if left--; left == 0 {
			data, id = t.entryLocked(e)
			break
		}
	}
	t.mu.Unlock()
	if data == nil {
		return Entry{}, ErrMessageNotFound
	}
	return b.openStored(data, id)
}

// ExamineEntry returns the nth entry of a topic counted from its first
// stored entry (fromEarliest), or back from its last one, as Pulsar's
// examine-message does: n below 1 counts as 1, and from the earliest a
// position beyond the last entry gives the last. It fails with
// ErrTopicNotFound, ErrNoEntries, or ErrBeyondEntries when n counted back
// from the last entry passes the first.
func (b *Broker) ExamineEntry(topic string, fromEarliest bool, n int64) (Entry, error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return Entry{}, err
	}
	n = max(n, 1)
	t.mu.Lock()
	first, last := t.log.Base, t.log.End()-1
	var e int64
	switch {
	case last < first:
		t.mu.Unlock()
		return Entry{}, ErrNoEntries
	case fromEarliest:
		e = first + min(n-1, last-first)
	case n-1 > last-first:
		t.mu.Unlock()
		return Entry{}, ErrBeyondEntries
	default:
		e = last - (n - 1)
	}
	data, id := t.entryLocked(e)
	t.mu.Unlock()
	return b.openStored(data, id)
}

// LastMessageID returns the id of a topic's last message: its last entry's
// id with, for a batch, the index of the batch's last message (BatchIndex
// -1 otherwise). A topic with no entry answers entry -1 of its ledger. It
// fails with ErrTopicNotFound.
func (b *Broker) LastMessageID(topic string) (MessageID, error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return MessageID{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.log.End() - 1
	id := t.eventID(last)
	if e := t.log.Get(last); e != nil && e.Batched {
		id.BatchIndex = e.Messages - 1
	}
	return id, nil
}

// MessageIDAtTime returns the id of a topic's first entry published at or
// after ms (milliseconds since the epoch), or the id just after its last
// entry when there is none, as Pulsar's get-message-id by timestamp answers.
// It fails with ErrTopicNotFound.
func (b *Broker) MessageIDAtTime(topic string, ms int64) (MessageID, error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return MessageID{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.eventID(t.firstAtOrAfterLocked(uint64(max(ms, 0)))), nil
}
