package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// restHeaders renders a stored entry's metadata as the X-Pulsar-* headers
// Pulsar 4.0.8's REST API serves with an entry: the entry's own metadata
// (for a batch, what the producer put on the whole batch, plus its size;
// its messages' own metadata is in the body).
//
// The names keep Pulsar's spelling (X-Pulsar-PROPERTY, X-Pulsar-publish-time):
// Pulsar's Java admin client looks some of them up by exact name.
func restHeaders(e broker.Entry) http.Header {
	h := http.Header{}
	set := func(k, v string) { h[k] = []string{v} }
	set("X-Pulsar-Message-ID", strconv.FormatInt(e.ID.Ledger, 10)+":"+strconv.FormatInt(e.ID.Entry, 10))
	props, _ := json.Marshal(e.Properties)
	if e.Properties == nil {
		props = []byte("{}")
	}
	set("X-Pulsar-PROPERTY", string(props))
	// The broker entry metadata, when the broker writes it (PIP-70).
	if !e.BrokerTimestamp.IsZero() {
		set("X-Pulsar-Broker-Entry-METADATA-timestamp", javaInstant(e.BrokerTimestamp))
	}
	if e.Index >= 0 {
		set("X-Pulsar-Broker-Entry-METADATA-index", strconv.FormatInt(e.Index, 10))
	}
	set("X-Pulsar-publish-time", javaInstant(e.PublishTime))
	if !e.EventTime.IsZero() {
		set("X-Pulsar-event-time", javaInstant(e.EventTime))
	}
	if !e.DeliverAt.IsZero() {
		set("X-Pulsar-deliver-at-time", javaInstant(e.DeliverAt))
	}
	if e.BatchSize > 0 {
		set("X-Pulsar-num-batch-message", strconv.Itoa(int(e.BatchSize)))
		set("X-Pulsar-batch-size", strconv.Itoa(e.FrameSize))
	}
	set("X-Pulsar-Is-Encrypted", strconv.FormatBool(e.Encrypted))
	set("X-Pulsar-producer-name", e.Producer)
	set("X-Pulsar-sequence-id", strconv.FormatUint(e.SequenceID, 10))
	if len(e.ReplicateTo) > 0 {
		h["X-Pulsar-replicated-to"] = e.ReplicateTo
	}
	if e.Key != "" {
		set("X-Pulsar-partition-key", e.Key)
	}
	if e.Compression != "" {
		set("X-Pulsar-compression", e.Compression)
	}
	if e.KeyBase64 != nil {
		set("X-Pulsar-partition-key-b64-encoded", strconv.FormatBool(*e.KeyBase64))
	}
	if e.UncompressedSize >= 0 {
		set("X-Pulsar-uncompressed-size", strconv.FormatInt(e.UncompressedSize, 10))
	}
	set("X-Pulsar-txn-uncommitted", "false")
	return h
}

// javaInstant formats t as Java's ISO instant format does (Pulsar's REST
// times): UTC, with the milliseconds only when there are any.
func javaInstant(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	if ms := t.Nanosecond() / int(time.Millisecond); ms != 0 {
		s += fmt.Sprintf(".%03d", ms)
	}
	return s + "Z"
}

// writeEntry answers one stored entry the way Pulsar's REST API does: the
// (uncompressed) payload as the body, the metadata in X-Pulsar-* headers.
// Pulsar labels the body application/json whatever it holds.
func writeEntry(w http.ResponseWriter, e broker.Entry) {
	for k, v := range restHeaders(e) {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(e.Body)
}
