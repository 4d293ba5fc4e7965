package protocol

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Base wraps a sub-command into the BaseCommand envelope with its type set.
// The sub-command is placed in the field whose number equals the type.
func Base(t pb.BaseCommand_Type, sub proto.Message) *pb.BaseCommand {
	c := &pb.BaseCommand{Type: t.Enum()}
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
