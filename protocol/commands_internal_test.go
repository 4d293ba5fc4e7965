package protocol

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// TestBaseFastPathMatchesReflection checks, for every command type, that the
// field Base sets without reflection is the one reflection would set.
func TestBaseFastPathMatchesReflection(t *testing.T) {
	fields := (&pb.BaseCommand{}).ProtoReflect().Descriptor().Fields()
	values := pb.BaseCommand_Type(0).Descriptor().Values()
	for i := 0; i < values.Len(); i++ {
		typ := pb.BaseCommand_Type(values.Get(i).Number())
		fd := fields.ByNumber(protoreflect.FieldNumber(typ))
		if fd == nil || fd.Message() == nil {
			continue
		}
		sub := (&pb.BaseCommand{}).ProtoReflect().NewField(fd).Message().Interface()
		fast := &pb.BaseCommand{Type: typ.Enum()}
		if !setSubCommand(fast, typ, sub) {
			continue
		}
		slow := baseReflect(&pb.BaseCommand{Type: typ.Enum()}, typ, sub)
		if !proto.Equal(fast, slow) || !fast.ProtoReflect().Has(fd) {
			t.Errorf("%v: fast path sets %v, reflection %v", typ, fast, slow)
		}
	}
}

// TestAppendSendReceiptMatchesMarshal checks the hand-written receipt
// against the generic encoder, for small and large values.
func TestAppendSendReceiptMatchesMarshal(t *testing.T) {
	for _, v := range [][5]uint64{{0, 0, 0, 1, 0}, {1, 7, 7, 3, 41}, {1 << 40, 1<<63 - 1, 1 << 62, 1 << 33, 1 << 50}} {
		cmd := Base(pb.BaseCommand_SEND_RECEIPT, &pb.CommandSendReceipt{
			ProducerId: proto.Uint64(v[0]), SequenceId: proto.Uint64(v[1]),
			MessageId:         &pb.MessageIdData{LedgerId: proto.Uint64(v[3]), EntryId: proto.Uint64(v[4])},
			HighestSequenceId: proto.Uint64(v[2]),
		})
		want := AppendCommand([]byte("x"), cmd)
		got := AppendSendReceipt([]byte("x"), v[0], v[1], v[2], v[3], v[4])
		if string(got) != string(want) {
			t.Errorf("%v: got % x, want % x", v, got, want)
		}
	}
}
