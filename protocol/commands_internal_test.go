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

// TestAppendMessageMatchesMarshal checks the hand-written MESSAGE head
// against the generic encoder, with and without each optional field.
func TestAppendMessageMatchesMarshal(t *testing.T) {
	payload := []byte("entry bytes")
	for _, m := range []Message{
		{ConsumerID: 0, Ledger: 0, Entry: 0, Partition: -1, Epoch: -1},
		{ConsumerID: 3, Ledger: 12, Entry: 1 << 40, Partition: 7, RedeliveryCount: 2, Epoch: 0},
		{ConsumerID: 1 << 62, Ledger: 1, Entry: 5, Partition: 0, AckSet: []int64{-1, 0, 1 << 62}, Epoch: 9},
		{ConsumerID: 1, Ledger: 1, Entry: 5, Partition: -1, RedeliveryCount: 1 << 31, AckSet: []int64{6}, Epoch: -1},
	} {
		id := MessageID(m.Ledger, m.Entry, -1)
		id.Partition = proto.Int32(m.Partition) // -1 included
		msg := &pb.CommandMessage{ConsumerId: proto.Uint64(m.ConsumerID), MessageId: id}
		if m.RedeliveryCount > 0 {
			msg.RedeliveryCount = proto.Uint32(m.RedeliveryCount)
		}
		if len(m.AckSet) > 0 {
			msg.AckSet = m.AckSet
		}
		if m.Epoch >= 0 {
			msg.ConsumerEpoch = proto.Uint64(uint64(m.Epoch))
		}
		want := AppendPayloadCommand([]byte("x"), Base(pb.BaseCommand_MESSAGE, msg), payload)
		got := append(AppendMessage([]byte("x"), &m, len(payload)), payload...)
		if string(got) != string(want) {
			t.Errorf("%+v:\n got % x\nwant % x", m, got, want)
		}
	}
}
