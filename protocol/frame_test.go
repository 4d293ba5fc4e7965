package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

var defaultMaxFrame = protocol.MaxFrameSize(protocol.DefaultMaxMessageSize)

// readOne reads and decodes exactly one frame from b.
func readOne(t *testing.T, b []byte) protocol.Frame {
	t.Helper()
	r := bytes.NewReader(b)
	body, err := protocol.ReadFrame(r, nil, defaultMaxFrame)
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	if r.Len() != 0 {
		t.Fatalf("ReadFrame left %d bytes unread", r.Len())
	}
	f, err := protocol.DecodeFrame(body)
	if err != nil {
		t.Fatalf("DecodeFrame: %v", err)
	}
	return f
}

// rawFrame builds a frame by hand: total size, command size, command bytes
// and whatever follows.
func rawFrame(cmd []byte, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)+len(rest)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cmd)))
	b = append(b, cmd...)
	return append(b, rest...)
}

func TestMaxFrameSizeIsMessageSizePlusTenKiB(t *testing.T) {
	if got, want := protocol.MaxFrameSize(protocol.DefaultMaxMessageSize), 5<<20+10<<10; got != want {
		t.Fatalf("MaxFrameSize(default) = %d, want %d", got, want)
	}
}

func TestSimpleCommandFrameRoundTrips(t *testing.T) {
	cmds := []*pb.BaseCommand{
		protocol.PingCommand(),
		protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
			ClientVersion: proto.String("Pulsar Go 0.19.0"), ProtocolVersion: proto.Int32(20),
		}),
		protocol.ErrorCommand(7, pb.ServerError_NotAllowedError, "no transactions here"),
		protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(3), MessagePermits: proto.Uint32(1000)}),
	}
	for _, cmd := range cmds {
		t.Run(cmd.GetType().String(), func(t *testing.T) {
			frame := protocol.AppendCommand(nil, cmd)
			if got := binary.BigEndian.Uint32(frame); int(got) != len(frame)-4 {
				t.Fatalf("total size %d, frame holds %d bytes after it", got, len(frame)-4)
			}
			f := readOne(t, frame)
			if f.Payload != nil {
				t.Fatalf("simple frame decoded with a payload of %d bytes", len(f.Payload))
			}
			if f.UnknownType {
				t.Fatal("known command decoded as UnknownType")
			}
			if !proto.Equal(f.Command, cmd) {
				t.Fatalf("decoded %v, want %v", f.Command, cmd)
			}
		})
	}
}

func TestAppendCommandAppendsAfterExistingBytes(t *testing.T) {
	first := protocol.AppendCommand(nil, protocol.PingCommand())
	both := protocol.AppendCommand(append([]byte(nil), first...), protocol.PongCommand())
	r := bytes.NewReader(both)
	for _, want := range []pb.BaseCommand_Type{pb.BaseCommand_PING, pb.BaseCommand_PONG} {
		body, err := protocol.ReadFrame(r, nil, defaultMaxFrame)
		if err != nil {
			t.Fatal(err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			t.Fatal(err)
		}
		if f.Command.GetType() != want {
			t.Fatalf("got %v, want %v", f.Command.GetType(), want)
		}
	}
}

func TestPayloadFrameRoundTrips(t *testing.T) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("standalone-0-1"), SequenceId: proto.Uint64(42),
		PublishTime: proto.Uint64(1_700_000_000_000), PartitionKey: proto.String("k"),
		Properties: []*pb.KeyValue{{Key: proto.String("a"), Value: proto.String("b")}},
		EventTime:  proto.Uint64(1_699_999_999_000),
	}
	body := []byte("hello, pulsar")
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{
		ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(42), NumMessages: proto.Int32(1),
	})
	payload := protocol.AppendPayload(nil, md, body)
	f := readOne(t, protocol.AppendPayloadCommand(nil, cmd, payload))

	if !proto.Equal(f.Command, cmd) {
		t.Fatalf("command %v, want %v", f.Command, cmd)
	}
	if !bytes.Equal(f.Payload, payload) {
		t.Fatalf("payload bytes differ:\n got %x\nwant %x", f.Payload, payload)
	}
	p, err := protocol.ParsePayload(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasChecksum || !p.ChecksumValid() {
		t.Fatalf("checksum block: present %v, valid %v", p.HasChecksum, p.ChecksumValid())
	}
	if !proto.Equal(p.Metadata, md) {
		t.Fatalf("metadata %v, want %v", p.Metadata, md)
	}
	if !bytes.Equal(p.Body, body) {
		t.Fatalf("body %q, want %q", p.Body, body)
	}
}

func TestReadFrameAcceptsFrameExactlyAtTheLimit(t *testing.T) {
	// The limit counts the 4-byte size prefix, as Pulsar's frame decoder does.
	ping := mustMarshal(t, protocol.PingCommand())
	payload := make([]byte, defaultMaxFrame-4-4-len(ping)) // total size, cmd size, PING
	frame := rawFrame(ping, payload)
	if len(frame) != defaultMaxFrame {
		t.Fatalf("test frame is %d bytes, want %d", len(frame), defaultMaxFrame)
	}
	body, err := protocol.ReadFrame(bytes.NewReader(frame), nil, defaultMaxFrame)
	if err != nil {
		t.Fatalf("frame of exactly MaxFrameSize refused: %v", err)
	}
	if len(body) != defaultMaxFrame-4 {
		t.Fatalf("body is %d bytes, want %d", len(body), defaultMaxFrame-4)
	}
}

func TestReadFrameRefusesFrameOneByteOverTheLimit(t *testing.T) {
	ping := mustMarshal(t, protocol.PingCommand())
	payload := make([]byte, defaultMaxFrame-4-4-len(ping)+1)
	frame := rawFrame(ping, payload)
	if len(frame) != defaultMaxFrame+1 {
		t.Fatalf("test frame is %d bytes, want %d", len(frame), defaultMaxFrame+1)
	}
	_, err := protocol.ReadFrame(bytes.NewReader(frame), nil, defaultMaxFrame)
	if !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Fatalf("frame of MaxFrameSize+1 bytes: err = %v, want ErrFrameTooLarge", err)
	}
}

func TestReadFrameRefusesOversizeFrameBeforeReadingItsBody(t *testing.T) {
	// Only the size prefix is there: the refusal must not wait for the body.
	head := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
	_, err := protocol.ReadFrame(bytes.NewReader(head), nil, defaultMaxFrame)
	if !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Fatalf("err = %v, want ErrFrameTooLarge", err)
	}
}

func TestReadFrameHonoursAConfiguredLimit(t *testing.T) {
	frame := protocol.AppendPayloadCommand(nil, protocol.PingCommand(), make([]byte, 100))
	if _, err := protocol.ReadFrame(bytes.NewReader(frame), nil, len(frame)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := protocol.ReadFrame(bytes.NewReader(frame), nil, len(frame)-1); !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Fatalf("one over a limit of %d: err = %v, want ErrFrameTooLarge", len(frame)-1, err)
	}
}

func TestReadFrameReusesALargeEnoughBuffer(t *testing.T) {
	frame := protocol.AppendCommand(nil, protocol.PingCommand())
	buf := make([]byte, 0, 64)
	body, err := protocol.ReadFrame(bytes.NewReader(frame), buf, defaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if &body[0] != &buf[:1][0] {
		t.Fatal("ReadFrame allocated although the buffer was large enough")
	}
}

func TestReadFrameTruncatedBodyIsUnexpectedEOF(t *testing.T) {
	frame := protocol.AppendCommand(nil, protocol.PingCommand())
	for cut := 5; cut < len(frame); cut++ {
		_, err := protocol.ReadFrame(bytes.NewReader(frame[:cut]), nil, defaultMaxFrame)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: err = %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

func TestReadFrameAtEndOfStreamIsEOF(t *testing.T) {
	if _, err := protocol.ReadFrame(bytes.NewReader(nil), nil, defaultMaxFrame); err != io.EOF {
		t.Fatalf("err = %v, want io.EOF", err)
	}
}

func TestReadFrameTotalSizeBelowFourIsMalformed(t *testing.T) {
	for size := uint32(0); size < 4; size++ {
		b := binary.BigEndian.AppendUint32(nil, size)
		b = append(b, 0, 0, 0, 0)
		if _, err := protocol.ReadFrame(bytes.NewReader(b), nil, defaultMaxFrame); !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("total size %d: err = %v, want ErrMalformed", size, err)
		}
	}
}

func TestDecodeFrameCommandSizeBeyondFrameIsMalformed(t *testing.T) {
	cmd := mustMarshal(t, protocol.PingCommand())
	body := binary.BigEndian.AppendUint32(nil, uint32(len(cmd)+1))
	body = append(body, cmd...)
	if _, err := protocol.DecodeFrame(body); !errors.Is(err, protocol.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	huge := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
	if _, err := protocol.DecodeFrame(append(huge, cmd...)); !errors.Is(err, protocol.ErrMalformed) {
		t.Fatalf("command size 0xFFFFFFFF: err = %v, want ErrMalformed", err)
	}
}

func TestDecodeFrameShorterThanCommandSizeIsMalformed(t *testing.T) {
	for n := 0; n < 4; n++ {
		if _, err := protocol.DecodeFrame(make([]byte, n)); !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("%d-byte body: err = %v, want ErrMalformed", n, err)
		}
	}
}

func TestDecodeFrameMissingRequiredFieldIsMalformed(t *testing.T) {
	cases := map[string]*pb.BaseCommand{
		"send without producer_id":       protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{SequenceId: proto.Uint64(1)}),
		"connect without client_version": protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{}),
		"base command without type":      {Ping: &pb.CommandPing{}},
		"nested message id without entryId": protocol.Base(pb.BaseCommand_SEEK, &pb.CommandSeek{
			ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2),
			MessageId: &pb.MessageIdData{LedgerId: proto.Uint64(3)},
		}),
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := proto.MarshalOptions{AllowPartial: true}.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := protocol.DecodeFrame(rawFrame(raw, nil)[4:]); !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeFrameGarbageCommandIsMalformed(t *testing.T) {
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	if _, err := protocol.DecodeFrame(rawFrame(garbage, nil)[4:]); !errors.Is(err, protocol.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
}

func TestDecodeFrameUnknownTypeNumberIsFlaggedNotAnError(t *testing.T) {
	// type = 999: a command from a newer protocol than this schema knows,
	// with a sub-command in field 999 that must not be mistaken for anything.
	var raw []byte
	raw = protowire.AppendTag(raw, 1, protowire.VarintType)
	raw = protowire.AppendVarint(raw, 999)
	raw = protowire.AppendTag(raw, 999, protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte{0x08, 0x01})
	f, err := protocol.DecodeFrame(rawFrame(raw, nil)[4:])
	if err != nil {
		t.Fatalf("err = %v, want none", err)
	}
	if !f.UnknownType || f.Command != nil {
		t.Fatalf("got UnknownType=%v Command=%v, want UnknownType and no command", f.UnknownType, f.Command)
	}
}

func TestDecodeFrameKeepsPayloadBytesAsSent(t *testing.T) {
	rest := []byte{0x0e, 0x01, 1, 2, 3, 4, 0, 0, 0, 0}
	f, err := protocol.DecodeFrame(rawFrame(mustMarshal(t, protocol.PingCommand()), rest)[4:])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Payload, rest) {
		t.Fatalf("payload %x, want %x", f.Payload, rest)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
