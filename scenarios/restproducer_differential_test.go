package scenarios_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The REST producer (PIP-64) compared with a real Pulsar: the same POSTs to
// /topics/... on both, their answers (status, reason, each message's result
// with the ledger id masked, the schema version), then what pulsar-client-go
// reads of the messages (payload decoded with the topic's schema, key,
// properties, event time, producer name).

// restPoster sends one broker's REST producer requests and notes the
// answers.
type restPoster struct {
	t     *testing.T
	admin string
	run   string // the run's unique part of names, left out of the notes
	notes []string
}

// reasonTimestamp is the registration time in a schema error's text.
var reasonTimestamp = regexp.MustCompile(`timestamp=\d+`)

// restLedger is the ledger id of a REST producer result's message id.
var restLedger = regexp.MustCompile(`^\d+:`)

// post POSTs body to path (under /topics/) and notes the answer.
func (p *restPoster) post(label, path, body string) {
	p.t.Helper()
	resp, err := http.Post(p.admin+"/topics/"+path, "application/json", strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	note := fmt.Sprintf("%s: %d", label, resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusOK:
		var acks struct {
			Results []struct {
				MessageID     string `json:"messageId"`
				ErrorCode     int    `json:"errorCode"`
				ErrorMsg      string `json:"errorMsg"`
				SchemaVersion int64  `json:"schemaVersion"`
			} `json:"messagePublishResults"`
			SchemaVersion int64 `json:"schemaVersion"`
		}
		if err := json.Unmarshal(raw, &acks); err != nil {
			p.t.Fatalf("%s: %v: %s", label, err, raw)
		}
		note += fmt.Sprintf(" schema version %d", acks.SchemaVersion)
		for _, r := range acks.Results {
			note += fmt.Sprintf("; %s code %d %q v%d", restLedger.ReplaceAllString(r.MessageID, "L:"), r.ErrorCode,
				r.ErrorMsg, r.SchemaVersion)
		}
	case resp.Header.Get("Content-Type") == "application/json":
		var e struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(raw, &e)
		note += " " + reasonTimestamp.ReplaceAllString(e.Reason, "timestamp=T")
	default:
		note += " " + resp.Header.Get("Content-Type") // a JSON parser's own message
	}
	p.notes = append(p.notes, strings.ReplaceAll(note, p.run, ""))
}

// admin sends a PUT or POST of the admin API and fails unless it succeeds.
func (p *restPoster) adminCall(method, path, body string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.admin+"/admin/v2/"+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		p.t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}

// schemaJSON is a REST producer schema: Pulsar's SchemaInfo as JSON text.
func schemaJSON(typ, definition string) string {
	b, _ := json.Marshal(map[string]any{"type": typ, "schema": base64.StdEncoding.EncodeToString([]byte(definition)),
		"properties": map[string]string{}})
	return string(b)
}

// restBody is a REST producer request body.
func restBody(fields map[string]any, msgs ...map[string]any) string {
	body := map[string]any{"messages": msgs}
	for k, v := range fields {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	return string(b)
}

type restRecord struct {
	A int     `json:"a" avro:"a"`
	S string  `json:"s" avro:"s"`
	B *string `json:"b" avro:"b"`
}

const (
	restAvroV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"s","type":"string"}]}`
	restAvroV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"s","type":"string"},` +
		`{"name":"b","type":["null","string"],"default":null}]}`
	restJSONDef = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"s","type":"string"}]}`
)

// restProducerStory posts the same requests to tg's REST producer and
// notes the answers and what pulsar-client-go reads.
func restProducerStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	run := strings.TrimPrefix(tg.Topic(""), "persistent://public/default/")
	p := &restPoster{t: t, admin: admin, run: run}
	name := func(n string) string { return strings.TrimPrefix(tg.Topic(n), "persistent://") }
	plain, parted, avroT, jsonT, kvT, term := name("rest-plain"), name("rest-parted"), name("rest-avro"),
		name("rest-json"), name("rest-kv"), name("rest-term")
	for _, tp := range []string{plain, avroT, jsonT, kvT, term} {
		p.adminCall(http.MethodPut, "persistent/"+tp, "")
	}
	p.adminCall(http.MethodPut, "persistent/"+parted+"/partitions", "3")
	p.adminCall(http.MethodPost, "persistent/"+term+"/terminate", "")

	// Refusals before anything is stored.
	p.post("no topic", "persistent/"+name("rest-none"), restBody(nil, map[string]any{"payload": "x"}))
	p.post("no namespace", "persistent/public/nowhere/t", restBody(nil, map[string]any{"payload": "x"}))
	p.post("no tenant", "persistent/nobody/default/t", restBody(nil, map[string]any{"payload": "x"}))
	p.post("bad json", "persistent/"+plain, "not json")
	p.post("no body", "persistent/"+plain, "")
	p.post("partition of a partition", "persistent/"+parted+"-partition-1/partitions/1",
		restBody(nil, map[string]any{"payload": "x"}))
	p.post("unknown schema version", "persistent/"+plain, restBody(map[string]any{"schemaVersion": 7},
		map[string]any{"payload": "x"}))
	p.post("unreadable schema", "persistent/"+plain, restBody(map[string]any{"valueSchema": "garbage"},
		map[string]any{"payload": "x"}))

	// Strings (the default schema) with their metadata.
	p.post("strings", "persistent/"+plain, restBody(map[string]any{"producerName": "rest-p"},
		map[string]any{"payload": "one", "key": "k1", "properties": map[string]string{"a": "1", "b": "2"},
			"eventTime": "1700000000123", "sequenceId": 5},
		map[string]any{"payload": "two", "deliverAfterMs": 7, "disableReplication": true},
		map[string]any{"payload": "three", "eventTime": "1700000000000", "deliverAt": 1700000000001,
			"replicationClusters": []string{"standalone"}}))
	p.post("no messages", "persistent/"+plain, `{}`)
	p.post("empty list", "persistent/"+plain, `{"messages":[]}`)
	p.post("bad event time", "persistent/"+plain, restBody(nil, map[string]any{"payload": "x", "eventTime": "soon"}))
	p.post("a partition of a plain topic", "persistent/"+plain+"/partitions/0", restBody(nil, map[string]any{"payload": "x"}))
	p.post("terminated", "persistent/"+term, restBody(nil, map[string]any{"payload": "x"}))

	// A partitioned topic: round robin, one partition, one that is not.
	p.post("partitioned", "persistent/"+parted, restBody(nil, map[string]any{"payload": "p0"},
		map[string]any{"payload": "p1"}, map[string]any{"payload": "p2"}, map[string]any{"payload": "p3"}))
	p.post("one partition", "persistent/"+parted+"/partitions/1", restBody(nil, map[string]any{"payload": "q0"},
		map[string]any{"payload": "q1"}))
	p.post("no such partition", "persistent/"+parted+"/partitions/5", restBody(nil, map[string]any{"payload": "q"}))

	// Avro: a schema, a compatible new version, a message that misses a
	// field (no payload), the first version named, a STRING refused.
	p.post("avro v1", "persistent/"+avroT, restBody(map[string]any{"valueSchema": schemaJSON("AVRO", restAvroV1)},
		map[string]any{"payload": `{"a":1,"s":"x"}`}))
	p.post("avro v2", "persistent/"+avroT, restBody(map[string]any{"valueSchema": schemaJSON("AVRO", restAvroV2)},
		map[string]any{"payload": `{"a":2,"s":"y","b":{"string":"z"}}`}, map[string]any{"payload": `{"a":3}`},
		map[string]any{"payload": `{"a":4,"s":"w","b":null}`}))
	p.post("avro by version", "persistent/"+avroT, restBody(map[string]any{"schemaVersion": 0},
		map[string]any{"payload": `{"a":5,"s":"v"}`}))
	p.post("string on avro", "persistent/"+avroT, restBody(nil, map[string]any{"payload": "x"}))

	// JSON, and a key-value schema.
	p.post("json", "persistent/"+jsonT, restBody(map[string]any{"valueSchema": schemaJSON("JSON", restJSONDef)},
		map[string]any{"payload": `{"a": 7, "s": "j"}`}, map[string]any{"payload": `not json`}))
	p.post("no definition", "persistent/"+kvT, restBody(map[string]any{"valueSchema": `{"type":"INT32"}`},
		map[string]any{"payload": "1"}))
	p.post("key without definition", "persistent/"+kvT, restBody(map[string]any{"keySchema": `{"type":"INT32"}`,
		"valueSchema": schemaJSON("STRING", "")}, map[string]any{"payload": "v", "key": "42"}))
	p.post("value without definition", "persistent/"+kvT, restBody(map[string]any{"keySchema": schemaJSON("INT32", ""),
		"valueSchema": `{"type":"STRING"}`}, map[string]any{"payload": "v", "key": "42"}))
	p.post("key value", "persistent/"+kvT, restBody(map[string]any{"keySchema": schemaJSON("INT32", ""),
		"valueSchema": schemaJSON("STRING", "")}, map[string]any{"payload": "v", "key": "42"}))

	client := tg.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A non-persistent topic exists while a consumer holds it.
	np := "non-persistent://" + name("rest-np")
	npc, err := client.Subscribe(pulsar.ConsumerOptions{Topic: np, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	awaitPermits(t, admin, np, "s")
	p.post("non-persistent", "non-persistent/"+name("rest-np"),
		restBody(nil, map[string]any{"payload": "n0"}))
	if m, err := npc.Receive(ctx); err != nil {
		t.Fatal(err)
	} else {
		p.notes = append(p.notes, fmt.Sprintf("non-persistent read %q", m.Payload()))
	}
	npc.Close()

	// What the brokers stored: the metadata examine shows, the schemas.
	for pos := 1; pos <= 3; pos++ {
		p.notes = append(p.notes, fmt.Sprintf("examine %d: %s", pos, restExamine(t, admin, plain, pos)))
	}
	for _, tp := range []string{plain, avroT, kvT} {
		p.notes = append(p.notes, strings.ReplaceAll(restStoredSchema(t, admin, tp), run, ""))
	}
	read := func(topic string, n int, schema pulsar.Schema, decode func(pulsar.Message) string) {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://" + topic, SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var lines []string
		for range n {
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("%s: %v\n%s", topic, err, strings.Join(append(p.notes, lines...), "\n"))
			}
			c.Ack(m)
			props := make([]string, 0, len(m.Properties()))
			for k, v := range m.Properties() {
				props = append(props, k+"="+v)
			}
			sort.Strings(props)
			lines = append(lines, fmt.Sprintf("read %s: %s key %q props %v event %d producer %s", strings.ReplaceAll(topic, run, ""),
				decode(m), m.Key(), props, m.EventTime().UnixMilli(), m.ProducerName()))
		}
		sort.Strings(lines) // a partitioned topic's partitions interleave
		p.notes = append(p.notes, lines...)
	}
	raw := func(m pulsar.Message) string { return fmt.Sprintf("%q", m.Payload()) }
	read(plain, 3, nil, raw)
	read(parted, 7, nil, raw) // the "partition of a partition" message is stored too
	read(avroT, 4, pulsar.NewAvroSchema(restAvroV2, nil), func(m pulsar.Message) string {
		var r restRecord
		if err := m.GetSchemaValue(&r); err != nil {
			return fmt.Sprintf("undecodable %q", m.Payload())
		}
		b := "nil"
		if r.B != nil {
			b = *r.B
		}
		return fmt.Sprintf("a=%d s=%s b=%s", r.A, r.S, b)
	})
	read(jsonT, 1, nil, raw)
	read(kvT, 1, nil, raw)
	return p.notes
}

// TestDifferentialRESTProducer runs restProducerStory on pulsarsim and on
// the Pulsar at PULSAR_URL (admin API at PULSAR_ADMIN_URL), and compares
// the notes.
func TestDifferentialRESTProducer(t *testing.T) {
	sameStoryOnBoth(t, restProducerStory)
}

// restExamine returns the X-Pulsar-* headers of the topic's entry at pos
// from its start, but its publish time, with the ledger id masked.
func restExamine(t *testing.T, admin, topic string, pos int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/admin/v2/persistent/%s/examinemessage?initialPosition=earliest&messagePosition=%d",
		admin, topic, pos))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var hs []string
	for k := range resp.Header {
		if strings.HasPrefix(k, "X-Pulsar-") && k != "X-Pulsar-Publish-Time" {
			hs = append(hs, k+"="+restLedger.ReplaceAllString(resp.Header.Get(k), "L:"))
		}
	}
	sort.Strings(hs)
	return fmt.Sprintf("%d %q %s", resp.StatusCode, body, strings.Join(hs, " "))
}

// restStoredSchema returns the topic's latest schema as the admin API
// serves it, but its registration time, properties sorted.
func restStoredSchema(t *testing.T, admin, topic string) string {
	t.Helper()
	resp, err := http.Get(admin + "/admin/v2/schemas/" + strings.TrimPrefix(topic, "persistent://") + "/schema")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sc struct {
		Version    int64             `json:"version"`
		Type       string            `json:"type"`
		Data       string            `json:"data"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sc); err != nil {
		t.Fatal(err)
	}
	var props []string
	for k, v := range sc.Properties {
		props = append(props, k+"="+v)
	}
	sort.Strings(props)
	if sc.Type == "KEY_VALUE" {
		sc.Data = "" // its rendering is another matter (issue 26's sixth answer)
	}
	return fmt.Sprintf("schema of %s: %d v%d %s %q %v", topic, resp.StatusCode, sc.Version, sc.Type, sc.Data, props)
}
