package websocket

import (
	"encoding/base64"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// Message ids travel through the WebSocket API as base64 of a serialized
// MessageIdData, written as the Java client writes one (MessageIdImpl's
// toByteArray): ledger and entry always, the partition only for a
// partition of a partitioned topic, the batch index only for a message of
// a batch, and the batch size always (0 for a message outside a batch).

// wireID is a message id with what its encoding needs.
type wireID struct {
	ledger, entry int64
	partition     int32 // -1 outside a partitioned topic
	batchIndex    int32 // -1 outside a batch
	batchSize     int32 // 0 outside a batch
}

// encodeID returns the base64 form of id.
func encodeID(id wireID) string {
	m := &pb.MessageIdData{LedgerId: proto.Uint64(uint64(id.ledger)), EntryId: proto.Uint64(uint64(id.entry)),
		BatchSize: proto.Int32(id.batchSize)}
	if id.partition >= 0 {
		m.Partition = proto.Int32(id.partition)
	}
	if id.batchIndex != -1 {
		m.BatchIndex = proto.Int32(id.batchIndex)
	}
	data, _ := proto.Marshal(m)
	return base64.StdEncoding.EncodeToString(data)
}

// producedID is the id of a message a WebSocket producer stored. The Java
// client sends a batch of one message as a message outside a batch, so only
// a batch of several gives its messages batch indexes, and its producer
// knows no batch size (it writes 0, as Pulsar 4.0.8 answers).
// pulsar-client-go numbers partitions from 0 on a topic without partitions
// too: partitioned says whether the topic has them.
func producedID(id pulsar.MessageID, partitioned bool) wireID {
	w := wireID{ledger: id.LedgerID(), entry: id.EntryID(), partition: -1, batchIndex: -1}
	if partitioned {
		w.partition = id.PartitionIdx()
	}
	if id.BatchSize() > 1 {
		w.batchIndex = id.BatchIdx()
	}
	return w
}

// consumedID is the id of a message a WebSocket consumer or reader got:
// its partition from the topic the message came from, its batch index when
// its entry is a batch.
func consumedID(msg pulsar.Message, batched bool) wireID {
	id := msg.ID()
	w := wireID{ledger: id.LedgerID(), entry: id.EntryID(), partition: -1, batchIndex: -1}
	if tn, err := broker.ParseTopicName(msg.Topic()); err == nil && tn.Partition >= 0 {
		w.partition = int32(tn.Partition)
	}
	if batched {
		w.batchIndex, w.batchSize = id.BatchIdx(), id.BatchSize()
	}
	return w
}

// decodeID parses a base64 message id as a client sends it back, into
// pulsar-client-go's numbering: a message outside a batch is index 0 there,
// and a topic without partitions partition 0.
func decodeID(s string) (pulsar.MessageID, error) {
	data, err := decodeBase64(s)
	if err != nil {
		return nil, err
	}
	var m pb.MessageIdData
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("invalid message id: %w", err)
	}
	return pulsar.NewMessageID(int64(m.GetLedgerId()), int64(m.GetEntryId()), max(m.GetBatchIndex(), 0),
		max(m.GetPartition(), 0)), nil
}
