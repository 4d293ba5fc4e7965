package broker

import (
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// A topic's side of transactions (Pulsar's TopicTransactionBuffer): a
// transactional message is stored as it arrives and gets its receipt, and
// the topic's buffer (txn.Buffer) keeps consumers and readers from reading
// past the first message of an open transaction (the max read position).
// Ending a transaction stores a marker entry (a commit always, an abort once
// the topic took a transactional message), which no consumer ever gets;
// messages of aborted transactions are acknowledged unseen as they are read.

// The marker types of MessageMetadata.marker_type (Pulsar's MarkerType).
const (
	markerTxnCommit = 20
	markerTxnAbort  = 21
)

// txnMarkerProducer is the producer name of transaction markers.
const txnMarkerProducer = "pulsar.txn.marker"

// txnBuffer returns the topic's transaction buffer, creating it. Called
// under the topic's lock.
func (t *Topic) txnBuffer() *txn.Buffer {
	if t.buf == nil {
		t.buf = txn.NewBuffer()
	}
	return t.buf
}

// readEnd is where dispatch must stop reading: one past the max read
// position.
func (t *Topic) readEnd() int64 {
	end := t.log.End() - t.undurable.Load()
	if t.buf == nil {
		return end
	}
	return min(end, t.buf.MaxRead(end-1)+1)
}

// sendTxnID returns the transaction of a SEND, when it names one.
func sendTxnID(s *pb.CommandSend) (txn.ID, bool) {
	if s.TxnidMostBits == nil || s.TxnidLeastBits == nil {
		return txn.ID{}, false
	}
	return txn.ID{Most: s.GetTxnidMostBits(), Least: s.GetTxnidLeastBits()}, true
}

// txnSendRefusal checks a transactional SEND before it is stored: with the
// coordinator off it is refused as Pulsar's disabled buffer refuses it
// (NotAllowedError); on a non-persistent topic Pulsar's handler throws and
// the connection closes (close is set).
func (c *conn) txnSendRefusal(prod *Producer) (msg string, close bool) {
	switch {
	case !prod.topic.name.Persistent:
		return "", true
	case !c.b.cfg.transactions:
		return "Transaction buffer disable!", false
	}
	return "", false
}

// appendTxnLocked stores a transactional message of producer as the topic's
// next entry, after the buffer's check that the transaction has not ended.
func (t *Topic) appendTxnLocked(id txn.ID, e *entry, producer string, md *pb.MessageMetadata) (int64, error) {
	buf := t.txnBuffer()
	if err := buf.CanAppend(id); err != nil {
		return 0, err
	}
	// The buffer learns of the message before the subscriptions look at
	// the new entry, so that none reads past it.
	buf.Appended(id, t.log.End())
	if !e.InTxn {
		e.InTxn, e.Txn = true, id // from the SEND only, as pulsar-client-go sends it
	}
	n := t.appendLocked(e, producer, md)
	t.b.recordProduced(id, TxnMessage{Topic: t.full, ID: t.eventID(n)})
	return n, nil
}

// appendMarkerLocked stores the commit or abort marker of a transaction.
func (t *Topic) appendMarkerLocked(id txn.ID, commit bool) int64 {
	kind := int32(markerTxnAbort)
	if commit {
		kind = markerTxnCommit
	}
	md := &pb.MessageMetadata{
		ProducerName: proto.String(txnMarkerProducer), SequenceId: proto.Uint64(math.MaxUint64),
		PublishTime: proto.Uint64(uint64(t.b.cfg.clock.Now().UnixMilli())), MarkerType: proto.Int32(kind),
		TxnidMostBits: proto.Uint64(id.Most), TxnidLeastBits: proto.Uint64(id.Least),
	}
	return t.appendLocked(newEntry(protocol.AppendPayload(nil, md, nil), md), txnMarkerProducer, md)
}

// endOnTopic ends a transaction on one topic it produced to (Pulsar's
// commitTxn and abortTxn of the topic's buffer): the marker, then the
// buffer; a transaction that ended at its coordinator without telling this
// topic (at or below the low water mark) is aborted here too. A topic that
// does not exist needs nothing.
func (b *Broker) endOnTopic(name string, id txn.ID, commit bool, lowWaterMark int64) {
	t := b.lockClusterTopic(name)
	if t == nil {
		return
	}
	defer t.mu.Unlock()
	if !t.name.Persistent || t.deleted {
		return
	}
	if next, ok := t.endTxnLocked(id, commit, lowWaterMark); ok {
		t.endTxnLocked(next, false, lowWaterMark)
	}
	for _, s := range t.subs {
		s.dispatchLocked()
	}
}

// endTxnLocked writes the transaction's marker, if the buffer wants one,
// and ends it in the buffer; it returns a transaction the low water mark
// says to abort.
func (t *Topic) endTxnLocked(id txn.ID, commit bool, lowWaterMark int64) (txn.ID, bool) {
	buf := t.txnBuffer()
	if !buf.NeedsMarker(commit) {
		return txn.ID{}, false
	}
	n := t.appendMarkerLocked(id, commit)
	kind := EventTxnAborted
	if commit {
		kind = EventTxnCommitted
	}
	t.b.emit(Event{Kind: kind, Topic: t.full, ID: t.eventID(n), Txn: &id})
	return buf.End(id, commit, lowWaterMark)
}

// entrySkip says whether a transaction keeps entry e of the topic from
// every consumer: a marker, or a message whose metadata names an aborted
// transaction. Called under the topic's lock.
func (t *Topic) entrySkip(e *entry) bool {
	return e.Marker || (e.TxnMeta && t.buf != nil && t.buf.IsAborted(e.Txn))
}

// lastDispatchableLocked returns the last entry a consumer may get: at or
// before the max read position, neither a marker nor a message of an
// aborted transaction; -1 when there is none (Pulsar's
// getLastDispatchablePosition).
func (t *Topic) lastDispatchableLocked() int64 {
	n := t.readEnd() - 1
	for ; n >= t.log.Base; n-- {
		if e := t.log.Get(n); e == nil || !t.entrySkip(e) {
			return n
		}
	}
	if t.log.Base > 0 && n >= 0 {
		return n // freed entries: every subscription acknowledged them
	}
	return -1
}
