package protocol

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The fast decoders below handle the two messages every produced entry
// carries, a SEND command and its MessageMetadata, in one allocation each
// instead of one per present field. They accept only the plain, common form
// of each message (known fields, the schema's wire types, each sub-message
// once) and report false for anything else, which then goes through
// proto.Unmarshal as before: so whatever they accept decodes to a message
// equal to proto.Unmarshal's (FuzzFastDecodersMatchProto checks this), and
// everything else is decided exactly as before.

// sendCommand holds a decoded SEND and the values of its usual fields; the
// rarer ones get values of their own.
type sendCommand struct {
	base                   pb.BaseCommand
	send                   pb.CommandSend
	typ                    pb.BaseCommand_Type
	producerID, sequenceID uint64
	highest                uint64
	numMessages            int32
}

// decodeSendFast decodes a BaseCommand holding a SEND into c, a new one when
// nil. It reports false when b is not a plain SEND.
func decodeSendFast(b []byte, c *sendCommand) (*pb.BaseCommand, bool) {
	// Clients write the type first; a command that does not start with
	// type SEND is left to the general decoder without allocating here.
	if len(b) < 2 || b[0] != 1<<3|byte(protowire.VarintType) || b[1] != byte(pb.BaseCommand_SEND) {
		return nil, false
	}
	if c == nil {
		c = &sendCommand{}
	} else {
		*c = sendCommand{}
	}
	seenType, seenSend := false, false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || v != uint64(pb.BaseCommand_SEND) {
				return nil, false
			}
			b, seenType = b[n:], true
		case num == protowire.Number(pb.BaseCommand_SEND) && typ == protowire.BytesType && !seenSend:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !c.decodeSend(v) {
				return nil, false
			}
			b, seenSend = b[n:], true
		default:
			return nil, false
		}
	}
	if !seenType || !seenSend {
		return nil, false
	}
	c.typ = pb.BaseCommand_SEND
	c.base.Type = &c.typ
	c.base.Send = &c.send
	return &c.base, true
}

// decodeSend decodes the CommandSend fields into c.send; the required
// producer_id and sequence_id must be there.
func (c *sendCommand) decodeSend(b []byte) bool {
	s := &c.send
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 1:
			c.producerID, s.ProducerId = v, &c.producerID
		case 2:
			c.sequenceID, s.SequenceId = v, &c.sequenceID
		case 3:
			c.numMessages, s.NumMessages = int32(v), &c.numMessages
		case 4:
			s.TxnidLeastBits = proto.Uint64(v)
		case 5:
			s.TxnidMostBits = proto.Uint64(v)
		case 6:
			c.highest, s.HighestSequenceId = v, &c.highest
		case 7:
			s.IsChunk = proto.Bool(protowire.DecodeBool(v))
		case 8:
			s.Marker = proto.Bool(protowire.DecodeBool(v))
		default:
			return false
		}
	}
	return s.ProducerId != nil && s.SequenceId != nil
}

// metadata holds a decoded MessageMetadata and the values of the fields a
// producer usually sets; the rarer ones get values of their own.
type metadata struct {
	md                                 pb.MessageMetadata
	producerName, partKey              string
	sequenceID, publishTime, eventTime uint64
	highest                            uint64
	deliverAt                          int64
	compression                        pb.CompressionType
	uncompressedSize                   uint32
	numInBatch                         int32
}

// decodeMetadataFast decodes a MessageMetadata into m, a new one when nil.
// It reports false when b is not in the plain form it handles.
func decodeMetadataFast(b []byte, m *metadata) (*pb.MessageMetadata, bool) {
	if m == nil {
		m = &metadata{}
	} else {
		*m = metadata{}
	}
	md := &m.md
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !m.bytesField(num, v) {
				return nil, false
			}
			b = b[n:]
			continue
		}
		if typ != protowire.VarintType {
			return nil, false
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || !m.varintField(num, v) {
			return nil, false
		}
		b = b[n:]
	}
	if md.ProducerName == nil || md.SequenceId == nil || md.PublishTime == nil {
		return nil, false
	}
	return md, true
}

// bytesField sets a length-delimited field of the metadata.
func (m *metadata) bytesField(num protowire.Number, v []byte) bool {
	md := &m.md
	switch num {
	case 1:
		m.producerName, md.ProducerName = string(v), &m.producerName
	case 4:
		kv, ok := decodeKeyValue(v)
		if !ok {
			return false
		}
		md.Properties = append(md.Properties, kv)
	case 5:
		md.ReplicatedFrom = proto.String(string(v))
	case 6:
		m.partKey, md.PartitionKey = string(v), &m.partKey
	case 16:
		md.SchemaVersion = append([]byte{}, v...)
	case 18:
		md.OrderingKey = append([]byte{}, v...)
	case 26:
		md.Uuid = proto.String(string(v))
	default:
		return false
	}
	return true
}

// varintField sets a varint field of the metadata.
func (m *metadata) varintField(num protowire.Number, v uint64) bool {
	md := &m.md
	switch num {
	case 2:
		m.sequenceID, md.SequenceId = v, &m.sequenceID
	case 3:
		m.publishTime, md.PublishTime = v, &m.publishTime
	case 8:
		if v > uint64(pb.CompressionType_SNAPPY) {
			return false // an unknown codec: proto.Unmarshal decides
		}
		m.compression, md.Compression = pb.CompressionType(v), &m.compression
	case 9:
		m.uncompressedSize, md.UncompressedSize = uint32(v), &m.uncompressedSize
	case 11:
		m.numInBatch, md.NumMessagesInBatch = int32(v), &m.numInBatch
	case 12:
		m.eventTime, md.EventTime = v, &m.eventTime
	case 17:
		md.PartitionKeyB64Encoded = proto.Bool(protowire.DecodeBool(v))
	case 19:
		m.deliverAt, md.DeliverAtTime = int64(v), &m.deliverAt
	case 20:
		md.MarkerType = proto.Int32(int32(v))
	case 22:
		md.TxnidLeastBits = proto.Uint64(v)
	case 23:
		md.TxnidMostBits = proto.Uint64(v)
	case 24:
		m.highest, md.HighestSequenceId = v, &m.highest
	case 25:
		md.NullValue = proto.Bool(protowire.DecodeBool(v))
	case 27:
		md.NumChunksFromMsg = proto.Int32(int32(v))
	case 28:
		md.TotalChunkMsgSize = proto.Int32(int32(v))
	case 29:
		md.ChunkId = proto.Int32(int32(v))
	case 30:
		md.NullPartitionKey = proto.Bool(protowire.DecodeBool(v))
	default:
		return false
	}
	return true
}

// keyValue holds a decoded KeyValue and its two strings.
type keyValue struct {
	kv         pb.KeyValue
	key, value string
}

// decodeKeyValue decodes a property; both of its fields are required.
func decodeKeyValue(b []byte) (*pb.KeyValue, bool) {
	p := &keyValue{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return nil, false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch num {
		case 1:
			p.key, p.kv.Key = string(v), &p.key
		case 2:
			p.value, p.kv.Value = string(v), &p.value
		default:
			return nil, false
		}
	}
	if p.kv.Key == nil || p.kv.Value == nil {
		return nil, false
	}
	return &p.kv, true
}
