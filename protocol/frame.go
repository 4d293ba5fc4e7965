package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// DefaultMaxMessageSize is Pulsar's default maxMessageSize: 5 MiB.
const DefaultMaxMessageSize = 5 * 1024 * 1024

// FramePadding is what Pulsar adds to maxMessageSize to get the largest frame
// it accepts, leaving room for the command and the metadata.
const FramePadding = 10 * 1024

// MaxFrameSize returns the largest frame, size prefix included, that a broker
// with the given maximum message size accepts.
func MaxFrameSize(maxMessageSize int) int { return maxMessageSize + FramePadding }

// Errors returned by the frame reader and decoder. Each one means the peer
// broke the protocol; the broker closes that connection.
var (
	ErrFrameTooLarge = errors.New("protocol: frame larger than the maximum frame size")
	ErrMalformed     = errors.New("protocol: malformed frame")
)

// ReadFrame reads one frame from r: the 4-byte total size and the bytes it
// counts. It returns those bytes (without the size prefix), reusing buf when it
// is large enough. A frame whose size prefix exceeds maxFrame fails with
// ErrFrameTooLarge before its body is read.
func ReadFrame(r io.Reader, buf []byte, maxFrame int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(head[:])
	if uint64(size)+4 > uint64(maxFrame) {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, uint64(size)+4)
	}
	if size < 4 {
		return nil, fmt.Errorf("%w: total size %d", ErrMalformed, size)
	}
	if cap(buf) >= int(size) {
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpectedEOF(err)
		}
		return buf, nil
	}
	// The size comes from the peer. A frame up to exactMax, which is what
	// batches are (128 KiB by default in the clients), gets its buffer at
	// once: it is kept as the stored entry, so it is allocated exactly and
	// filled without a copy. A larger one grows as its bytes arrive, from
	// readChunk, doubling up to its size, so that a peer announcing a 5 MB
	// frame and sending nothing costs a chunk.
	if size <= exactMax {
		buf = make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpectedEOF(err)
		}
		return buf, nil
	}
	buf = make([]byte, 0, readChunk)
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(int(size), 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

// exactMax is the largest frame whose buffer is allocated from its size
// prefix alone; readChunk is the first allocation for a larger one.
const (
	exactMax  = 256 << 10
	readChunk = 64 << 10
)

// unexpectedEOF turns io.EOF in the middle of a frame into
// io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Frame is one decoded frame: its command and, for SEND and MESSAGE, the
// bytes that follow the command (checksum block, metadata and payload).
type Frame struct {
	Command *pb.BaseCommand
	// Payload is nil for a simple command frame. It aliases the frame buffer.
	Payload []byte
	// UnknownType is set when the command's type is not one this schema knows;
	// Command is then nil and the frame is to be ignored.
	UnknownType bool
}

var (
	unmarshalPartial = proto.UnmarshalOptions{AllowPartial: true, DiscardUnknown: false}
	unmarshalStrict  = proto.UnmarshalOptions{}
)

// DecodeFrame decodes a frame body as returned by ReadFrame. Required fields
// are checked: a command that lacks one is malformed. A command whose type
// number this schema does not know decodes with UnknownType set.
func DecodeFrame(body []byte) (Frame, error) { return decodeFrame(body, nil) }

// decodeFrame is DecodeFrame, decoding a SEND into send when not nil.
func decodeFrame(body []byte, send *sendCommand) (Frame, error) {
	if len(body) < 4 {
		return Frame{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(body))
	}
	cmdSize := binary.BigEndian.Uint32(body)
	if uint64(cmdSize) > uint64(len(body)-4) {
		return Frame{}, fmt.Errorf("%w: command size %d beyond frame of %d", ErrMalformed, cmdSize, len(body))
	}
	var payload []byte
	if rest := body[4+cmdSize:]; len(rest) > 0 {
		payload = rest
	}
	if cmd, ok := decodeSendFast(body[4:4+cmdSize], send); ok {
		return Frame{Command: cmd, Payload: payload}, nil
	}
	cmd := &pb.BaseCommand{}
	// The usual frame is a complete command of a known type: a strict
	// unmarshal checks its required fields as it goes, far cheaper than
	// CheckInitialized afterwards. Anything else takes the slow path below,
	// which tells an unknown type from a malformed command.
	if unmarshalStrict.Unmarshal(body[4:4+cmdSize], cmd) == nil && cmd.Type != nil &&
		cmd.Type.Descriptor().Values().ByNumber(cmd.Type.Number()) != nil {
		return Frame{Command: cmd, Payload: payload}, nil
	}
	cmd = &pb.BaseCommand{}
	if err := unmarshalPartial.Unmarshal(body[4:4+cmdSize], cmd); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if cmd.Type == nil {
		if hasField(cmd.ProtoReflect().GetUnknown(), 1) {
			return Frame{UnknownType: true}, nil
		}
		return Frame{}, fmt.Errorf("%w: command without a type", ErrMalformed)
	}
	// Go's protobuf runtime keeps an unknown value of a proto2 enum in the
	// field instead of moving it to the unknown fields, so check it here.
	if cmd.Type.Descriptor().Values().ByNumber(cmd.Type.Number()) == nil {
		return Frame{UnknownType: true}, nil
	}
	if err := proto.CheckInitialized(cmd); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return Frame{Command: cmd, Payload: payload}, nil
}

// hasField reports whether raw protobuf bytes hold a field with number n.
func hasField(raw []byte, n int32) bool {
	for len(raw) > 0 {
		num, typ, l := protowire.ConsumeTag(raw)
		if l < 0 {
			return false
		}
		if int32(num) == n {
			return true
		}
		raw = raw[l:]
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return false
		}
		raw = raw[m:]
	}
	return false
}

// AppendCommand appends a simple command frame for cmd to dst.
func AppendCommand(dst []byte, cmd *pb.BaseCommand) []byte {
	return AppendPayloadCommand(dst, cmd, nil)
}

// AppendPayloadCommand appends a frame holding cmd followed by payload, which
// is written as it is (for MESSAGE: the stored entry, checksum block included).
func AppendPayloadCommand(dst []byte, cmd *pb.BaseCommand, payload []byte) []byte {
	size := proto.Size(cmd)
	total := 4 + size + len(payload)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst, err := proto.MarshalOptions{AllowPartial: true, UseCachedSize: true}.MarshalAppend(dst, cmd)
	if err != nil {
		// Marshalling a well-formed message into a growable slice cannot fail.
		panic(err)
	}
	return append(dst, payload...)
}
