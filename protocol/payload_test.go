package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

func sampleMetadata() *pb.MessageMetadata {
	return &pb.MessageMetadata{
		ProducerName: proto.String("standalone-0-7"), SequenceId: proto.Uint64(9),
		PublishTime: proto.Uint64(1_700_000_000_000),
	}
}

// metadataSection is [metadata size][metadata][body]: the bytes the checksum
// covers and that follow the optional magic blocks.
func metadataSection(t *testing.T, md *pb.MessageMetadata, body []byte) []byte {
	t.Helper()
	raw, err := proto.MarshalOptions{AllowPartial: true}.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(raw)))
	b = append(b, raw...)
	return append(b, body...)
}

func TestChecksumIsCRC32C(t *testing.T) {
	// The standard check value of CRC-32C (Castagnoli) over "123456789".
	if got := protocol.Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("Checksum = %#x, want 0xe3069283", got)
	}
}

func TestChecksumCoversMetadataSizeMetadataAndPayload(t *testing.T) {
	md, body := sampleMetadata(), []byte("payload bytes")
	p := protocol.AppendPayload(nil, md, body)

	if got := binary.BigEndian.Uint16(p); got != protocol.MagicChecksum {
		t.Fatalf("payload opens with %#x, want the 0x0e01 magic", got)
	}
	section := metadataSection(t, md, body)
	if !bytes.Equal(p[6:], section) {
		t.Fatalf("after the checksum block:\n got %x\nwant %x", p[6:], section)
	}
	want := crc32.Checksum(section, crc32.MakeTable(crc32.Castagnoli))
	if got := binary.BigEndian.Uint32(p[2:]); got != want {
		t.Fatalf("stored checksum %#x, want CRC32C of size+metadata+payload %#x", got, want)
	}

	parsed, err := protocol.ParsePayload(p)
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.HasChecksum || parsed.Checksum != want || !parsed.ChecksumValid() {
		t.Fatalf("parsed checksum: present %v value %#x valid %v", parsed.HasChecksum, parsed.Checksum, parsed.ChecksumValid())
	}
}

func TestChecksumDetectsAChangeInAnyCoveredPart(t *testing.T) {
	md, body := sampleMetadata(), []byte("payload bytes")
	good := protocol.AppendPayload(nil, md, body)
	mdLen := int(binary.BigEndian.Uint32(good[6:]))
	for name, at := range map[string]int{
		"metadata":         10 + mdLen - 1, // last byte of publish_time's varint
		"payload":          len(good) - 1,
		"first body byte":  10 + mdLen,
		"producer name":    10 + 2, // a character of "standalone-0-7"
		"stored checksum":  2,
		"checksum low end": 5,
	} {
		t.Run(name, func(t *testing.T) {
			bad := bytes.Clone(good)
			bad[at] ^= 0x01
			p, err := protocol.ParsePayload(bad)
			if err != nil {
				t.Skipf("flip at %d no longer parses: %v", at, err)
			}
			if p.ChecksumValid() {
				t.Fatalf("flipping byte %d left the checksum valid", at)
			}
		})
	}
}

func TestPayloadWithoutChecksumBlockParsesAndIsValid(t *testing.T) {
	md, body := sampleMetadata(), []byte{0x0e, 0x01, 0xff} // a body that looks like magic
	p, err := protocol.ParsePayload(metadataSection(t, md, body))
	if err != nil {
		t.Fatal(err)
	}
	if p.HasChecksum {
		t.Fatal("HasChecksum set for a payload without the 0x0e01 block")
	}
	if !p.ChecksumValid() {
		t.Fatal("a payload without a checksum must count as valid")
	}
	if !proto.Equal(p.Metadata, md) || !bytes.Equal(p.Body, body) {
		t.Fatalf("parsed %v %x, want %v %x", p.Metadata, p.Body, md, body)
	}
}

func TestBrokerEntryMetadataPrefixIsSkipped(t *testing.T) {
	md, body := sampleMetadata(), []byte("after the broker entry metadata")
	inner := protocol.AppendPayload(nil, md, body)
	entryMD := []byte{0x08, 0xe8, 0x07, 0x10, 0x2a} // broker_timestamp=1000, index=42
	prefixed := binary.BigEndian.AppendUint16(nil, protocol.MagicBrokerEntryMetadata)
	prefixed = binary.BigEndian.AppendUint32(prefixed, uint32(len(entryMD)))
	prefixed = append(prefixed, entryMD...)
	prefixed = append(prefixed, inner...)

	p, err := protocol.ParsePayload(prefixed)
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasChecksum || !p.ChecksumValid() {
		t.Fatalf("checksum behind the prefix: present %v valid %v", p.HasChecksum, p.ChecksumValid())
	}
	if !proto.Equal(p.Metadata, md) || !bytes.Equal(p.Body, body) {
		t.Fatalf("parsed %v %q, want %v %q", p.Metadata, p.Body, md, body)
	}
}

func TestTruncatedPayloadBlocksAreMalformed(t *testing.T) {
	good := protocol.AppendPayload(nil, sampleMetadata(), []byte("x"))
	mdLen := binary.BigEndian.Uint32(good[6:])
	overlong := bytes.Clone(good)
	binary.BigEndian.PutUint32(overlong[6:], mdLen+100)
	cases := map[string][]byte{
		"empty":                             nil,
		"short checksum block":              {0x0e, 0x01, 0, 0},
		"checksum block without metadata":   good[:6],
		"short metadata size":               good[:8],
		"metadata size beyond payload":      overlong,
		"short broker entry metadata":       {0x0e, 0x02, 0, 0},
		"broker entry metadata beyond end":  {0x0e, 0x02, 0, 0, 0, 9, 1, 2},
		"broker entry metadata size at max": {0x0e, 0x02, 0xff, 0xff, 0xff, 0xff},
		"metadata missing required fields":  metadataSection(t, &pb.MessageMetadata{ProducerName: proto.String("p")}, nil),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := protocol.ParsePayload(b); !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

// batchBody builds an uncompressed batch in the wire layout.
func batchBody(t *testing.T, msgs []protocol.SingleMessage) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		raw := mustMarshal(t, m.Metadata)
		b = binary.BigEndian.AppendUint32(b, uint32(len(raw)))
		b = append(b, raw...)
		b = append(b, m.Payload...)
	}
	return b
}

func TestSplitBatchYieldsEachMessageWithItsMetadata(t *testing.T) {
	msgs := []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(5), PartitionKey: proto.String("k1"),
			Properties: []*pb.KeyValue{{Key: proto.String("p"), Value: proto.String("1")}}}, Payload: []byte("first")},
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(0), NullValue: proto.Bool(true)}, Payload: []byte{}},
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(6), EventTime: proto.Uint64(77), SequenceId: proto.Uint64(3)}, Payload: []byte("third!")},
	}
	got, err := protocol.SplitBatch(batchBody(t, msgs), len(msgs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("got %d messages, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if !proto.Equal(got[i].Metadata, msgs[i].Metadata) || !bytes.Equal(got[i].Payload, msgs[i].Payload) {
			t.Errorf("message %d: got %v %q, want %v %q", i, got[i].Metadata, got[i].Payload, msgs[i].Metadata, msgs[i].Payload)
		}
	}
}

func TestAppendBatchWritesTheLayoutSplitBatchReads(t *testing.T) {
	msgs := []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(2), PartitionKey: proto.String("k")}, Payload: []byte("hi")},
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(0)}, Payload: nil},
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(3), SequenceId: proto.Uint64(9)}, Payload: []byte("end")},
	}
	body := protocol.AppendBatch([]byte("x"), msgs)
	if want := append([]byte("x"), batchBody(t, msgs)...); !bytes.Equal(body, want) {
		t.Fatalf("AppendBatch wrote %x, want %x", body, want)
	}
	got, err := protocol.SplitBatch(body[1:], len(msgs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		if !proto.Equal(got[i].Metadata, msgs[i].Metadata) || !bytes.Equal(got[i].Payload, msgs[i].Payload) {
			t.Errorf("message %d: got %v %q, want %v %q", i, got[i].Metadata, got[i].Payload, msgs[i].Metadata, msgs[i].Payload)
		}
	}
}

func TestSplitBatchRefusesAShortOrInconsistentBatch(t *testing.T) {
	one := batchBody(t, []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(3)}, Payload: []byte("abc")},
	})
	lying := batchBody(t, []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(30)}, Payload: []byte("abc")},
	})
	negative := batchBody(t, []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(-1)}, Payload: nil},
	})
	cases := map[string]struct {
		body []byte
		n    int
	}{
		"fewer messages than announced": {one, 2},
		"payload size beyond the batch": {lying, 1},
		"negative payload size":         {negative, 1},
		"metadata size beyond batch":    {[]byte{0, 0, 1, 0, 0x18, 0x01}, 1},
		"no size":                       {[]byte{0, 0}, 1},
		"metadata without payload_size": {append([]byte{0, 0, 0, 2}, 0x12, 0x00), 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := protocol.SplitBatch(c.body, c.n); !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestSplitBatchOfZeroMessagesIsEmpty(t *testing.T) {
	got, err := protocol.SplitBatch([]byte("ignored"), 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want no messages and no error", got, err)
	}
}

func TestSplitBatchRefusesANegativeOrHugeCountWithoutPanicking(t *testing.T) {
	// num_messages_in_batch is an int32 the client chooses; the broker must
	// not trust it to size an allocation.
	body := batchBody(t, []protocol.SingleMessage{
		{Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(2)}, Payload: []byte("ok")},
	})
	for _, n := range []int{-1, -1 << 31, 1<<31 - 1} {
		if _, err := protocol.SplitBatch(body, n); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("n = %d: err = %v, want ErrMalformed", n, err)
		}
	}
}
