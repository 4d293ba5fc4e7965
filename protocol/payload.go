package protocol

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// MagicChecksum opens the optional checksum block of a payload frame.
const MagicChecksum = 0x0e01

// MagicBrokerEntryMetadata opens the optional broker entry metadata block.
const MagicBrokerEntryMetadata = 0x0e02

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC32C (Castagnoli) of b, as Pulsar computes it over
// the metadata size, the metadata and the payload.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Payload is the part of a SEND or MESSAGE frame after the command, split
// into its pieces. Its slices alias the bytes it was parsed from.
type Payload struct {
	// HasChecksum is set when the 0x0e01 block is present.
	HasChecksum bool
	// Checksum is the CRC32C the sender wrote, when HasChecksum.
	Checksum uint32
	// Metadata is the decoded message metadata.
	Metadata *pb.MessageMetadata
	// Body is the (possibly compressed) payload after the metadata.
	Body []byte
	// checked is the range the checksum covers: metadata size to the end.
	checked []byte
}

// ParsePayload splits the bytes that follow a SEND or MESSAGE command.
func ParsePayload(b []byte) (Payload, error) { return parsePayload(b, nil) }

// parsePayload is ParsePayload, decoding the metadata into md when not nil.
func parsePayload(b []byte, md *metadata) (Payload, error) {
	var p Payload
	if len(b) >= 2 && binary.BigEndian.Uint16(b) == MagicBrokerEntryMetadata {
		if len(b) < 6 {
			return p, fmt.Errorf("%w: short broker entry metadata", ErrMalformed)
		}
		n := binary.BigEndian.Uint32(b[2:])
		if uint64(n) > uint64(len(b)-6) {
			return p, fmt.Errorf("%w: broker entry metadata size %d", ErrMalformed, n)
		}
		b = b[6+n:]
	}
	if len(b) >= 2 && binary.BigEndian.Uint16(b) == MagicChecksum {
		if len(b) < 6 {
			return p, fmt.Errorf("%w: short checksum block", ErrMalformed)
		}
		p.HasChecksum = true
		p.Checksum = binary.BigEndian.Uint32(b[2:])
		b = b[6:]
	}
	p.checked = b
	if len(b) < 4 {
		return p, fmt.Errorf("%w: no metadata size", ErrMalformed)
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return p, fmt.Errorf("%w: metadata size %d beyond payload of %d", ErrMalformed, n, len(b))
	}
	m, ok := decodeMetadataFast(b[4:4+n], md)
	if !ok {
		m = &pb.MessageMetadata{}
		if err := proto.Unmarshal(b[4:4+n], m); err != nil {
			return p, fmt.Errorf("%w: metadata: %v", ErrMalformed, err)
		}
	}
	p.Metadata = m
	p.Body = b[4+n:]
	return p, nil
}

// ChecksumValid reports whether the payload's checksum matches its bytes. A
// payload without a checksum block is valid.
func (p Payload) ChecksumValid() bool {
	return !p.HasChecksum || Checksum(p.checked) == p.Checksum
}

// AppendPayload appends a payload in the wire layout: checksum block, metadata
// size, metadata and body.
func AppendPayload(dst []byte, md *pb.MessageMetadata, body []byte) []byte {
	mdBytes, err := proto.Marshal(md)
	if err != nil {
		panic(err)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, MagicChecksum)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(mdBytes)))
	dst = append(dst, mdBytes...)
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start+2:], Checksum(dst[start+6:]))
	return dst
}

// SingleMessage is one message of a batch: its metadata and its bytes.
type SingleMessage struct {
	Metadata *pb.SingleMessageMetadata
	Payload  []byte
}

// AppendBatch appends msgs as an uncompressed batch body, each framed as
// [u32 size][SingleMessageMetadata][payload]; SplitBatch reads it back. Each
// message's metadata must give its payload_size.
func AppendBatch(dst []byte, msgs []SingleMessage) []byte {
	for _, m := range msgs {
		raw, err := proto.Marshal(m.Metadata)
		if err != nil {
			panic(err)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(raw)))
		dst = append(dst, raw...)
		dst = append(dst, m.Payload...)
	}
	return dst
}

// SplitBatch splits an uncompressed batch body into its n messages, each
// framed as [u32 size][SingleMessageMetadata][payload_size bytes].
func SplitBatch(body []byte, n int) ([]SingleMessage, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: batch of %d messages", ErrMalformed, n)
	}
	// n comes from the sender; every message takes at least 4 bytes, so
	// the body bounds the allocation, not n.
	out := make([]SingleMessage, 0, min(n, len(body)/4))
	for i := 0; i < n; i++ {
		if len(body) < 4 {
			return nil, fmt.Errorf("%w: batch message %d: no size", ErrMalformed, i)
		}
		size := binary.BigEndian.Uint32(body)
		if uint64(size) > uint64(len(body)-4) {
			return nil, fmt.Errorf("%w: batch message %d: metadata size %d", ErrMalformed, i, size)
		}
		smd := &pb.SingleMessageMetadata{}
		if err := proto.Unmarshal(body[4:4+size], smd); err != nil {
			return nil, fmt.Errorf("%w: batch message %d: %v", ErrMalformed, i, err)
		}
		body = body[4+size:]
		ps := int(smd.GetPayloadSize())
		if ps < 0 || ps > len(body) {
			return nil, fmt.Errorf("%w: batch message %d: payload size %d", ErrMalformed, i, ps)
		}
		out = append(out, SingleMessage{Metadata: smd, Payload: body[:ps]})
		body = body[ps:]
	}
	return out, nil
}
