package broker

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// ProducerMessage is a message to publish without a client (Publish).
type ProducerMessage struct {
	Payload []byte
	// Key is the partition key (Key_Shared routes by it).
	Key string
	// OrderingKey, when set, routes Key_Shared instead of Key.
	OrderingKey []byte
	Properties  map[string]string
	// EventTime is the application's event time; zero for none.
	EventTime time.Time
	// DeliverAt holds the message back from Shared and Key_Shared consumers
	// until the broker clock reaches it; zero for immediate delivery.
	DeliverAt time.Time
}

// Publish stores msgs on a topic as a producer's SENDs would be stored, one
// entry each, and returns their ids. Consumers and readers receive them like
// any other, events report them as published, stats count them. They carry a
// generated producer name, sequence ids 0, 1, 2… and the broker clock's time
// as publish time. The topic is created when the broker creates topics on
// first use (else ErrTopicNotFound); a terminated topic fails with
// ErrTopicTerminated. To publish to a partitioned topic, name a partition.
func (b *Broker) Publish(topic string, msgs ...ProducerMessage) ([]MessageID, error) {
	return b.publishIn(topic, false, msgs, nil)
}

// PublishBatch stores msgs as one batch entry, as a batching producer would:
// the entry takes the first message's key and deliver-at time (all must
// share the deliver-at time), and the ids returned differ only in their batch
// index.
func (b *Broker) PublishBatch(topic string, msgs ...ProducerMessage) ([]MessageID, error) {
	for _, m := range msgs[min(1, len(msgs)):] {
		if !m.DeliverAt.Equal(msgs[0].DeliverAt) {
			return nil, errorf(ErrInvalidMessage, "the messages of a batch must share their deliver-at time")
		}
	}
	return b.publishIn(topic, true, msgs, nil)
}

// publishIn stores msgs as Publish and PublishBatch do, in transaction id
// when it is not nil.
func (b *Broker) publishIn(topic string, batch bool, msgs []ProducerMessage, id *TxnID) ([]MessageID, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	if b.partitions(tn) > 0 {
		return nil, errorf(ErrInvalidName, "Cannot produce to partitioned topic %s directly; produce to its partitions", tn)
	}
	producer := b.generatedProducerName()
	now := uint64(b.cfg.clock.Now().UnixMilli())
	var payloads [][]byte
	if batch {
		payloads = [][]byte{batchPayload(producer, now, msgs, id)}
	} else {
		for i, m := range msgs {
			payloads = append(payloads, messagePayload(producer, now, uint64(i), m, id))
		}
	}
	for _, p := range payloads {
		if len(p) > b.cfg.maxMessageSize {
			return nil, errorf(ErrInvalidMessage, "Message of %d bytes exceeds maxMessageSize %d", len(p), b.cfg.maxMessageSize)
		}
	}
	for {
		t, err := b.getOrCreateTopic(tn, b.autoCreateAllowed(tn))
		if err != nil {
			return nil, err
		}
		ids, err := t.appendPayloads(tn, producer, payloads, batch, id)
		if err == nil {
			err = t.waitDurable()
		}
		if !errors.Is(err, errReleased) {
			return ids, err
		}
	}
}

// errReleased is appendPayloads' error for a topic its broker released
// meanwhile: the caller looks the topic up again (see lockTopic).
var errReleased = errors.New("the topic was unloaded")

// appendPayloads stores the payloads as entries of the topic and returns the
// ids of their messages.
func (t *Topic) appendPayloads(tn TopicName, producer string, payloads [][]byte, batch bool, txnID *TxnID) ([]MessageID, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.released:
		return nil, errReleased
	case t.deleted:
		return nil, topicNotFound(tn)
	case t.terminated:
		return nil, ErrTopicTerminated
	}
	var ids []MessageID
	for _, p := range payloads {
		pl, err := protocol.ParsePayload(p)
		if err != nil {
			return ids, fmt.Errorf("pulsarsim: a payload it built does not parse: %w", err)
		}
		e := newEntry(p, pl.Metadata)
		var n int64
		if txnID != nil {
			if n, err = t.appendTxnLocked(*txnID, e, producer, pl.Metadata); err != nil {
				return ids, err
			}
		} else {
			n = t.appendLocked(e, producer, pl.Metadata)
		}
		id := t.eventID(n)
		if !batch {
			ids = append(ids, id)
			continue
		}
		for i := range e.Messages {
			id.BatchIndex = i
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// messagePayload encodes one unbatched message as a producer sends it.
func messagePayload(producer string, now, seq uint64, m ProducerMessage, id *TxnID) []byte {
	md := &pb.MessageMetadata{
		ProducerName: proto.String(producer), SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(now),
		Properties: keyValues(m.Properties), UncompressedSize: proto.Uint32(uint32(len(m.Payload))),
	}
	setTxn(md, id)
	if m.Key != "" {
		md.PartitionKey = proto.String(m.Key)
	}
	if len(m.OrderingKey) > 0 {
		md.OrderingKey = m.OrderingKey
	}
	if !m.EventTime.IsZero() {
		md.EventTime = proto.Uint64(uint64(m.EventTime.UnixMilli()))
	}
	if !m.DeliverAt.IsZero() {
		md.DeliverAtTime = proto.Int64(m.DeliverAt.UnixMilli())
	}
	return protocol.AppendPayload(nil, md, m.Payload)
}

// batchPayload encodes msgs as one batch entry: each message with its own
// metadata, and the entry's metadata from the first, as pulsar-client-go's
// batch builder does.
func batchPayload(producer string, now uint64, msgs []ProducerMessage, id *TxnID) []byte {
	singles := make([]protocol.SingleMessage, len(msgs))
	for i, m := range msgs {
		smd := &pb.SingleMessageMetadata{
			PayloadSize: proto.Int32(int32(len(m.Payload))), SequenceId: proto.Uint64(uint64(i)),
			Properties: keyValues(m.Properties),
		}
		if m.Key != "" {
			smd.PartitionKey = proto.String(m.Key)
		}
		if len(m.OrderingKey) > 0 {
			smd.OrderingKey = m.OrderingKey
		}
		if !m.EventTime.IsZero() {
			smd.EventTime = proto.Uint64(uint64(m.EventTime.UnixMilli()))
		}
		singles[i] = protocol.SingleMessage{Metadata: smd, Payload: m.Payload}
	}
	body := protocol.AppendBatch(nil, singles)
	first := msgs[0]
	md := &pb.MessageMetadata{
		ProducerName: proto.String(producer), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(now),
		Properties: keyValues(first.Properties), NumMessagesInBatch: proto.Int32(int32(len(msgs))),
		HighestSequenceId: proto.Uint64(uint64(len(msgs) - 1)), UncompressedSize: proto.Uint32(uint32(len(body))),
	}
	setTxn(md, id)
	if first.Key != "" {
		md.PartitionKey = proto.String(first.Key)
	}
	if len(first.OrderingKey) > 0 {
		md.OrderingKey = first.OrderingKey
	}
	if !first.DeliverAt.IsZero() {
		md.DeliverAtTime = proto.Int64(first.DeliverAt.UnixMilli())
	}
	return protocol.AppendPayload(nil, md, body)
}

// keyValues turns a map into key-value pairs sorted by key, nil when empty.
func keyValues(m map[string]string) []*pb.KeyValue {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*pb.KeyValue, len(keys))
	for i, k := range keys {
		out[i] = &pb.KeyValue{Key: proto.String(k), Value: proto.String(m[k])}
	}
	return out
}

// setTxn puts a transaction's id in a message's metadata, as a client does
// for a transactional message.
func setTxn(md *pb.MessageMetadata, id *TxnID) {
	if id != nil {
		md.TxnidMostBits, md.TxnidLeastBits = proto.Uint64(id.Most), proto.Uint64(id.Least)
	}
}
