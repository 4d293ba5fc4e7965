package broker

import (
	"math/bits"
	"sort"
	"time"
)

// SubscriptionSnapshot is a plain-value copy of one subscription's state,
// comparable with go-cmp. Positions are entry ids on the topic's ledger; an
// entry id of -1 means "before the first entry".
type SubscriptionSnapshot struct {
	Topic   string
	Name    string
	Type    string // "Exclusive", "Shared", "Failover" or "Key_Shared"
	Durable bool
	// MarkDelete is the last entry of the acknowledged prefix.
	MarkDelete MessageID
	// ReadPosition is the next entry to read for a first delivery.
	ReadPosition MessageID
	// Acked lists the individually acknowledged entries after MarkDelete.
	Acked []MessageID
	// PartlyAcked maps partly acknowledged batch entries (by entry id) to the
	// batch indexes still unacknowledged.
	PartlyAcked map[int64][]int32
	// Backlog counts the entries after MarkDelete not acknowledged.
	Backlog int64
	// Replay lists the entries waiting to be delivered again, in order.
	Replay []MessageID
	// Blocked is set while the consumers' unacknowledged messages keep a
	// Shared or Key_Shared subscription from reading new entries
	// (Policies.MaxUnackedMessagesPerSubscription).
	Blocked   bool
	Consumers []ConsumerSnapshot
	// SwitchingUntil is, while a Failover subscription waits out the switch
	// delay after its active consumer changed, when the delay ends by the
	// broker clock; zero otherwise.
	SwitchingUntil time.Time
}

// ConsumerSnapshot is one consumer of a SubscriptionSnapshot.
type ConsumerSnapshot struct {
	Name     string
	ID       uint64 // the client's consumer id on its connection
	Priority int32
	Permits  int
	// Unacked counts the messages delivered and not acknowledged (Shared and
	// Key_Shared).
	Unacked int
	Blocked bool
	// Active is set for the consumer of an Exclusive or Failover subscription
	// that receives the messages (on Failover, during the switch delay after
	// a change, the one that will).
	Active bool
	// Pending lists the entries delivered to the consumer and not yet
	// acknowledged, with their redelivery counts, in position order.
	Pending []PendingMessage
}

// PendingMessage is an entry held by a consumer.
type PendingMessage struct {
	ID              MessageID
	Messages        int32
	RedeliveryCount int32
}

// TopicSnapshot is a plain-value copy of one topic's state.
type TopicSnapshot struct {
	Name       string
	Persistent bool
	Partition  int
	// Entries counts the entries stored since the topic was created (one per
	// SEND; a batch is one entry), freed ones included.
	Entries int64
	// Retained counts the entries still held: Entries less those freed
	// because every subscription acknowledged them (see DefaultTrimBlock).
	Retained      int64
	Producers     []string
	Subscriptions []string
}

// Subscription returns a snapshot of a subscription, or false when the topic
// or the subscription does not exist.
func (b *Broker) Subscription(topic, name string) (SubscriptionSnapshot, bool) {
	t := b.topicByName(topic)
	if t == nil {
		return SubscriptionSnapshot{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[name]
	if s == nil {
		return SubscriptionSnapshot{}, false
	}
	return s.snapshotLocked(), true
}

// Topic returns a snapshot of a topic, or false when it does not exist.
func (b *Broker) Topic(topic string) (TopicSnapshot, bool) {
	t := b.topicByName(topic)
	if t == nil {
		return TopicSnapshot{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := TopicSnapshot{Name: t.full, Persistent: t.name.Persistent, Partition: t.name.Partition,
		Entries: t.log.End(), Retained: int64(len(t.log.Entries))}
	for p := range t.producers {
		ts.Producers = append(ts.Producers, p.Name)
	}
	for name := range t.subs {
		ts.Subscriptions = append(ts.Subscriptions, name)
	}
	sort.Strings(ts.Producers)
	sort.Strings(ts.Subscriptions)
	return ts, true
}

// Topics returns the full names of all topics, sorted.
func (b *Broker) Topics() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicNamesLocked()
}

// topicNamesLocked returns the sorted names of the topics this broker has
// loaded and of every persistent topic whose ledger the store keeps.
func (b *Broker) topicNamesLocked() []string {
	out := make([]string, 0, len(b.topics)+len(b.data.Ledgers))
	for name := range b.topics {
		out = append(out, name)
	}
	for name := range b.data.Ledgers {
		if b.topics[name] == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// topicByName parses a short or full name and returns the topic, or nil.
func (b *Broker) topicByName(name string) *Topic {
	tn, err := ParseTopicName(name)
	if err != nil {
		return nil
	}
	return b.lookupTopic(tn.String())
}

func (s *Subscription) snapshotLocked() SubscriptionSnapshot {
	t := s.topic
	snap := SubscriptionSnapshot{
		Topic:        t.full,
		Name:         s.name,
		Type:         s.typ.String(),
		Durable:      s.durable,
		MarkDelete:   t.eventID(s.cur.MarkDelete()),
		ReadPosition: t.eventID(s.cur.ReadPosition()),
		Backlog:      s.cur.Backlog(t.log.End()),
	}
	for _, e := range s.cur.Acked() {
		snap.Acked = append(snap.Acked, t.eventID(e))
	}
	for e, set := range s.cur.AckSets() {
		if snap.PartlyAcked == nil {
			snap.PartlyAcked = map[int64][]int32{}
		}
		size := int32(1)
		if en := t.log.Get(e); en != nil {
			size = en.Messages
		}
		// Walk the set's bits, not the batch size the producer claimed.
		var left []int32
		for w, word := range set {
			for ; word != 0; word &= word - 1 {
				i := int64(w)*64 + int64(bits.TrailingZeros64(uint64(word)))
				if i < int64(size) {
					left = append(left, int32(i))
				}
			}
		}
		snap.PartlyAcked[e] = left
	}
	if s.disp == nil {
		return snap
	}
	ds := s.disp.Snapshot()
	snap.Blocked = ds.SubscriptionBlocked
	if ds.Switching {
		snap.SwitchingUntil = time.UnixMilli(ds.SwitchAt)
	}
	for _, e := range ds.Replay {
		snap.Replay = append(snap.Replay, t.eventID(e))
	}
	for _, dc := range ds.Consumers {
		cons := s.consumers[dc.ID]
		if cons == nil {
			continue
		}
		cs := ConsumerSnapshot{Name: cons.Name, ID: cons.ID, Priority: dc.Priority, Permits: dc.Permits,
			Unacked: dc.Unacked, Blocked: dc.Blocked, Active: dc.Active}
		for _, p := range dc.Pending {
			cs.Pending = append(cs.Pending, PendingMessage{ID: t.eventID(p.Entry), Messages: p.Messages,
				RedeliveryCount: p.RedeliveryCount})
		}
		snap.Consumers = append(snap.Consumers, cs)
	}
	return snap
}
