package broker

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Consumer is one consumer attached to a subscription over a connection.
type Consumer struct {
	// ID is the client's consumer_id on its connection.
	ID       uint64
	Name     string
	conn     *conn
	sub      *Subscription
	dispID   uint64 // the dispatcher's id: unique within the subscription
	priority int32

	metadata map[string]string // the consumer's metadata, for stats
	since    time.Time         // when it subscribed, for stats
	out      meter             // messages delivered, under the topic's lock
	// redelivered meters the deliveries with a count above 0, under the
	// topic's lock.
	redelivered meter
	bytesOut    int64 // under the topic's lock
	flowed      bool  // it has sent a FLOW, under the topic's lock
	// For stats, under the topic's lock: the messages it acknowledged,
	// and when (broker clock) it last sent a FLOW, got a message and
	// acknowledged.
	acks                              meter
	lastFlow, lastConsumed, lastAcked time.Time
	// autoConsume: it subscribed with an AUTO_CONSUME schema, which takes
	// whatever schema the topic has.
	autoConsume bool
	// readCompacted: it reads the topic's compacted view (compaction.go).
	readCompacted bool
	// activeNote is an ACTIVE_CONSUMER_CHANGE held until the first FLOW
	// (Failover; see tellActiveLocked), under the topic's lock.
	activeNote *pb.BaseCommand
	// loading is set while its SUBSCRIBE (request loadReq) waits for the
	// topic to load (topicload.go), under its connection's lock.
	loading bool
	loadReq uint64
}

// consumer returns the connection's consumer with this id, or nil, also
// while its SUBSCRIBE waits for the topic to load: until it is answered the
// commands naming it find none, as Pulsar's do.
func (c *conn) consumer(id uint64) *Consumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs := c.consumers[id]; cs != nil && !cs.loading {
		return cs
	}
	return nil
}

// anyConsumer returns the connection's consumer with this id, answered or
// not, or nil.
func (c *conn) anyConsumer(id uint64) *Consumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumers[id]
}

// detach removes the consumer from its subscription, as a close or a
// disconnect does: its pending entries go back to the subscription with their
// redelivery counts unchanged.
func (cs *Consumer) detach(byClient bool) {
	reason := "disconnect"
	if byClient {
		reason = "client"
	}
	t := cs.sub.topic
	t.mu.Lock()
	cs.sub.removeConsumerLocked(cs, reason)
	t.mu.Unlock()
}

// forget removes the consumer from its connection's table.
func (c *conn) forget(cs *Consumer) {
	c.mu.Lock()
	if c.consumers[cs.ID] == cs {
		delete(c.consumers, cs.ID)
	}
	c.mu.Unlock()
}

// handleCloseConsumer closes a consumer, also one whose SUBSCRIBE waits for
// the topic to load (that SUBSCRIBE is then never answered, as in Pulsar).
func (c *conn) handleCloseConsumer(cc *pb.CommandCloseConsumer) {
	if cs := c.anyConsumer(cc.GetConsumerId()); cs != nil {
		c.forget(cs)
		cs.detach(true)
	}
	c.send(protocol.SuccessCommand(cc.GetRequestId()))
}

// handleFlow adds permits. FLOW with zero permits closes the connection, as
// Pulsar's checkArgument does.
func (c *conn) handleFlow(f *pb.CommandFlow) bool {
	if f.GetMessagePermits() == 0 {
		c.log.Info("closing connection: FLOW with zero permits")
		return false
	}
	cs := c.consumer(f.GetConsumerId())
	if cs == nil {
		return true
	}
	t := cs.sub.topic
	t.mu.Lock()
	if cs.sub.consumers[cs.dispID] == cs {
		if !cs.flowed {
			cs.flowed = true
			if cs.activeNote != nil {
				c.send(cs.activeNote)
				cs.activeNote = nil
			}
		}
		now := c.b.cfg.clock.Now()
		cs.lastFlow, cs.sub.lastFlow = now, now
		cs.sub.disp.Flow(cs.dispID, int(f.GetMessagePermits()))
		cs.sub.dispatchLocked()
	}
	t.mu.Unlock()
	return true
}

// entryOf returns the entry number of a message id of this topic, or false
// when the id belongs to another ledger or lies beyond the end of the log
// (Pulsar's cursor refuses those).
func (t *Topic) entryOf(id *pb.MessageIdData) (int64, bool) {
	n := int64(id.GetEntryId())
	if id.GetLedgerId() != t.ledger || n < 0 || n >= t.log.End() {
		return 0, false
	}
	return n, true
}

// ackVerdict is what the broker does with an ACK before looking at its ids.
type ackVerdict int

const (
	ackApply  ackVerdict = iota // acknowledge the ids
	ackIgnore                   // do nothing, answer success
	ackRefuse                   // do nothing, answer NotAllowedError
	ackInTxn                    // hold the ids in the transaction (txnsub.go)
)

// txnAckRefusal is the message of Pulsar 4.0.8's ACK_RESPONSE to an ack that
// carries a transaction id while transactions are off.
const txnAckRefusal = "org.apache.pulsar.broker.service.BrokerServiceException$NotAllowedException: " +
	"Server don't support transaction ack!"

// judgeAck decides an ACK on a subscription of type typ as Pulsar's
// Consumer.messageAcked does: a cumulative ack must name exactly one
// message and is ignored on Shared and Key_Shared; an ack carrying a
// transaction id (both halves) is held in that transaction, or refused when
// transactions are off or the topic is not persistent.
func judgeAck(a *pb.CommandAck, typ dispatch.SubType, txns bool) ackVerdict {
	txn := a.TxnidMostBits != nil && a.TxnidLeastBits != nil
	if a.GetAckType() == pb.CommandAck_Cumulative {
		if len(a.GetMessageId()) != 1 || typ == dispatch.Shared || typ == dispatch.KeyShared {
			return ackIgnore
		}
	}
	switch {
	case txn && !txns:
		return ackRefuse
	case txn:
		return ackInTxn
	}
	return ackApply
}

// handleAck acknowledges messages. An ack for a consumer the connection does
// not know is dropped without an answer, as Pulsar drops it.
func (c *conn) handleAck(a *pb.CommandAck) {
	cs := c.consumer(a.GetConsumerId())
	if cs == nil {
		return
	}
	s := cs.sub
	t := s.topic
	t.mu.Lock()
	verdict := judgeAck(a, s.typ, c.b.cfg.transactions && t.name.Persistent)
	var err error
	switch {
	case s.consumers[cs.dispID] != cs:
	case verdict == ackInTxn:
		err = s.txnAckLocked(cs, a)
	case t.name.Persistent && verdict == ackApply:
		for _, id := range a.GetMessageId() {
			n, ok := t.entryOf(id)
			if !ok {
				continue
			}
			s.applyAckLocked(cs, n, id, a.GetAckType() == pb.CommandAck_Cumulative)
		}
		s.reachedEndLocked()
		s.dispatchLocked()
	}
	t.mu.Unlock()
	switch {
	case a.RequestId == nil:
	case verdict == ackRefuse:
		c.send(ackResponse(a, pb.ServerError_NotAllowedError, txnAckRefusal))
	case err != nil:
		c.send(ackResponse(a, txnErrorCode(err), javaTxnException(err)))
	default:
		c.send(ackResponse(a, 0, ""))
	}
}

// applyAckLocked applies one message id of an ACK from cs to entry n.
func (s *Subscription) applyAckLocked(cs *Consumer, n int64, id *pb.MessageIdData, cumulative bool) {
	s.ackEntryLocked(n, id.GetAckSet(), cumulative, func(e int64) { s.disp.AckCumulative(cs.dispID, e) })
	now := s.topic.b.cfg.clock.Now()
	cs.lastAcked, s.lastAcked = now, now
	msgs := int64(1)
	if e := s.topic.log.Get(n); e != nil && len(id.GetAckSet()) == 0 {
		msgs = int64(e.Messages)
	}
	wall := time.Now() // the meters' clock
	cs.acks.add(wall, msgs)
	s.acks.add(wall, msgs)
	// Acks are reported before the deliveries they unblock.
	s.topic.b.emit(Event{Kind: EventAcked, Topic: s.topic.full, Subscription: s.name, Consumer: cs.Name,
		ConsumerID: cs.ID, Remote: cs.conn.remote, ID: s.topic.eventID(n), Cumulative: cumulative})
}

// ackEntryLocked acknowledges entry n, whole or the indexes of ackSet,
// individually or cumulatively; upTo acknowledges cumulatively up to an
// entry.
func (s *Subscription) ackEntryLocked(n int64, ackSet []int64, cumulative bool, upTo func(int64)) {
	t := s.topic
	s.cursorWrittenLocked()
	defer s.persistLocked()
	defer s.noteMarkDeleteLocked(s.cur.MarkDelete())
	e := t.log.Get(n)
	switch {
	case cumulative:
		if len(ackSet) > 0 && e != nil && e.Batched {
			// Up to a batch index: the entries before are acknowledged;
			// with batch-index acks on, the batch keeps its
			// unacknowledged indexes, else it stays whole.
			if n-1 > s.cur.MarkDelete() {
				upTo(n - 1)
			}
			if t.b.cfg.batchIndexAck {
				s.disp.AckBatchIndexes(n, int(e.Messages), ackSet)
			}
			break
		}
		upTo(n)
	case len(ackSet) > 0 && t.b.cfg.batchIndexAck && e != nil && e.Batched:
		s.disp.AckBatchIndexes(n, int(e.Messages), ackSet)
	case len(ackSet) > 0:
		// Batch-index acks off: Pulsar's cursor ignores a position
		// with an ack set, while the subscription still drops the
		// entry's redelivery counter.
		s.cur.ForgetRedelivery(n)
	default:
		s.disp.Ack(n)
	}
}

func ackResponse(a *pb.CommandAck, code pb.ServerError, msg string) *pb.BaseCommand {
	r := &pb.CommandAckResponse{ConsumerId: proto.Uint64(a.GetConsumerId()), RequestId: proto.Uint64(a.GetRequestId())}
	if msg != "" {
		r.Error = code.Enum()
		r.Message = proto.String(msg)
	}
	return protocol.Base(pb.BaseCommand_ACK_RESPONSE, r)
}

func (c *conn) handleRedeliver(r *pb.CommandRedeliverUnacknowledgedMessages) {
	twice := c.replayTwice
	c.replayTwice = false
	cs := c.consumer(r.GetConsumerId())
	if cs == nil {
		return
	}
	s := cs.sub
	t := s.topic
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.consumers[cs.dispID] != cs {
		return
	}
	if r.ConsumerEpoch != nil {
		// Exclusive and Failover consumers (Java's) raise their epoch with a
		// redeliver-all and drop messages stamped with an older one.
		s.disp.UpdateEpoch(cs.dispID, int64(r.GetConsumerEpoch()))
	}
	var ids []MessageID
	var entries []int64
	if len(r.GetMessageIds()) == 0 {
		entries = s.disp.PendingOf(cs.dispID)
		s.disp.RedeliverAll(cs.dispID)
	} else {
		entries = make([]int64, 0, len(r.GetMessageIds()))
		for _, id := range r.GetMessageIds() {
			if n, ok := t.entryOf(id); ok {
				entries = append(entries, n)
				ids = append(ids, t.eventID(n))
			}
		}
		s.disp.Redeliver(cs.dispID, entries)
	}
	if twice {
		s.disp.ReplayTwice(entries)
	}
	if s.typ == dispatch.Exclusive || s.typ == dispatch.Failover {
		// Pulsar's single-consumer dispatcher cancels the cursor's read
		// before it rewinds.
		s.endRead = endReadNone
	}
	// The request is reported before the deliveries it causes.
	c.b.emit(Event{Kind: EventRedeliveryAsked, Topic: t.full, Subscription: s.name, Consumer: cs.Name,
		ConsumerID: cs.ID, Remote: cs.conn.remote, IDs: ids})
	s.dispatchLocked()
}

// handleUnsubscribe deletes the subscription when the caller is its only
// consumer, or when forced; otherwise MetadataError, as in Pulsar.
func (c *conn) handleUnsubscribe(u *pb.CommandUnsubscribe) {
	cs := c.consumer(u.GetConsumerId())
	if cs == nil {
		c.send(protocol.ErrorCommand(u.GetRequestId(), pb.ServerError_MetadataError, "Consumer not found"))
		return
	}
	s := cs.sub
	t := s.topic
	t.mu.Lock()
	if s.consumers[cs.dispID] != cs || (!u.GetForce() && len(s.consumers) != 1) {
		t.mu.Unlock()
		c.send(protocol.ErrorCommand(u.GetRequestId(), pb.ServerError_MetadataError,
			"Unconnected or shared consumer attempting to unsubscribe"))
		return
	}
	s.closeConsumersLocked(cs, nil)
	s.removeConsumerLocked(cs, "client")
	delete(t.subs, s.name)
	t.forgetSubscriptionLocked(s)
	if s.durable {
		t.markActiveLocked()
	}
	t.mu.Unlock()
	c.forget(cs)
	c.send(protocol.SuccessCommand(u.GetRequestId()))
}

// closeConsumersLocked closes consumers of the subscription from the broker
// side: only, when given, or else every one but keep. Each gets
// CLOSE_CONSUMER and is detached; it leaves its connection's table first,
// so that the client's SUBSCRIBE that follows creates it anew, not finds it
// alive. It returns the consumers it closed.
func (s *Subscription) closeConsumersLocked(keep, only *Consumer) []*Consumer {
	var closed []*Consumer
	for _, o := range s.consumers {
		if o == keep || (only != nil && o != only) {
			continue
		}
		o.conn.forget(o)
		cc := &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(o.ID), RequestId: proto.Uint64(minusOne)}
		if to := s.topic.movingTo; to != nil {
			cc.AssignedBrokerServiceUrl, cc.AssignedBrokerServiceUrlTls = optionalURL(to.URL), optionalURL(to.TLSURL)
		}
		o.conn.send(o.closeCommandLocked(cc))
		closed = append(closed, o)
	}
	for _, o := range closed {
		s.removeConsumerLocked(o, "broker")
	}
	return closed
}

// minusOne is -1 as an unsigned request id: a broker-initiated close.
const minusOne = ^uint64(0)

// handleGetLastMessageID answers with the topic's last entry (its last batch
// index for a batch) and the subscription's mark-delete position.
func (c *conn) handleGetLastMessageID(g *pb.CommandGetLastMessageId) {
	cs := c.consumer(g.GetConsumerId())
	if cs == nil {
		// Pulsar 4.0.8's code for it, with the message of ConsumerNotFound.
		c.send(protocol.ErrorCommand(g.GetRequestId(), pb.ServerError_MetadataError, "Consumer not found"))
		return
	}
	t := cs.sub.topic
	t.mu.Lock()
	last := t.lastMessageIDLocked()
	if cs.readCompacted && t.view.Has && t.lastDispatchableLocked() <= t.view.Horizon {
		last = t.lastCompactedIDLocked()
	}
	// Pulsar names the mark-delete position by ledger and entry alone.
	md := protocol.MessageID(t.ledger, uint64(cs.sub.cur.MarkDelete()), -1)
	t.mu.Unlock()
	c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE, &pb.CommandGetLastMessageIdResponse{
		RequestId: proto.Uint64(g.GetRequestId()), LastMessageId: last, ConsumerMarkDeletePosition: md,
	}))
}

// lastMessageIDLocked returns the id of the topic's last message: (-1, -1)
// for an empty topic, with the batch index of the last message of a batch.
func (t *Topic) lastMessageIDLocked() *pb.MessageIdData {
	n := t.lastDispatchableLocked()
	if n < 0 {
		return t.lastIDLocked(minusOne, minusOne, -1)
	}
	if e := t.log.Get(n); e != nil && e.Batched {
		return t.lastIDLocked(t.ledger, uint64(n), e.Messages-1)
	}
	return t.lastIDLocked(t.ledger, uint64(n), -1)
}

// lastIDLocked is a last message id as GET_LAST_MESSAGE_ID_RESPONSE carries
// it: Pulsar sets the partition (-1 for a topic that is not a partition) and
// the batch index (-1 for an entry that is not a batch) every time.
func (t *Topic) lastIDLocked(ledger, entry uint64, batchIndex int32) *pb.MessageIdData {
	id := protocol.MessageID(ledger, entry, -1)
	id.Partition = proto.Int32(int32(t.name.Partition))
	id.BatchIndex = proto.Int32(batchIndex)
	return id
}

// handleConsumerStats answers CONSUMER_STATS with the consumer's stats, as
// the admin API shows them, and the dispatcher's counts. Pulsar also sends
// an expiry and an ack rate, which pulsarsim does not meter. A consumer id
// the connection does not have closes the connection: Pulsar 4.0.8's
// handler fails on it (a NullPointerException) and the connection goes.
func (c *conn) handleConsumerStats(st *pb.CommandConsumerStats) bool {
	cs := c.consumer(st.GetConsumerId())
	if cs == nil {
		c.log.Info("closing connection: CONSUMER_STATS for an unknown consumer", "consumer_id", st.GetConsumerId())
		return false
	}
	t := cs.sub.topic
	t.mu.Lock()
	snap := cs.sub.disp.Snapshot()
	backlog := cs.sub.cur.Backlog(t.log.End())
	typ := cs.sub.typ.String()
	stats := cs.statsLocked(time.Now())
	t.mu.Unlock()
	resp := &pb.CommandConsumerStatsResponse{
		RequestId:    proto.Uint64(st.GetRequestId()),
		ConsumerName: proto.String(cs.Name), Type: proto.String(typ), MsgBacklog: proto.Uint64(uint64(backlog)),
		Address:          proto.String(stats.Address),
		ConnectedSince:   proto.String(stats.ConnectedSince.UTC().Format(time.RFC3339Nano)),
		MsgRateOut:       proto.Float64(stats.MsgRateOut),
		MsgThroughputOut: proto.Float64(stats.MsgThroughputOut),
		MsgRateRedeliver: proto.Float64(stats.MsgRateRedeliver),
	}
	for _, sc := range snap.Consumers {
		if sc.ID == cs.dispID {
			resp.AvailablePermits = proto.Uint64(uint64(max(sc.Permits, 0)))
			resp.UnackedMessages = proto.Uint64(uint64(sc.Unacked))
			resp.BlockedConsumerOnUnackedMsgs = proto.Bool(sc.Blocked)
		}
	}
	c.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS_RESPONSE, resp))
	return true
}
