package protocol

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Base wraps a sub-command into the BaseCommand envelope with its type set.
// The sub-command is placed in the field whose number equals the type.
func Base(t pb.BaseCommand_Type, sub proto.Message) *pb.BaseCommand {
	c := &pb.BaseCommand{Type: t.Enum()}
	if setSubCommand(c, t, sub) {
		return c
	}
	return baseReflect(c, t, sub)
}

// setSubCommand sets the field of the commands a broker sends without going
// through protobuf reflection, which costs more than encoding them. It
// reports false for a type it does not list.
func setSubCommand(c *pb.BaseCommand, t pb.BaseCommand_Type, sub proto.Message) bool {
	switch t {
	case pb.BaseCommand_SEND_RECEIPT:
		c.SendReceipt = sub.(*pb.CommandSendReceipt)
	case pb.BaseCommand_MESSAGE:
		c.Message = sub.(*pb.CommandMessage)
	case pb.BaseCommand_ACK_RESPONSE:
		c.AckResponse = sub.(*pb.CommandAckResponse)
	case pb.BaseCommand_SEND_ERROR:
		c.SendError = sub.(*pb.CommandSendError)
	case pb.BaseCommand_SUCCESS:
		c.Success = sub.(*pb.CommandSuccess)
	case pb.BaseCommand_ERROR:
		c.Error = sub.(*pb.CommandError)
	case pb.BaseCommand_PING:
		c.Ping = sub.(*pb.CommandPing)
	case pb.BaseCommand_PONG:
		c.Pong = sub.(*pb.CommandPong)
	case pb.BaseCommand_CONNECTED:
		c.Connected = sub.(*pb.CommandConnected)
	case pb.BaseCommand_PRODUCER_SUCCESS:
		c.ProducerSuccess = sub.(*pb.CommandProducerSuccess)
	case pb.BaseCommand_LOOKUP_RESPONSE:
		c.LookupTopicResponse = sub.(*pb.CommandLookupTopicResponse)
	case pb.BaseCommand_PARTITIONED_METADATA_RESPONSE:
		c.PartitionMetadataResponse = sub.(*pb.CommandPartitionedTopicMetadataResponse)
	case pb.BaseCommand_ACTIVE_CONSUMER_CHANGE:
		c.ActiveConsumerChange = sub.(*pb.CommandActiveConsumerChange)
	case pb.BaseCommand_REACHED_END_OF_TOPIC:
		c.ReachedEndOfTopic = sub.(*pb.CommandReachedEndOfTopic)
	case pb.BaseCommand_CLOSE_PRODUCER:
		c.CloseProducer = sub.(*pb.CommandCloseProducer)
	case pb.BaseCommand_CLOSE_CONSUMER:
		c.CloseConsumer = sub.(*pb.CommandCloseConsumer)
	default:
		return false
	}
	return true
}

// baseReflect places sub in the field whose number equals t, by reflection.
func baseReflect(c *pb.BaseCommand, t pb.BaseCommand_Type, sub proto.Message) *pb.BaseCommand {
	m := c.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(protoreflect.FieldNumber(t))
	if fd == nil {
		panic("protocol: no field for command type " + t.String())
	}
	m.Set(fd, protoreflect.ValueOfMessage(sub.ProtoReflect()))
	return c
}

// ErrorCommand builds ERROR{request_id, error, message}.
func ErrorCommand(requestID uint64, code pb.ServerError, msg string) *pb.BaseCommand {
	return Base(pb.BaseCommand_ERROR, &pb.CommandError{
		RequestId: proto.Uint64(requestID), Error: code.Enum(), Message: proto.String(msg),
	})
}

// SuccessCommand builds SUCCESS{request_id}.
func SuccessCommand(requestID uint64) *pb.BaseCommand {
	return Base(pb.BaseCommand_SUCCESS, &pb.CommandSuccess{RequestId: proto.Uint64(requestID)})
}

// PingCommand builds PING.
func PingCommand() *pb.BaseCommand { return Base(pb.BaseCommand_PING, &pb.CommandPing{}) }

// PongCommand builds PONG.
func PongCommand() *pb.BaseCommand { return Base(pb.BaseCommand_PONG, &pb.CommandPong{}) }

// MessageID builds a MessageIdData for (ledger, entry) on a partition, -1 for
// a non-partitioned topic.
func MessageID(ledger, entry uint64, partition int32) *pb.MessageIdData {
	id := &pb.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}
	if partition >= 0 {
		id.Partition = proto.Int32(partition)
	}
	return id
}

// SubCommandField returns the BaseCommand field number that holds the
// sub-command of type t.
func SubCommandField(t pb.BaseCommand_Type) protoreflect.FieldNumber {
	return protoreflect.FieldNumber(t)
}

// AppendSendReceipt appends a SEND_RECEIPT frame for entry (ledger, entry) to
// dst. It writes the bytes proto.Marshal writes for the same command, without
// building the command: a receipt goes out for every SEND.
func AppendSendReceipt(dst []byte, producerID, sequenceID, highestSequenceID, ledger, entry uint64) []byte {
	idSize := 1 + protowire.SizeVarint(ledger) + 1 + protowire.SizeVarint(entry)
	subSize := 1 + protowire.SizeVarint(producerID) + 1 + protowire.SizeVarint(sequenceID) +
		1 + protowire.SizeBytes(idSize) + 1 + protowire.SizeVarint(highestSequenceID)
	cmdSize := 1 + protowire.SizeVarint(uint64(pb.BaseCommand_SEND_RECEIPT)) +
		1 + protowire.SizeBytes(subSize)
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+cmdSize))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmdSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(pb.BaseCommand_SEND_RECEIPT))
	dst = protowire.AppendTag(dst, protowire.Number(pb.BaseCommand_SEND_RECEIPT), protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(subSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, producerID)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, sequenceID)
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(idSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, ledger)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, entry)
	dst = protowire.AppendTag(dst, 4, protowire.VarintType)
	return protowire.AppendVarint(dst, highestSequenceID)
}

// Message holds the fields of a MESSAGE command as a broker sets them.
type Message struct {
	ConsumerID    uint64
	Ledger, Entry uint64
	// Partition is the topic's partition index, -1 when the topic is not
	// partitioned; written either way, as Pulsar writes it.
	Partition int32
	// RedeliveryCount is left out when 0.
	RedeliveryCount uint32
	// AckSet, when not empty, holds the batch indexes still to acknowledge.
	AckSet []int64
	// Epoch is the consumer epoch, left out when negative.
	Epoch int64
}

// AppendMessage appends the head of a MESSAGE frame to dst: the sizes and
// the command, for a payload of payloadSize bytes that the caller writes
// right after it. The bytes are those AppendPayloadCommand writes for the
// same command, without building it: a MESSAGE goes out for every delivery.
func AppendMessage(dst []byte, m *Message, payloadSize int) []byte {
	idSize := 1 + protowire.SizeVarint(m.Ledger) + 1 + protowire.SizeVarint(m.Entry) +
		1 + protowire.SizeVarint(uint64(m.Partition))
	subSize := 1 + protowire.SizeVarint(m.ConsumerID) + 1 + protowire.SizeBytes(idSize)
	if m.RedeliveryCount > 0 {
		subSize += 1 + protowire.SizeVarint(uint64(m.RedeliveryCount))
	}
	for _, v := range m.AckSet {
		subSize += 1 + protowire.SizeVarint(uint64(v))
	}
	if m.Epoch >= 0 {
		subSize += 1 + protowire.SizeVarint(uint64(m.Epoch))
	}
	cmdSize := 1 + protowire.SizeVarint(uint64(pb.BaseCommand_MESSAGE)) + 1 + protowire.SizeBytes(subSize)
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+cmdSize+payloadSize))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmdSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(pb.BaseCommand_MESSAGE))
	dst = protowire.AppendTag(dst, protowire.Number(pb.BaseCommand_MESSAGE), protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(subSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, m.ConsumerID)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(idSize))
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, m.Ledger)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, m.Entry)
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(m.Partition)) // an int32: -1 sign-extended, as protobuf writes it
	if m.RedeliveryCount > 0 {
		dst = protowire.AppendTag(dst, 3, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(m.RedeliveryCount))
	}
	for _, v := range m.AckSet {
		dst = protowire.AppendTag(dst, 4, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(v))
	}
	if m.Epoch >= 0 {
		dst = protowire.AppendTag(dst, 5, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(m.Epoch))
	}
	return dst
}
