package broker

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// Producer is one producer attached to a topic over a connection.
type Producer struct {
	ID    uint64
	Name  string
	topic *Topic
	conn  *conn
	sent  atomic.Int64

	schemaVersion []byte
	metadata      map[string]string // the producer's metadata, for stats
	since         time.Time         // when it connected, for stats
	in            meter             // messages in, under the topic's lock
	bytesIn       int64             // under the topic's lock
	exclusive     bool              // holds the topic under an exclusive access mode
	epoch         uint64            // the topic epoch it holds it with
}

// handleProducer attaches a producer to a topic, creating the topic when
// needed, and answers PRODUCER_SUCCESS (two of them for a WaitForExclusive
// producer that has to wait), or ERROR with the code and message Pulsar
// refuses that producer with.
func (c *conn) handleProducer(p *pb.CommandProducer) {
	reqID := p.GetRequestId()
	tn, refusal := c.checkProducer(p)
	if refusal != nil {
		c.send(refusal)
		return
	}
	if old := c.producer(p.GetProducerId()); old != nil {
		// A repeated PRODUCER for a live id succeeds again, as in Pulsar,
		// without its last sequence id.
		ok := c.producerSuccess(reqID, old, -1)
		ok.ProducerSuccess.TopicEpoch = nil
		c.send(ok)
		return
	}
	t, err := c.b.lockTopic(tn, c.b.autoCreateAllowed(tn))
	if errors.Is(err, errNoNamespace) || errors.Is(err, errNotServed) {
		c.send(protocol.ErrorCommand(reqID, pb.ServerError_ServiceNotReady, c.b.notServedMessage(tn)))
		return
	}
	if errors.Is(err, errPartitionPastCount) {
		c.send(protocol.ErrorCommand(reqID, pb.ServerError_TopicNotFound, "Topic not found "+tn.String()))
		return
	}
	if err != nil {
		c.send(protocol.ErrorCommand(reqID, pb.ServerError_TopicNotFound, "Topic not found"))
		return
	}
	if r := t.encryptionRefusalLocked(p); r != nil {
		t.mu.Unlock()
		c.send(r)
		return
	}
	name := p.GetProducerName()
	if name == "" {
		name = c.b.generatedProducerName()
	}
	prod := &Producer{ID: p.GetProducerId(), Name: name, topic: t, conn: c,
		metadata: properties(p.GetMetadata()), since: time.Now()}
	t.attachProducerLocked(prod, p)
	t.mu.Unlock()
}

// checkProducer applies the checks of a PRODUCER that need no topic: its
// topic name, the client's permission and partitioned topics. It returns
// the refusal to send, or nil.
func (c *conn) checkProducer(p *pb.CommandProducer) (TopicName, *pb.BaseCommand) {
	reqID := p.GetRequestId()
	tn, err := ParseTopicName(p.GetTopic())
	switch {
	case err != nil:
		return tn, protocol.ErrorCommand(reqID, pb.ServerError_InvalidTopicName, err.Error())
	case !c.allowed(tn, auth.OpProduce):
		return tn, protocol.ErrorCommand(reqID, pb.ServerError_AuthorizationError, "Client is not authorized to Produce")
	case c.b.partitions(tn) > 0:
		return tn, protocol.ErrorCommand(reqID, pb.ServerError_NotAllowedError,
			fmt.Sprintf("Cannot produce to partitioned topic %s directly; produce to its partitions", tn))
	}
	return tn, nil
}

// producer returns the connection's producer with this id, or nil.
func (c *conn) producer(id uint64) *Producer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.producers[id]
}

// attachProducerLocked registers a new producer's schema, applies the
// topic's checks and its access mode, and answers its PRODUCER: refused,
// queued for the topic
// (WaitForExclusive), or attached; the producers it fences are closed from
// the broker side.
func (t *Topic) attachProducerLocked(prod *Producer, p *pb.CommandProducer) {
	c, reqID := prod.conn, p.GetRequestId()
	// Pulsar registers the schema before it looks at the topic's producers.
	version, fail := c.b.addSchema(t.name, p.Schema)
	if fail != nil {
		c.send(protocol.ErrorCommand(reqID, fail.Code, fail.ProducerMessage()))
		return
	}
	prod.schemaVersion = version
	if refusal := t.checkProducerLocked(prod, p); refusal != nil {
		c.send(refusal)
		return
	}
	ok, queued, refusal := t.admitProducerLocked(prod, p)
	if refusal != nil {
		c.send(refusal)
		return
	}
	if sub := p.GetInitialSubscriptionName(); sub != "" {
		t.ensureSubscriptionLocked(sub)
	}
	c.mu.Lock()
	c.producers[prod.ID] = prod
	c.mu.Unlock()
	switch {
	case queued:
		// Not ready yet: the client waits for a second PRODUCER_SUCCESS.
		ready := c.producerSuccess(reqID, prod, t.lastSequenceIDLocked(prod.Name))
		ready.ProducerSuccess.ProducerReady = proto.Bool(false)
		ready.ProducerSuccess.TopicEpoch = nil
		c.send(ready)
	case ok:
		t.producers[prod] = struct{}{}
		t.producerAddedLocked(prod.Name)
		c.b.emit(Event{Kind: EventProducerOpened, Topic: t.full, Producer: prod.Name})
		c.send(c.producerSuccess(reqID, prod, t.lastSequenceIDLocked(prod.Name)))
	}
}

// checkProducerLocked applies the topic's checks to a new producer: the
// producer limits, the subscription limit for its initial subscription, a
// terminated topic, and a producer of the same name already attached.
func (t *Topic) checkProducerLocked(prod *Producer, p *pb.CommandProducer) *pb.BaseCommand {
	reqID := p.GetRequestId()
	if refusal := t.producerLimitLocked(reqID); refusal != nil {
		return refusal
	}
	if refusal := t.quotaRefusalLocked(reqID); refusal != nil {
		return refusal
	}
	if sub := p.GetInitialSubscriptionName(); sub != "" && t.subs[sub] == nil {
		if msg, over := t.subscriptionLimitLocked(); over {
			return protocol.ErrorCommand(reqID, pb.ServerError_NotAllowedError, msg)
		}
	}
	if t.terminated {
		return protocol.ErrorCommand(reqID, pb.ServerError_TopicTerminatedError, "Topic was already terminated")
	}
	if refusal := t.sameAddressProducerLimitLocked(prod.conn, reqID); refusal != nil {
		return refusal
	}
	for other := range t.producers {
		if other.Name == prod.Name {
			return protocol.ErrorCommand(reqID, pb.ServerError_ProducerBusy,
				fmt.Sprintf("Producer with name '%s' is already connected to topic", prod.Name))
		}
	}
	return nil
}

// producerSuccess is the PRODUCER_SUCCESS of a producer attached, with the
// last sequence id stored for its name (-1 for none, dedup.go).
func (c *conn) producerSuccess(reqID uint64, p *Producer, lastSeq int64) *pb.BaseCommand {
	return protocol.Base(pb.BaseCommand_PRODUCER_SUCCESS, &pb.CommandProducerSuccess{
		RequestId:      proto.Uint64(reqID),
		ProducerName:   proto.String(p.Name),
		LastSequenceId: proto.Int64(lastSeq),
		SchemaVersion:  p.schemaVersion,
		TopicEpoch:     topicEpoch(p),
		ProducerReady:  proto.Bool(true),
	})
}

// topicEpoch is PRODUCER_SUCCESS.topic_epoch: set only for exclusive modes.
func topicEpoch(p *Producer) *uint64 {
	if !p.exclusive {
		return nil
	}
	return proto.Uint64(p.epoch)
}

// handleSend stores one SEND as one entry and answers with its receipt. A SEND
// for a producer the broker has just closed is ignored; one for any other
// producer id this connection has not opened closes the connection, as in
// Pulsar.
func (c *conn) handleSend(s *pb.CommandSend, payload []byte) bool {
	c.mu.Lock()
	prod := c.producers[s.GetProducerId()]
	c.mu.Unlock()
	if prod == nil {
		if c.closedRecently(s.GetProducerId()) {
			return true
		}
		c.log.Info("closing connection: SEND for an unknown producer", "producer_id", s.GetProducerId())
		return false
	}
	// Without hooks the receipt waits for the reader to wake the writer
	// (deferWake); with hooks, which run below, nothing waits.
	tracing := c.b.tracing()
	if tracing {
		c.wakeDeferred()
	}
	sendError := func(code pb.ServerError, msg string) bool {
		c.send(protocol.Base(pb.BaseCommand_SEND_ERROR, &pb.CommandSendError{
			ProducerId: proto.Uint64(s.GetProducerId()), SequenceId: proto.Uint64(s.GetSequenceId()),
			Error: code.Enum(), Message: proto.String(msg),
		}))
		return true
	}
	pl, err := c.dec.ParsePayload(payload) // its metadata lasts until the next SEND
	if err != nil {
		c.log.Info("closing connection", "reason", err)
		return false
	}
	if !pl.ChecksumValid() {
		return sendError(pb.ServerError_ChecksumError, "Checksum failed on the broker")
	}
	txnID, inTxn := sendTxnID(s)
	if inTxn {
		if msg, closeConn := c.txnSendRefusal(prod); closeConn {
			c.log.Info("closing connection: transactional SEND on a non-persistent topic")
			return false
		} else if msg != "" {
			return sendErrorAt(c, s, pb.ServerError_NotAllowedError, msg)
		}
	}
	e := newEntry(payload, pl.Metadata)
	c.keptFrame = true
	n, refusal := prod.topic.storeSend(prod, s, e, pl.Metadata, txnID, inTxn)
	if refusal != nil {
		c.keptFrame = false
		c.send(refusal(s))
		return true
	}
	// A duplicate is not stored; its receipt names message -1:-1, as
	// Pulsar's does.
	ledger, entry := uint64(minusOne), uint64(minusOne)
	if n == duplicate || e.MetaLen > 0 {
		// Not stored, or stored as a copy behind its broker entry
		// metadata: the reader may reuse the frame's bytes.
		c.keptFrame = false
	}
	if n != duplicate {
		id := prod.topic.messageID(n)
		ledger, entry = id.GetLedgerId(), id.GetEntryId()
		prod.sent.Add(1)
	}
	highest := s.GetHighestSequenceId()
	if highest == 0 {
		highest = s.GetSequenceId()
	}
	producerID, seq := s.GetProducerId(), s.GetSequenceId()
	if c.b.disk != nil && prod.topic.name.Persistent {
		c.receiptWhenDurable(producerID, seq, highest, ledger, entry)
		return true
	}
	receipt := func(dst []byte) []byte {
		return protocol.AppendSendReceipt(dst, producerID, seq, highest, ledger, entry)
	}
	if tracing {
		c.sendFrame(receipt)
	} else {
		c.deferWake(receipt)
	}
	return true
}

// handleSendTwice handles a SEND that a Duplicate fault makes arrive twice.
// The second copy has bytes of its own, so the frame is kept only if the
// first was stored.
func (c *conn) handleSendTwice(s *pb.CommandSend, payload []byte) bool {
	c.replayTwice = false
	if !c.handleSend(s, payload) {
		return false
	}
	kept := c.keptFrame
	ok := c.handleSend(s, bytes.Clone(payload))
	c.keptFrame = kept
	return ok
}

// newEntry makes a stored entry of a SEND's payload. The entry keeps payload
// itself, not a copy: the caller hands the frame's buffer over to it.
func newEntry(payload []byte, md *pb.MessageMetadata) *entry {
	e := &entry{
		Data:        payload,
		PublishTime: md.GetPublishTime(),
		Messages:    1,
		DeliverAt:   md.GetDeliverAtTime(),
	}
	if md.NumMessagesInBatch != nil {
		e.Batched = true
		e.Messages = md.GetNumMessagesInBatch()
	}
	if md.TxnidMostBits != nil && md.TxnidLeastBits != nil {
		e.InTxn, e.TxnMeta = true, true
		e.Txn = txn.ID{Most: md.GetTxnidMostBits(), Least: md.GetTxnidLeastBits()}
	}
	e.Marker = md.MarkerType != nil
	switch {
	case len(md.OrderingKey) > 0:
		e.Key = md.OrderingKey
	case md.PartitionKey != nil:
		e.Key = []byte(md.GetPartitionKey())
	default:
		e.Key = noneKey
	}
	return e
}

// properties turns key-value pairs into a map, nil when there are none.
func properties(kvs []*pb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// noneKey is the sticky key of a message with neither ordering nor partition key.
var noneKey = []byte("NONE_KEY")

func (c *conn) handleCloseProducer(cp *pb.CommandCloseProducer) {
	c.mu.Lock()
	prod := c.producers[cp.GetProducerId()]
	delete(c.producers, cp.GetProducerId())
	c.mu.Unlock()
	if prod != nil {
		t := prod.topic
		t.mu.Lock()
		c.b.emit(Event{Kind: EventProducerClosed, Topic: t.full, Producer: prod.Name})
		t.dropProducerLocked(prod)
		t.mu.Unlock()
	}
	c.send(protocol.SuccessCommand(cp.GetRequestId()))
}

// sendErrorAt answers a SEND with SEND_ERROR as Pulsar's publish context
// does when a publish fails: the sequence id is the SEND's highest one when
// it carries a larger one.
func sendErrorAt(c *conn, s *pb.CommandSend, code pb.ServerError, msg string) bool {
	c.send(protocol.Base(pb.BaseCommand_SEND_ERROR, &pb.CommandSendError{
		ProducerId: proto.Uint64(s.GetProducerId()), SequenceId: proto.Uint64(max(s.GetSequenceId(), s.GetHighestSequenceId())),
		Error: code.Enum(), Message: proto.String(msg),
	}))
	return true
}

// duplicate is what storeSend returns for a SEND it did not store because
// it repeats one already stored.
const duplicate = -1

// storeSend stores a SEND's entry as the topic's next one, in its
// transaction if it has one, and counts it for the producer. It returns
// duplicate instead when the SEND repeats a sequence id already stored
// (dedup.go), and the refusal to send when the topic was deleted or
// terminated, or the transaction has ended there.
func (t *Topic) storeSend(prod *Producer, s *pb.CommandSend, e *entry, md *pb.MessageMetadata, id txn.ID, inTxn bool) (
	int64, func(*pb.CommandSend) *pb.BaseCommand) {
	t.mu.Lock()
	defer t.mu.Unlock()
	refuse := func(code pb.ServerError, msg string, highest bool) func(*pb.CommandSend) *pb.BaseCommand {
		return func(s *pb.CommandSend) *pb.BaseCommand {
			seq := s.GetSequenceId()
			if highest {
				seq = max(seq, s.GetHighestSequenceId())
			}
			return protocol.Base(pb.BaseCommand_SEND_ERROR, &pb.CommandSendError{
				ProducerId: proto.Uint64(s.GetProducerId()), SequenceId: proto.Uint64(seq),
				Error: code.Enum(), Message: proto.String(msg)})
		}
	}
	if t.deleted {
		return 0, refuse(pb.ServerError_TopicNotFound, "Topic was deleted", false)
	}
	// Pulsar counts a SEND against the publish rate as it arrives.
	t.publishRateLimitLocked(prod.conn, int64(e.Messages), int64(len(e.Data)))
	if limit := t.maxDeliveryDelayLocked(); limit > 0 && md.DeliverAtTime != nil &&
		md.GetDeliverAtTime()-int64(md.GetPublishTime()) > limit {
		return 0, refuse(pb.ServerError_NotAllowedError,
			fmt.Sprintf("Exceeds max allowed delivery delay of %d milliseconds", limit), true)
	}
	// Pulsar looks for duplicates before it writes, so a terminated topic
	// acknowledges them too.
	dup, seq := t.isDuplicateLocked(prod.Name, s, md)
	switch {
	case dup:
		t.b.emit(Event{Kind: EventDuplicate, Topic: t.full, Producer: prod.Name, SequenceID: s.GetSequenceId()})
		return duplicate, nil
	case t.terminated:
		return 0, refuse(pb.ServerError_TopicTerminatedError, "Topic was already terminated", false)
	}
	size := int64(len(e.Data)) // what the producer sent, before any broker entry metadata
	var n int64
	if inTxn {
		var err error
		if n, err = t.appendTxnLocked(id, e, prod.Name, md); err != nil {
			return 0, refuse(pb.ServerError_NotAllowedError, err.Error(), true)
		}
	} else {
		n = t.appendLocked(e, prod.Name, md)
	}
	t.recordSentLocked(prod.Name, seq)
	prod.in.add(time.Now(), int64(e.Messages))
	prod.bytesIn += size
	return n, nil
}
