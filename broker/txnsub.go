package broker

import (
	"errors"
	"math/bits"

	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// A subscription's side of transactions (Pulsar's PendingAckHandleImpl and
// the transactional paths of Consumer and PersistentSubscription): an ACK in
// a transaction is held in the subscription's pending acknowledgements
// (txn.PendingAcks), where it may conflict with another; a held entry leaves
// its Shared or Key_Shared consumer's pending acks at once, and the
// dispatcher passes over it until the transaction ends. A commit
// acknowledges what the transaction held; an abort gives it back: on Shared
// and Key_Shared each entry is redelivered with its count raised by one, on
// Exclusive and Failover the active consumer is rewound.

// javaTxnException is the message of an ACK_RESPONSE refusing a
// transactional ack: Pulsar sends the exception's class and message.
func javaTxnException(err error) string {
	switch {
	case errors.Is(err, txn.ErrConflict):
		return "org.apache.pulsar.transaction.common.exception.TransactionConflictException: " + err.Error()
	case errors.Is(err, txn.ErrNotAllowed):
		return "org.apache.pulsar.broker.service.BrokerServiceException$NotAllowedException: " + err.Error()
	}
	return err.Error()
}

// pendingAcks returns the subscription's pending acknowledgements,
// creating them.
func (s *Subscription) pendingAcks() *txn.PendingAcks {
	if s.pending == nil {
		s.pending = txn.NewPendingAcks(s.topic.full, s.name, int64(s.topic.ledger))
	}
	return s.pending
}

// txnAckLocked holds the ids of an ACK in its transaction.
func (s *Subscription) txnAckLocked(cs *Consumer, a *pb.CommandAck) error {
	t := s.topic
	id := txn.ID{Most: a.GetTxnidMostBits(), Least: a.GetTxnidLeastBits()}
	if a.GetAckType() == pb.CommandAck_Cumulative {
		mid := a.GetMessageId()[0]
		n, ok := t.entryOf(mid)
		if !ok {
			return nil
		}
		if err := s.pendingAcks().AckCumulative(id, txn.Position{Entry: n, AckSet: nilIfEmpty(mid.GetAckSet())}, s.cur); err != nil {
			return err
		}
		s.noteTxnAckLocked(cs, id, n, true)
		s.savePendingLocked()
		return nil
	}
	var acks []txn.Ack
	individual := s.typ == dispatch.Shared || s.typ == dispatch.KeyShared
	for _, mid := range a.GetMessageId() {
		n, ok := t.entryOf(mid)
		if !ok {
			continue
		}
		set := nilIfEmpty(mid.GetAckSet())
		if individual && set == nil {
			// Pulsar's consumer drops the entry from its pending acks
			// before the acknowledgement is checked.
			s.disp.ReleasePending(n)
		}
		acks = append(acks, txn.Ack{Entry: n, AckSet: set, BatchSize: int(mid.GetBatchSize())})
	}
	err := s.pendingAcks().AckIndividual(id, acks, s.cur)
	if err == nil {
		s.savePendingLocked()
	}
	for _, ack := range acks {
		if err == nil {
			s.noteTxnAckLocked(cs, id, ack.Entry, false)
		}
		if individual && ack.AckSet != nil {
			s.releaseIndexesLocked(ack.Entry)
		}
	}
	s.dispatchLocked()
	return err
}

// releaseIndexesLocked lowers the unacknowledged count of the consumer
// holding batch entry n to the indexes neither the cursor nor a transaction
// holds, and releases the entry when none is left.
func (s *Subscription) releaseIndexesLocked(n int64) {
	free, held := s.pending.Held(n)
	if !held {
		return
	}
	left := int32(0)
	set := s.cur.AckSet(n)
	for i, w := range free {
		if set != nil && i < len(set) {
			w &= set[i]
		}
		left += int32(bits.OnesCount64(uint64(w)))
	}
	if free == nil || left == 0 {
		s.disp.ReleasePending(n)
		return
	}
	s.disp.ReleaseIndexes(n, left)
}

// noteTxnAckLocked records and reports an acknowledgement held in a
// transaction.
func (s *Subscription) noteTxnAckLocked(cs *Consumer, id txn.ID, n int64, cumulative bool) {
	t := s.topic
	t.b.recordAcked(id, TxnAck{Topic: t.full, Subscription: s.name, ID: t.eventID(n), Cumulative: cumulative})
	t.b.emit(Event{Kind: EventTxnAcked, Topic: t.full, Subscription: s.name, Consumer: cs.Name,
		ConsumerID: cs.ID, Remote: cs.conn.remote, ID: t.eventID(n), Cumulative: cumulative, Txn: &id})
}

func nilIfEmpty(s []int64) []int64 {
	if len(s) == 0 {
		return nil
	}
	return s
}

// endOnSubscription ends a transaction on one subscription it acknowledged
// on: a commit acknowledges what it held, an abort gives it back; then a
// transaction the low water mark shows ended without telling the
// subscription is aborted here too. A topic or subscription that does not
// exist, or never held anything, needs nothing.
func (b *Broker) endOnSubscription(topic, sub string, id txn.ID, commit bool, lowWaterMark int64) {
	t := b.lockClusterTopic(topic)
	if t == nil {
		return
	}
	defer t.mu.Unlock()
	s := t.subs[sub]
	if s == nil || s.pending == nil || s.disp == nil {
		return
	}
	var out txn.Outcome
	if commit {
		out = s.pending.Commit(id)
		s.commitLocked(id, out)
	} else {
		out = s.pending.Abort(id)
		s.giveBackLocked(id, out, true)
	}
	if out.Ended {
		if next, ok := s.pending.LowWaterMark(id, lowWaterMark); ok {
			s.giveBackLocked(next, s.pending.Abort(next), false)
		}
	}
	s.savePendingLocked()
	s.dispatchLocked()
}

// commitLocked acknowledges what a committed transaction held.
func (s *Subscription) commitLocked(id txn.ID, out txn.Outcome) {
	t := s.topic
	ack := func(n int64, set []int64, cumulative bool) {
		s.ackEntryLocked(n, set, cumulative, s.disp.CommitCumulative)
		t.b.emit(Event{Kind: EventAcked, Topic: t.full, Subscription: s.name, ID: t.eventID(n),
			Cumulative: cumulative, Txn: &id})
	}
	if c := out.Cumulative; c != nil {
		ack(c.Entry, c.AckSet, true)
		return
	}
	for _, p := range out.Acknowledge {
		ack(p.Entry, p.AckSet, false)
		if s.cur.IsAcked(p.Entry) {
			s.pending.Forget(p.Entry, s.cur.MarkDelete())
		}
	}
}

// giveBackLocked gives the entries an aborted transaction held back to the
// subscription. rewind is false for an abort the low water mark causes,
// where Pulsar has no consumer to rewind on Exclusive and Failover.
func (s *Subscription) giveBackLocked(id txn.ID, out txn.Outcome, rewind bool) {
	if len(out.Redeliver) == 0 {
		return
	}
	t := s.topic
	entries := make([]int64, len(out.Redeliver))
	ids := make([]MessageID, len(out.Redeliver))
	for i, p := range out.Redeliver {
		entries[i], ids[i] = p.Entry, t.eventID(p.Entry)
	}
	t.b.emit(Event{Kind: EventTxnReturned, Topic: t.full, Subscription: s.name, IDs: ids, Txn: &id})
	if len(s.consumers) == 0 {
		if s.returnedIdle == nil {
			s.returnedIdle = map[int64]bool{}
		}
		for _, e := range entries {
			s.returnedIdle[e] = true
		}
	}
	if rewind || !(s.typ == dispatch.Exclusive || s.typ == dispatch.Failover) {
		s.disp.RedeliverEntries(entries, topicLog{t, s})
	}
}
