package admin_test

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestExamineShowsTheBrokerEntryMetadata(t *testing.T) {
	b, url := serveAdmin(t, broker.WithClock(broker.NewManualClock(peekEpoch)),
		broker.WithBrokerEntryMetadata(broker.BrokerEntryMetadata{BrokerTimestamp: true, Index: true}))
	seedPeekTopic(t, b) // two messages, then a batch of three
	base := url + "/admin/v2/persistent/public/default/peek/examinemessage?initialPosition=earliest&messagePosition="
	for pos, index := range map[string]string{"1": "0", "2": "1", "3": "4"} {
		got := get(t, base+pos)
		if got.Status != 200 || got.Headers["X-Pulsar-Broker-Entry-Metadata-Index"] != index ||
			got.Headers["X-Pulsar-Broker-Entry-Metadata-Timestamp"] != "2026-12-01T01:22:28.674Z" {
			t.Errorf("entry %s: %d %v, want index %s and the broker clock's time", pos, got.Status, got.Headers, index)
		}
	}
}

func TestExamineShowsNoBrokerEntryMetadataWithoutInterceptors(t *testing.T) {
	b, url := startPeekAdmin(t)
	seedPeekTopic(t, b)
	got := get(t, url+"/admin/v2/persistent/public/default/peek/examinemessage?initialPosition=earliest&messagePosition=1")
	for _, h := range []string{"X-Pulsar-Broker-Entry-Metadata-Index", "X-Pulsar-Broker-Entry-Metadata-Timestamp"} {
		if v, ok := got.Headers[h]; ok || got.Status != 200 {
			t.Errorf("%d, %s: %q, want no such header", got.Status, h, v)
		}
	}
}
