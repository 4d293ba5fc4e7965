package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// FuzzDecodeFrame feeds arbitrary bytes through the broker's read path:
// ReadFrame, DecodeFrame, ParsePayload and SplitBatch. Nothing may panic, and
// whatever decodes must re-encode into something that decodes to the same
// values. The seed corpus in testdata/fuzz/FuzzDecodeFrame holds frames
// captured from pulsar-client-go (see broker/capture_corpus_test.go).
func FuzzDecodeFrame(f *testing.F) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2),
		NumMessagesInBatch: proto.Int32(1),
	}
	single, _ := proto.Marshal(&pb.SingleMessageMetadata{PayloadSize: proto.Int32(2)})
	batch := binary.BigEndian.AppendUint32(nil, uint32(len(single)))
	batch = append(append(batch, single...), 'h', 'i')
	send := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(1)})
	f.Add(protocol.AppendCommand(nil, protocol.PingCommand()))
	f.Add(protocol.AppendPayloadCommand(nil, send, protocol.AppendPayload(nil, md, batch)))

	maxFrame := protocol.MaxFrameSize(protocol.DefaultMaxMessageSize)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			before := r.Len()
			body, err := protocol.ReadFrame(r, nil, maxFrame)
			if err != nil {
				if errors.Is(err, io.EOF) && r.Len() != before {
					t.Fatalf("io.EOF after consuming %d bytes", before-r.Len())
				}
				return
			}
			if want := binary.BigEndian.Uint32(data[len(data)-before:]); uint32(len(body)) != want {
				t.Fatalf("ReadFrame returned %d bytes, the size prefix says %d", len(body), want)
			}
			checkFrame(t, body)
		}
	})
}

var deterministic = proto.MarshalOptions{Deterministic: true, AllowPartial: true}

// sameMessage compares two messages by their deterministic encoding, which,
// unlike proto.Equal, treats a NaN double as equal to itself.
func sameMessage(t *testing.T, a, b proto.Message) bool {
	t.Helper()
	ab, err := deterministic.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := deterministic.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ab, bb)
}

func checkFrame(t *testing.T, body []byte) {
	fr, err := protocol.DecodeFrame(body)
	if err != nil {
		if !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("DecodeFrame error %v is not ErrMalformed", err)
		}
		return
	}
	if fr.UnknownType {
		if fr.Command != nil {
			t.Fatal("UnknownType with a command")
		}
		return
	}
	if fr.Command == nil {
		t.Fatal("no error, no command, not UnknownType")
	}

	// The command and payload re-encode into a frame that decodes the same.
	again := protocol.AppendPayloadCommand(nil, fr.Command, fr.Payload)
	body2, err := protocol.ReadFrame(bytes.NewReader(again), nil, len(again))
	if err != nil {
		t.Fatalf("re-encoded frame does not read back: %v", err)
	}
	fr2, err := protocol.DecodeFrame(body2)
	if err != nil {
		t.Fatalf("re-encoded frame does not decode: %v", err)
	}
	if fr2.UnknownType || !sameMessage(t, fr.Command, fr2.Command) {
		t.Fatalf("command changed in a round trip:\n%v\n%v", fr.Command, fr2.Command)
	}
	if !bytes.Equal(fr.Payload, fr2.Payload) {
		t.Fatal("payload changed in a round trip")
	}

	if fr.Payload == nil {
		return
	}
	switch fr.Command.GetType() {
	case pb.BaseCommand_SEND, pb.BaseCommand_MESSAGE:
	default:
		return
	}
	checkPayload(t, fr.Payload)
}

func checkPayload(t *testing.T, b []byte) {
	p, err := protocol.ParsePayload(b)
	if err != nil {
		if !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("ParsePayload error %v is not ErrMalformed", err)
		}
		return
	}
	_ = p.ChecksumValid()

	// Metadata and body re-encode into a payload with a valid checksum that
	// parses to the same values.
	again := protocol.AppendPayload(nil, p.Metadata, p.Body)
	p2, err := protocol.ParsePayload(again)
	if err != nil {
		t.Fatalf("re-encoded payload does not parse: %v", err)
	}
	if !p2.HasChecksum || !p2.ChecksumValid() {
		t.Fatal("re-encoded payload has no valid checksum")
	}
	if !sameMessage(t, p.Metadata, p2.Metadata) || !bytes.Equal(p.Body, p2.Body) {
		t.Fatal("payload changed in a round trip")
	}

	if p.Metadata.NumMessagesInBatch == nil {
		return
	}
	msgs, err := protocol.SplitBatch(p.Body, int(p.Metadata.GetNumMessagesInBatch()))
	if err != nil {
		if !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("SplitBatch error %v is not ErrMalformed", err)
		}
		return
	}
	if len(msgs) != int(p.Metadata.GetNumMessagesInBatch()) {
		t.Fatalf("SplitBatch gave %d messages, metadata says %d", len(msgs), p.Metadata.GetNumMessagesInBatch())
	}
	// The messages re-encode into a batch that splits the same way.
	var batch []byte
	for _, m := range msgs {
		raw, err := deterministic.Marshal(m.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		batch = binary.BigEndian.AppendUint32(batch, uint32(len(raw)))
		batch = append(append(batch, raw...), m.Payload...)
	}
	msgs2, err := protocol.SplitBatch(batch, len(msgs))
	if err != nil {
		t.Fatalf("re-encoded batch does not split: %v", err)
	}
	for i := range msgs {
		if !sameMessage(t, msgs[i].Metadata, msgs2[i].Metadata) || !bytes.Equal(msgs[i].Payload, msgs2[i].Payload) {
			t.Fatalf("batch message %d changed in a round trip", i)
		}
	}
}
