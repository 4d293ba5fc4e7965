package broker

import (
	"errors"
	"fmt"

	"github.com/pulsarsim/pulsarsim/protocol"
)

// What the REST producer (PIP-64, package admin) needs of the broker: the
// partitions of a topic that must exist, a schema registered as a
// producer's is, and messages stored as Pulsar's REST resource stores
// them, each built by the caller and handed to the topic as a SEND's
// payload would be.

// ExistingPartitions returns a topic's partition count as Pulsar's
// partitioned metadata answers a request that may not create the topic: N
// for a partitioned topic, 0 for a non-partitioned topic or a partition. A
// topic that does not exist (or a partition beyond its topic's count) fails
// with ErrTopicNotFound, whatever the broker's auto-creation; one of a
// namespace that does not exist with ErrNamespaceNotFound.
func (b *Broker) ExistingPartitions(topic string) (int, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	n, err := b.partitionedMetadata(tn, false, false)
	if err == nil && tn.Partition >= 0 && tn.Partition >= b.partitions(tn.Base()) && !b.topicStored(tn) {
		return 0, topicNotFound(tn) // beyond the partitions of its topic
	}
	return n, err
}

// topicStored reports whether the broker holds a topic of this name.
func (b *Broker) topicStored(tn TopicName) bool { return b.lookupTopic(tn.String()) != nil }

// AddProducerSchema registers s for a topic as a producer's schema is
// registered (the namespace's auto-update and compatibility settings
// apply), and returns its version. A schema the topic refuses fails with
// ErrIncompatibleSchema.
func (b *Broker) AddProducerSchema(topic string, s Schema) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	ps, err := protoSchema(tn, s)
	if err != nil {
		return 0, err
	}
	v, fail := b.addSchema(tn, ps)
	if fail != nil {
		return 0, fail.Err()
	}
	return decodeSchemaVersion(v), nil
}

// PublishPayload stores payload, what a producer's SEND carries after its
// command (checksum, metadata and body, protocol.AppendPayload), as the
// next entry of an existing topic or partition of a partitioned topic, and
// returns its id. It never creates a topic: one that does not exist fails
// with ErrTopicNotFound, a partitioned topic's own name with
// ErrInvalidName, a terminated topic with ErrTopicTerminated, a payload
// that does not parse with ErrInvalidMessage. The producer name is the
// metadata's.
func (b *Broker) PublishPayload(topic string, payload []byte) (MessageID, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return MessageID{}, err
	}
	if b.partitions(tn) > 0 {
		return MessageID{}, errorf(ErrInvalidName, "Cannot produce to partitioned topic %s directly; produce to its partitions", tn)
	}
	pl, err := protocol.ParsePayload(payload)
	if err != nil {
		return MessageID{}, errorf(ErrInvalidMessage, "%v", err)
	}
	if len(payload) > b.cfg.maxMessageSize {
		return MessageID{}, errorf(ErrInvalidMessage, "Message of %d bytes exceeds maxMessageSize %d", len(payload), b.cfg.maxMessageSize)
	}
	var ids []MessageID
	for {
		t, err := b.getOrCreateTopic(tn, false)
		if err != nil {
			return MessageID{}, err
		}
		if ids, err = t.appendPayloads(tn, pl.Metadata.GetProducerName(), [][]byte{payload}, false, nil); err == nil {
			break
		}
		if !errors.Is(err, errReleased) {
			return MessageID{}, err
		}
	}
	if len(ids) != 1 {
		return MessageID{}, fmt.Errorf("pulsarsim: stored %d entries for one payload", len(ids))
	}
	return ids[0], nil
}
