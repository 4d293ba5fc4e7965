package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol"
)

// restMessage renders a stored entry as Pulsar's REST API answers a message:
// the uncompressed payload (a batch keeps its single-message framing) and the
// metadata as X-Pulsar-* headers.
func restMessage(data []byte) (http.Header, []byte, error) {
	pl, err := protocol.ParsePayload(data)
	if err != nil {
		return nil, nil, err
	}
	md := pl.Metadata
	body, err := decompress(md.GetCompression(), pl.Body, int(md.GetUncompressedSize()))
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	h.Set("X-Pulsar-Publish-Time", time.UnixMilli(int64(md.GetPublishTime())).UTC().Format(time.RFC3339Nano))
	h.Set("X-Pulsar-Producer-Name", md.GetProducerName())
	h.Set("X-Pulsar-Sequence-Id", strconv.FormatUint(md.GetSequenceId(), 10))
	if md.NumMessagesInBatch != nil {
		h.Set("X-Pulsar-Num-Batch-Message", strconv.Itoa(int(md.GetNumMessagesInBatch())))
	} else {
		if md.PartitionKey != nil {
			h.Set("X-Pulsar-Key", md.GetPartitionKey())
		}
		if md.GetEventTime() != 0 {
			h.Set("X-Pulsar-Event-Time", time.UnixMilli(int64(md.GetEventTime())).UTC().Format(time.RFC3339Nano))
		}
		if props := properties(md.GetProperties()); props != nil {
			js, _ := json.Marshal(props)
			h.Set("X-Pulsar-Property", string(js))
		}
	}
	return h, body, nil
}

// decodeJSON reads a JSON request body into v; an empty body is no error.
func decodeJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || len(body) == 0 {
		return err
	}
	return json.Unmarshal(body, v)
}
