package broker

// What the admin API asks of a topic's backlog from a given position: its
// size, what it holds (Pulsar's analyze-backlog), and an expiry up to that
// position.

// BacklogAnalysis is what a subscription's backlog holds, from its first
// unacknowledged entry (or a given position) to the end of the topic, as
// Pulsar's AnalyzeSubscriptionBacklogResult counts it: entries, and the
// messages in them (a batch counts each of its messages). First and Last
// are the first and last entry counted, nil when there are none.
type BacklogAnalysis struct {
	Entries, Messages int64
	First, Last       *MessageID
}

// BacklogSizeFrom estimates the bytes of a persistent topic's entries after
// id, as Pulsar's getBacklogSizeByMessageId does (the managed ledger's
// estimate: all of it less as many average entries as there are up to id).
// An id in an earlier ledger counts the whole topic, one in a later ledger
// or past the end nothing.
func (b *Broker) BacklogSizeFrom(topic string, id MessageID) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return 0, topicNotFound(tn)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case id.Ledger < int64(t.ledger):
		return t.sizeAfterLocked(-1), nil
	case id.Ledger > int64(t.ledger):
		return 0, nil
	}
	return t.sizeAfterLocked(max(id.Entry, -1)), nil
}

// AnalyzeBacklog counts what subscription sub of a persistent topic has
// still to read: from the entry after its mark-delete position, or from
// from (inclusive) when it is given, to the end of the topic. Transaction
// markers are not counted.
func (b *Broker) AnalyzeBacklog(topic, sub string, from *MessageID) (BacklogAnalysis, error) {
	var a BacklogAnalysis
	err := b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		start := s.cur.MarkDelete() + 1
		if from != nil {
			switch {
			case from.Ledger < int64(t.ledger):
				start = t.log.Base
			case from.Ledger > int64(t.ledger):
				start = t.log.End()
			default:
				start = from.Entry
			}
		}
		for e := max(start, t.log.Base); e < t.log.End(); e++ {
			ent := t.log.Get(e)
			if ent == nil || ent.Marker {
				continue
			}
			id := t.eventID(e)
			if a.First == nil {
				a.First = &id
			}
			a.Last = &id
			a.Entries++
			a.Messages += int64(max(ent.Messages, 1))
		}
	})
	return a, err
}

// ExpireMessagesAtPosition expires, for subscription sub of a persistent
// topic, every entry up to id (with excluded, up to the entry after it), as
// Pulsar's expiry by position does: the mark-delete position moves there
// unless it is past it already. An id past the topic's last entry is
// refused with ErrExpiryNotIssued and expires nothing; one before the
// topic's first entry expires nothing.
func (b *Broker) ExpireMessagesAtPosition(topic, sub string, id MessageID, excluded bool) error {
	var refused error
	err := b.onSubscriptions(topic, sub, func(t *Topic, s *Subscription) {
		last := t.log.End() - 1
		if id.Ledger > int64(t.ledger) || id.Ledger == int64(t.ledger) && id.Entry > last {
			refused = errorf(ErrExpiryNotIssued, "Expire message by position not issued on topic %s for subscription %s"+
				" due to ongoing message expiration not finished or invalid message position provided.", t.full, s.name)
			return
		}
		if id.Ledger < int64(t.ledger) {
			return
		}
		through := id.Entry
		if excluded {
			through++
		}
		t.markDeleteThroughLocked(s, min(through, last), "expire-messages")
	})
	if err != nil {
		return err
	}
	return refused
}
