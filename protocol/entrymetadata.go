package protocol

import (
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// BrokerEntryMetadata is what a broker with entry metadata interceptors
// (PIP-70) writes before an entry: the broker's time at publish and the
// topic-wide index of the entry's last message. Each field is optional.
type BrokerEntryMetadata struct {
	// BrokerTimestamp is in ms since the epoch, when HasTimestamp.
	BrokerTimestamp uint64
	HasTimestamp    bool
	// Index is the index of the entry's last message, when HasIndex.
	Index    uint64
	HasIndex bool
}

// Field numbers of BrokerEntryMetadata in PulsarApi.proto.
const (
	brokerEntryTimestampField = 1
	brokerEntryIndexField     = 2
)

// AppendBrokerEntryMetadata appends the broker entry metadata block that
// precedes a stored entry: [u16 0x0e02][u32 size][BrokerEntryMetadata].
func AppendBrokerEntryMetadata(dst []byte, m BrokerEntryMetadata) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, MagicBrokerEntryMetadata)
	dst = append(dst, 0, 0, 0, 0)
	if m.HasTimestamp {
		dst = protowire.AppendTag(dst, brokerEntryTimestampField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, m.BrokerTimestamp)
	}
	if m.HasIndex {
		dst = protowire.AppendTag(dst, brokerEntryIndexField, protowire.VarintType)
		dst = protowire.AppendVarint(dst, m.Index)
	}
	binary.BigEndian.PutUint32(dst[start+2:], uint32(len(dst)-start-6))
	return dst
}

// BrokerEntryMetadataLen returns the length of the broker entry metadata
// block that opens b, 0 when b opens with none.
func BrokerEntryMetadataLen(b []byte) int {
	if len(b) < 6 || binary.BigEndian.Uint16(b) != MagicBrokerEntryMetadata {
		return 0
	}
	n := binary.BigEndian.Uint32(b[2:])
	if uint64(n) > uint64(len(b)-6) {
		return 0
	}
	return 6 + int(n)
}

// ParseBrokerEntryMetadata decodes the broker entry metadata block that
// opens b. It reports false when b opens with none.
func ParseBrokerEntryMetadata(b []byte) (BrokerEntryMetadata, bool, error) {
	var m BrokerEntryMetadata
	n := BrokerEntryMetadataLen(b)
	if n == 0 {
		return m, false, nil
	}
	body := b[6:n]
	for len(body) > 0 {
		num, typ, tl := protowire.ConsumeTag(body)
		if tl < 0 {
			return m, true, fmt.Errorf("%w: broker entry metadata: %v", ErrMalformed, protowire.ParseError(tl))
		}
		body = body[tl:]
		if typ != protowire.VarintType || (num != brokerEntryTimestampField && num != brokerEntryIndexField) {
			fl := protowire.ConsumeFieldValue(num, typ, body)
			if fl < 0 {
				return m, true, fmt.Errorf("%w: broker entry metadata: %v", ErrMalformed, protowire.ParseError(fl))
			}
			body = body[fl:]
			continue
		}
		v, vl := protowire.ConsumeVarint(body)
		if vl < 0 {
			return m, true, fmt.Errorf("%w: broker entry metadata: %v", ErrMalformed, protowire.ParseError(vl))
		}
		body = body[vl:]
		if num == brokerEntryTimestampField {
			m.BrokerTimestamp, m.HasTimestamp = v, true
		} else {
			m.Index, m.HasIndex = v, true
		}
	}
	return m, true, nil
}
