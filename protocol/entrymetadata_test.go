package protocol_test

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/protocol"
)

func TestBrokerEntryMetadataRoundTrips(t *testing.T) {
	for _, m := range []protocol.BrokerEntryMetadata{
		{},
		{BrokerTimestamp: 1_764_000_000_123, HasTimestamp: true},
		{Index: 0, HasIndex: true},
		{BrokerTimestamp: 1000, HasTimestamp: true, Index: 1 << 40, HasIndex: true},
	} {
		inner := protocol.AppendPayload(nil, sampleMetadata(), []byte("body"))
		b := append(protocol.AppendBrokerEntryMetadata(nil, m), inner...)
		got, ok, err := protocol.ParseBrokerEntryMetadata(b)
		if !ok || err != nil || got != m {
			t.Fatalf("%+v: parsed %+v (present %v, %v)", m, got, ok, err)
		}
		if n := protocol.BrokerEntryMetadataLen(b); n != len(b)-len(inner) {
			t.Fatalf("%+v: block of %d bytes, want %d", m, n, len(b)-len(inner))
		}
		if p, err := protocol.ParsePayload(b); err != nil || string(p.Body) != "body" || !p.ChecksumValid() {
			t.Fatalf("%+v: the payload behind the block: %q, %v", m, p.Body, err)
		}
	}
}

func TestBrokerEntryMetadataEncodesAsPulsarDoes(t *testing.T) {
	// broker_timestamp=1000 (field 1), index=42 (field 2).
	want := []byte{0x0e, 0x02, 0, 0, 0, 5, 0x08, 0xe8, 0x07, 0x10, 0x2a}
	got := protocol.AppendBrokerEntryMetadata(nil, protocol.BrokerEntryMetadata{
		BrokerTimestamp: 1000, HasTimestamp: true, Index: 42, HasIndex: true})
	if string(got) != string(want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
}

func TestAnEntryWithoutBrokerEntryMetadataHasNone(t *testing.T) {
	b := protocol.AppendPayload(nil, sampleMetadata(), []byte("body"))
	if _, ok, err := protocol.ParseBrokerEntryMetadata(b); ok || err != nil {
		t.Fatalf("found broker entry metadata in a plain payload (%v)", err)
	}
	if n := protocol.BrokerEntryMetadataLen(b); n != 0 {
		t.Fatalf("block of %d bytes in a plain payload", n)
	}
}
