package broker

import (
	"errors"
	"maps"
	"sort"
)

// The subscription operations of the exported API: create one at a
// position, delete one, list them. A partitioned topic's name applies each
// to all of its partitions.

// Position is where a new subscription starts: Earliest, Latest or
// AtMessage(id).
type Position struct {
	earliest bool
	at       *MessageID
}

// The start positions of a new subscription.
var (
	// Earliest starts before the first stored entry: the whole backlog.
	Earliest = Position{earliest: true}
	// Latest starts after the last entry: only messages published from now.
	Latest = Position{}
)

// AtMessage starts at the entry of id, inclusive: a consumer's first
// message is that entry. An id from an older ledger (or a negative ledger)
// means Earliest; one beyond the end of the topic, Latest. The batch index is
// ignored: the whole entry is delivered.
func AtMessage(id MessageID) Position { return Position{at: &id} }

// markDeleteForLocked returns the mark-delete position of a new
// subscription starting at p.
func (t *Topic) markDeleteForLocked(p Position) int64 {
	earliest, latest := t.log.Base-1, t.log.End()-1
	switch {
	case p.earliest:
		return earliest
	case p.at == nil:
		return latest
	}
	switch id := *p.at; {
	case id.Ledger < 0 || id.Ledger < int64(t.ledger):
		return earliest
	case id.Ledger == int64(t.ledger) && id.Entry <= latest:
		return max(id.Entry-1, earliest)
	}
	return latest
}

// CreateSubscription creates the durable subscription sub on a topic (each
// partition of a partitioned topic), starting at the position at, as Pulsar's
// admin "create subscription" does. A topic that does not exist is created
// when the broker creates topics on first use, else ErrTopicNotFound; a
// subscription of that name fails with ErrSubscriptionExists.
func (b *Broker) CreateSubscription(topic, sub string, at Position) error {
	return b.createSubscription(topic, sub, at, nil)
}

// createSubscription is CreateSubscription, the subscription carrying
// props.
func (b *Broker) createSubscription(topic, sub string, at Position, props map[string]string) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	if sub == "" {
		return errorf(ErrInvalidName, "Empty subscription name")
	}
	var ts []*Topic
	for _, name := range b.partitionNames(tn) {
		t, err := b.getOrCreateTopic(name, b.autoCreateAllowed(name))
		if errors.Is(err, errNoNamespace) {
			return err
		}
		if err != nil {
			return topicNotFound(tn)
		}
		ts = append(ts, t)
	}
	for _, t := range ts {
		if t.hasSubscription(sub) {
			return ErrSubscriptionExists
		}
	}
	for _, t := range ts {
		t.mu.Lock()
		switch {
		case t.deleted || t.released:
			// A topic unloaded meanwhile is found in the store again by
			// the caller's next try; it is not found in this one.
			t.mu.Unlock()
			return topicNotFound(tn)
		case t.subs[sub] != nil:
			t.mu.Unlock()
			return ErrSubscriptionExists
		}
		s := t.newSubscriptionLocked(sub, true, t.markDeleteForLocked(at))
		// Pulsar moves the new cursor to the position asked for, which
		// records it, as an acknowledgement does, and counts the entries
		// before it as consumed.
		s.fromFirst = at.earliest || at.at != nil && at.at.Ledger < 0
		s.settledAtStart = t.log.Base
		s.properties = maps.Clone(props)
		if s.persisted != nil {
			s.saveCursorLocked() // with its properties and start
		}
		s.cursorWrittenLocked()
		t.mu.Unlock()
	}
	return nil
}

// partitionNames returns the names of a partitioned topic's partitions, or
// tn alone for any other topic.
func (b *Broker) partitionNames(tn TopicName) []TopicName {
	n := b.partitions(tn)
	if n == 0 {
		return []TopicName{tn}
	}
	names := make([]TopicName, n)
	for i := range names {
		names[i] = tn.PartitionName(i)
	}
	return names
}

// hasSubscription reports whether the topic has a subscription of this name.
func (t *Topic) hasSubscription(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subs[name] != nil
}

// subscriptionBusy reports whether the topic's subscription of this name has
// consumers attached.
func (t *Topic) subscriptionBusy(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[name]
	return s != nil && len(s.consumers) > 0
}

// DeleteSubscription deletes a subscription of a topic (on each partition of
// a partitioned topic). Without force it fails with ErrSubscriptionBusy while
// consumers are attached, as Pulsar does; with force they are closed first
// (each gets CLOSE_CONSUMER). The entries only it held back can be freed.
func (b *Broker) DeleteSubscription(topic, sub string, force bool) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	ts := b.topicsNamed(tn)
	if len(ts) == 0 && b.partitions(tn) == 0 {
		return topicNotFound(tn)
	}
	if !force {
		for _, t := range ts {
			if t.subscriptionBusy(sub) {
				return ErrSubscriptionBusy
			}
		}
	}
	found := false
	for _, t := range ts {
		t.mu.Lock()
		s := t.subs[sub]
		if s == nil {
			t.mu.Unlock()
			continue
		}
		if !force && len(s.consumers) > 0 {
			t.mu.Unlock()
			return ErrSubscriptionBusy
		}
		found = true
		s.closeConsumersLocked(nil, nil)
		delete(t.subs, sub)
		t.forgetSubscriptionLocked(s)
		if sub == CompactionSubscription {
			// Pulsar deletes the compacted ledger with the compactor's
			// cursor: the topic has no compacted view any more.
			t.view = compactedView{Ran: t.view.Ran}
			t.saveLedgerLocked()
		}
		if s.durable {
			t.markActiveLocked()
		}
		t.trimLocked()
		t.mu.Unlock()
	}
	if !found {
		return errorf(ErrSubscriptionNotFound, "Subscription %s not found for topic %s", sub, tn)
	}
	return nil
}

// Subscriptions returns the sorted names of a topic's subscriptions (of all
// partitions of a partitioned topic).
func (b *Broker) Subscriptions(topic string) ([]string, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	ts := b.topicsNamed(tn)
	if len(ts) == 0 && b.partitions(tn) == 0 {
		return nil, topicNotFound(tn)
	}
	set := map[string]bool{}
	for _, t := range ts {
		t.mu.Lock()
		for name := range t.subs {
			if !isReplicatorCursor(name) {
				set[name] = true
			}
		}
		t.mu.Unlock()
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
