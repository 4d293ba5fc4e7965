package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// restHeaders renders a stored entry's metadata as the X-Pulsar-* headers of
// Pulsar's REST API: a batch shows its size (its messages' own metadata is in
// the body), a single message its key, event time and properties.
func restHeaders(e broker.Entry) http.Header {
	h := http.Header{}
	h.Set("X-Pulsar-Message-ID", strconv.FormatInt(e.ID.Ledger, 10)+":"+strconv.FormatInt(e.ID.Entry, 10))
	h.Set("X-Pulsar-Publish-Time", e.PublishTime.UTC().Format(time.RFC3339Nano))
	h.Set("X-Pulsar-Producer-Name", e.Producer)
	h.Set("X-Pulsar-Sequence-Id", strconv.FormatUint(e.SequenceID, 10))
	if e.BatchSize > 0 {
		h.Set("X-Pulsar-Num-Batch-Message", strconv.Itoa(int(e.BatchSize)))
		return h
	}
	if len(e.Messages) != 1 {
		return h
	}
	m := e.Messages[0]
	if m.Key != "" {
		h.Set("X-Pulsar-Key", m.Key)
	}
	if !m.EventTime.IsZero() {
		h.Set("X-Pulsar-Event-Time", m.EventTime.UTC().Format(time.RFC3339Nano))
	}
	if len(m.Properties) > 0 {
		js, _ := json.Marshal(m.Properties)
		h.Set("X-Pulsar-Property", string(js))
	}
	return h
}
