package protocol

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// usualSends are SEND commands as clients write them: unbatched, batched,
// chunked, transactional.
func usualSends() []*pb.BaseCommand {
	return []*pb.BaseCommand{
		Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(0)}),
		Base(pb.BaseCommand_SEND, &pb.CommandSend{
			ProducerId: proto.Uint64(7), SequenceId: proto.Uint64(1 << 40), NumMessages: proto.Int32(128),
			HighestSequenceId: proto.Uint64(1<<40 + 127),
		}),
		Base(pb.BaseCommand_SEND, &pb.CommandSend{
			ProducerId: proto.Uint64(2), SequenceId: proto.Uint64(3), NumMessages: proto.Int32(1),
			TxnidLeastBits: proto.Uint64(5), TxnidMostBits: proto.Uint64(6), IsChunk: proto.Bool(true),
			Marker: proto.Bool(false),
		}),
	}
}

// usualMetadata are MessageMetadata as clients write them.
func usualMetadata() []*pb.MessageMetadata {
	return []*pb.MessageMetadata{
		{ProducerName: proto.String("standalone-0-1"), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(1700000000000)},
		{
			ProducerName: proto.String("p"), SequenceId: proto.Uint64(9), PublishTime: proto.Uint64(2),
			NumMessagesInBatch: proto.Int32(128), UncompressedSize: proto.Uint32(140000),
			Compression: pb.CompressionType_LZ4.Enum(), HighestSequenceId: proto.Uint64(136),
		},
		{
			ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2),
			Properties: []*pb.KeyValue{
				{Key: proto.String("a"), Value: proto.String("1")},
				{Key: proto.String(""), Value: proto.String("")},
			},
			PartitionKey: proto.String("k"), OrderingKey: []byte("ok"), EventTime: proto.Uint64(3),
			DeliverAtTime: proto.Int64(-4), SchemaVersion: []byte{}, PartitionKeyB64Encoded: proto.Bool(true),
			ReplicatedFrom: proto.String("r"), Uuid: proto.String("u"), NumChunksFromMsg: proto.Int32(2),
			TotalChunkMsgSize: proto.Int32(10), ChunkId: proto.Int32(1), NullValue: proto.Bool(true),
			NullPartitionKey: proto.Bool(false), MarkerType: proto.Int32(3),
			TxnidLeastBits: proto.Uint64(8), TxnidMostBits: proto.Uint64(9),
		},
	}
}

func marshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFastDecodersTakeTheUsualForms(t *testing.T) {
	for _, cmd := range usualSends() {
		got, ok := decodeSendFast(marshal(t, cmd), nil)
		if !ok || !proto.Equal(got, cmd) {
			t.Errorf("SEND %v: fast decode gave %v, %v", cmd, got, ok)
		}
	}
	for _, md := range usualMetadata() {
		got, ok := decodeMetadataFast(marshal(t, md), nil)
		if !ok || !proto.Equal(got, md) {
			t.Errorf("metadata %v: fast decode gave %v, %v", md, got, ok)
		}
	}
}

func TestFastDecodersLeaveTheRestToProto(t *testing.T) {
	withID := Base(pb.BaseCommand_SEND, &pb.CommandSend{
		ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(0), MessageId: MessageID(1, 2, -1),
	})
	noSeq := Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1)})
	ping := PingCommand()
	for _, b := range [][]byte{marshal(t, withID), {}, marshal(t, ping)} {
		if _, ok := decodeSendFast(b, nil); ok {
			t.Errorf("fast SEND decode took %x", b)
		}
	}
	partial, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(noSeq)
	if _, ok := decodeSendFast(partial, nil); ok {
		t.Error("fast SEND decode took a SEND without sequence_id")
	}
	noName, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(&pb.MessageMetadata{
		SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2),
	})
	unknownCodec := append(marshal(t, usualMetadata()[0]), 8<<3, 9)
	for _, b := range [][]byte{noName, unknownCodec} {
		if _, ok := decodeMetadataFast(b, nil); ok {
			t.Errorf("fast metadata decode took %x", b)
		}
	}
}

// FuzzFastDecodersMatchProto checks that whatever the fast decoders accept,
// proto.Unmarshal (with its required-field check) accepts too, with an
// equal message. What they refuse goes to proto.Unmarshal anyway.
func FuzzFastDecodersMatchProto(f *testing.F) {
	for _, cmd := range usualSends() {
		f.Add(marshal(f, cmd))
	}
	for _, md := range usualMetadata() {
		f.Add(marshal(f, md))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if cmd, ok := decodeSendFast(b, nil); ok {
			want := &pb.BaseCommand{}
			if err := proto.Unmarshal(b, want); err != nil {
				t.Fatalf("fast SEND decode took what proto.Unmarshal refuses (%v): %x", err, b)
			}
			if !proto.Equal(cmd, want) {
				t.Fatalf("fast SEND decode gave %v, proto.Unmarshal %v", cmd, want)
			}
		}
		if md, ok := decodeMetadataFast(b, nil); ok {
			want := &pb.MessageMetadata{}
			if err := proto.Unmarshal(b, want); err != nil {
				t.Fatalf("fast metadata decode took what proto.Unmarshal refuses (%v): %x", err, b)
			}
			if !proto.Equal(md, want) {
				t.Fatalf("fast metadata decode gave %v, proto.Unmarshal %v", md, want)
			}
		}
	})
}

// A Decoder reuses its memory: each decode must give exactly the message
// decoded, nothing left over from the one before.
func TestDecoderLeavesNothingOfThePreviousMessage(t *testing.T) {
	var d Decoder
	mds := usualMetadata()
	sends := usualSends()
	for _, i := range []int{2, 0, 1, 2, 0} {
		md, cmd := mds[i], sends[i]
		frame := AppendPayloadCommand(nil, cmd, AppendPayload(nil, md, []byte("body")))
		f, err := d.DecodeFrame(frame[4:])
		if err != nil || !proto.Equal(f.Command, cmd) {
			t.Fatalf("SEND %d: got %v, %v; want %v", i, f.Command, err, cmd)
		}
		pl, err := d.ParsePayload(f.Payload)
		if err != nil || !proto.Equal(pl.Metadata, md) {
			t.Fatalf("metadata %d: got %v, %v; want %v", i, pl.Metadata, err, md)
		}
	}
}
