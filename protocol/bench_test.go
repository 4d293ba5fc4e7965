package protocol_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// BenchmarkDecodeSendFrame decodes what the broker decodes for every SEND:
// the frame, its command and the payload's metadata, for a 1 KiB message as
// pulsar-client-go sends it unbatched, with the package functions (alloc)
// and with a Decoder, as the broker's reader decodes. It has no I/O, so its
// instruction count (valgrind --tool=callgrind) does not move with the
// machine's load.
func BenchmarkDecodeSendFrame(b *testing.B) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("standalone-0-12"), SequenceId: proto.Uint64(12345),
		PublishTime: proto.Uint64(1764500000000), UncompressedSize: proto.Uint32(1024),
	}
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{
		ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(12345), NumMessages: proto.Int32(1),
	})
	frame := protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, make([]byte, 1024)))
	body := frame[4:]
	b.Run("alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := protocol.DecodeFrame(body)
			if err != nil {
				b.Fatal(err)
			}
			pl, err := protocol.ParsePayload(f.Payload)
			if err != nil || !pl.ChecksumValid() {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		var d protocol.Decoder
		b.ReportAllocs()
		for b.Loop() {
			f, err := d.DecodeFrame(body)
			if err != nil {
				b.Fatal(err)
			}
			pl, err := d.ParsePayload(f.Payload)
			if err != nil || !pl.ChecksumValid() {
				b.Fatal(err)
			}
		}
	})
}
