package scenarios_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Schema evolution as clients meet it: sequences of schemas registered
// under each compatibility strategy, through the admin API (status and
// version of each step) and through pulsar-client-go producers (the error
// each refused producer reports). On pulsarsim each step's acceptance is
// checked against what Pulsar decides (ok below, established against Pulsar
// 4.0.8); with PULSAR_URL and PULSAR_ADMIN_URL the same sequences run on
// both brokers and every answer is compared.

// rec is an Avro record named name with the given fields.
func rec(name, fields string) string {
	return `{"type":"record","name":"` + name + `","fields":[` + fields + `]}`
}

// step registers one schema (typ "DELETE" deletes the topic's schema); ok
// is whether Pulsar takes it.
type step struct {
	typ, def string
	ok       bool
}

type evolution struct {
	name     string
	strategy string // the topic's strategy; "" leaves the default (FULL)
	steps    []step
	client   bool // also run the AVRO steps with producers
	// consumers subscribe after the producers, each with its schema.
	consumers []step
}

func avro(def string, ok bool) step { return step{"AVRO", def, ok} }

var (
	fA       = `{"name":"a","type":"string"}`
	fAInt    = `{"name":"a","type":"int"}`
	fBDef    = `{"name":"b","type":"int","default":0}`
	fB       = `{"name":"b","type":"int"}`
	fC       = `{"name":"c","type":"int"}`
	enumAB   = `{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}`
	enumABC  = `{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}}`
	enumF    = `{"name":"e","type":{"type":"enum","name":"F","symbols":["A","B","C"]}}`
	enumNS   = `{"name":"e","type":{"type":"enum","name":"other.E","symbols":["A","B","C"]}}`
	recursed = `{"name":"v","type":"int"},{"name":"next","type":["null","Node"],"default":null}`
)

var evolutions = []evolution{
	{name: "full-fields", client: true, steps: []step{
		avro(rec("R", fA), true), avro(rec("R", fA+","+fBDef), true), avro(rec("R", fA+","+fBDef+","+fC), false),
		avro(rec("R", fA), true), avro(rec("R", fA+","+fB), true), avro(rec("R", fB), false)},
		consumers: []step{avro(rec("R", fA), true), avro(rec("R", fA+","+fC), false),
			avro(rec("R", fA+","+fB+`,{"name":"c","type":"int","default":1}`), true), {"STRING", "", false}}},
	{name: "backward", strategy: "BACKWARD", client: true, steps: []step{
		avro(rec("R", fA), true), avro(rec("R", fA+","+fB), false), avro(rec("R", ""), true), avro(rec("R", fB), false)}},
	{name: "forward", strategy: "FORWARD", client: true, steps: []step{
		avro(rec("R", fA), true), avro(rec("R", fA+","+fB), true), avro(rec("R", fB), false)}},
	{name: "promotion-backward", strategy: "BACKWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"a","type":"long"}`), true),
		avro(rec("R", fAInt+","+fBDef), false), avro(rec("R", `{"name":"a","type":"double"}`), true),
		avro(rec("R", `{"name":"a","type":"float"}`), false)}},
	{name: "promotion-forward", strategy: "FORWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"a","type":"long"}`), false),
		avro(rec("R", `{"name":"a","type":"bytes"}`), false)}},
	{name: "string-bytes", strategy: "FULL", steps: []step{
		avro(rec("R", fA), true), avro(rec("R", `{"name":"a","type":"bytes"}`), true)}},
	{name: "union-backward", strategy: "BACKWARD", client: true, steps: []step{
		avro(rec("R", `{"name":"a","type":["null","string"],"default":null}`), true),
		avro(rec("R", `{"name":"a","type":["null","string","int"],"default":null}`), true),
		avro(rec("R", `{"name":"a","type":"string"}`), false)}},
	{name: "union-forward", strategy: "FORWARD", client: true, steps: []step{
		avro(rec("R", `{"name":"a","type":["null","string"],"default":null}`), true),
		avro(rec("R", `{"name":"a","type":["null","string","int"],"default":null}`), false)}},
	{name: "enums", client: true, steps: []step{
		avro(rec("R", enumAB), true), avro(rec("R", enumABC), true), avro(rec("R", enumAB), true),
		avro(rec("R", enumF), false), avro(rec("R", enumNS), true)}},
	{name: "record-renamed", steps: []step{
		avro(rec("R", fA), true), avro(rec("S", fA), true), avro(rec("other.S", fA), true)}},
	{name: "fixed", steps: []step{
		avro(rec("R", `{"name":"f","type":{"type":"fixed","name":"F","size":4}}`), true),
		avro(rec("R", `{"name":"f","type":{"type":"fixed","name":"F","size":8}}`), false),
		avro(rec("R", `{"name":"f","type":{"type":"fixed","name":"G","size":4}}`), false)}},
	{name: "aliases-backward", strategy: "BACKWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"b","type":"int","aliases":["a"]}`), true),
		avro(rec("R", `{"name":"c","type":"int"}`), false)}},
	{name: "aliases-forward", strategy: "FORWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"b","type":"int","aliases":["a"]}`), false)}},
	{name: "backward-latest", strategy: "BACKWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", fAInt+","+fBDef), true), avro(rec("R", fAInt+","+fB), true)}},
	{name: "backward-transitive", strategy: "BACKWARD_TRANSITIVE", client: true, steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", fAInt+","+fBDef), true), avro(rec("R", fAInt+","+fB), false)},
		consumers: []step{avro(rec("R", fAInt+","+fB), false), avro(rec("R", fAInt+","+fBDef), true)}},
	{name: "forward-latest", strategy: "FORWARD", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"a","type":"int","default":0}`), true), avro(rec("R", ""), true)}},
	{name: "forward-transitive", strategy: "FORWARD_TRANSITIVE", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"a","type":"int","default":0}`), true), avro(rec("R", ""), false)}},
	{name: "full-transitive", strategy: "FULL_TRANSITIVE", steps: []step{
		avro(rec("R", fAInt), true), avro(rec("R", `{"name":"a","type":"int","default":0}`), true), avro(rec("R", ""), false)}},
	{name: "always-incompatible", strategy: "ALWAYS_INCOMPATIBLE", client: true, steps: []step{
		avro(rec("R", fA), true), avro(rec("R", fA), true), avro(rec("R", fA+","+fBDef), false)}},
	{name: "always-compatible", strategy: "ALWAYS_COMPATIBLE", steps: []step{
		avro(rec("R", fA), true), {"STRING", "", true}, {"INT32", "", true}, avro(rec("R", fB), true)}},
	{name: "type-change", steps: []step{
		avro(rec("R", fA), true), {"JSON", rec("R", fA), false}, {"STRING", "", false}, {"PROTOBUF", rec("R", fA), false}}},
	{name: "same-schema-reformatted", steps: []step{
		avro(rec("R", fA), true), avro(`{ "fields" : [ {"type":"string", "name":"a"} ], "name":"R", "type":"record" }`, true),
		avro(`{"type":"record","name":"R","doc":"documented","fields":[{"name":"a","type":"string","doc":"x"}]}`, true)}},
	{name: "recursive", steps: []step{
		avro(rec("Node", recursed), true), avro(rec("Node", recursed+","+fBDef), true),
		avro(rec("Node", `{"name":"w","type":"int"},`+recursed), false)}},
	{name: "nested-record", steps: []step{
		avro(rec("R", `{"name":"n","type":`+rec("N", fAInt)+`}`), true),
		avro(rec("R", `{"name":"n","type":`+rec("N", fAInt+","+fB)+`}`), false),
		avro(rec("R", `{"name":"n","type":`+rec("N", fAInt+","+fBDef)+`}`), true)}},
	{name: "containers", strategy: "BACKWARD", steps: []step{
		avro(rec("R", `{"name":"l","type":{"type":"array","items":"int"}},{"name":"m","type":{"type":"map","values":"float"}}`), true),
		avro(rec("R", `{"name":"l","type":{"type":"array","items":"long"}},{"name":"m","type":{"type":"map","values":"double"}}`), true),
		avro(rec("R", `{"name":"l","type":{"type":"array","items":"string"}},{"name":"m","type":{"type":"map","values":"double"}}`), false)}},
	{name: "malformed", steps: []step{
		avro(`not json`, false), avro(`["null","string"]`, false), avro(`{"type":"record","name":"R-1","fields":[]}`, false),
		{"STRING", "data", false}, {"INT32", "x", false}, {"NOPE", "", false}, {"AUTO_CONSUME", "", false},
		avro(`"string"`, true), avro(`"int"`, false)}},
	{name: "json", client: false, steps: []step{
		{"JSON", rec("R", fA), true}, {"JSON", rec("R", fA+","+fB), false}, {"JSON", rec("R", fA+","+fBDef), true}}},
	{name: "protobuf-avro-definitions", steps: []step{
		{"PROTOBUF", rec("R", fA), true}, {"PROTOBUF", rec("R", fB), true}}},
	{name: "protobuf-always-incompatible", strategy: "ALWAYS_INCOMPATIBLE", steps: []step{
		{"PROTOBUF", rec("R", fA), true}, {"PROTOBUF", rec("R", fB), false}}},
	{name: "default-of-another-type", strategy: "BACKWARD", steps: []step{
		avro(rec("R", ""), true), avro(rec("R", `{"name":"a","type":"int","default":"x"}`), false),
		avro(rec("R", `{"name":"a","type":["null","int"],"default":null}`), true)}},
	{name: "deleted", steps: []step{
		{"STRING", "", true}, {"DELETE", "", true}, {"INT32", "", true}, {"STRING", "", false}}},
	{name: "primitives", steps: []step{
		{"STRING", "", true}, {"STRING", "null", true}, {"INT64", "", false}, {"BYTES", "", false}}},
}

// adminCall sends one admin request and returns "status body".
func adminCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

// setStrategy creates the topic and sets its strategy, then waits until the
// broker applies it (a real broker applies topic policies asynchronously).
func setStrategy(t *testing.T, admin, topic, strategy string) {
	t.Helper()
	path := admin + "/admin/v2/persistent/public/default/" + topic
	if st, body := adminCall(t, "PUT", path, ""); st != 204 {
		t.Fatalf("create %s: %d %s", topic, st, body)
	}
	if strategy == "" {
		return
	}
	if st, body := adminCall(t, "PUT", path+"/schemaCompatibilityStrategy", `"`+strategy+`"`); st != 204 {
		t.Fatalf("strategy: %d %s", st, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, body := adminCall(t, "GET", path+"/schemaCompatibilityStrategy?applied=true", ""); body == `"`+strategy+`"` {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker does not apply %s to %s", strategy, topic)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evolveByAdmin registers each step through the admin API and describes
// the answers: the status, and the version for a success. Pulsar answers
// some refusals with an HTML page, so only their status is compared.
func evolveByAdmin(t *testing.T, admin, topic string, ev evolution) []string {
	setStrategy(t, admin, topic, ev.strategy)
	var out []string
	path := admin + "/admin/v2/schemas/public/default/" + topic + "/schema"
	for _, s := range ev.steps {
		var st int
		var body string
		if s.typ == "DELETE" {
			st, body = adminCall(t, "DELETE", path, "")
		} else {
			payload, _ := json.Marshal(map[string]any{"type": s.typ, "schema": s.def, "properties": map[string]string{}})
			st, body = adminCall(t, "POST", path, string(payload))
		}
		if st != 200 {
			body = ""
		}
		out = append(out, fmt.Sprintf("%s %d %s", s.typ, st, body))
	}
	return out
}

// evolveByProducers creates a producer with each AVRO step's schema, then
// subscribes each consumer, and describes the outcomes: "ok" or the error
// pulsar-client-go reports.
func evolveByProducers(t *testing.T, tg *scenarios.Target, admin, topic string, ev evolution) []string {
	setStrategy(t, admin, topic, ev.strategy)
	client := tg.Client()
	full := "persistent://public/default/" + topic
	var out []string
	for _, s := range ev.steps {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: full, Schema: pulsar.NewAvroSchema(s.def, nil)})
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		p.Close()
		out = append(out, "ok")
	}
	for i, s := range ev.consumers {
		var schema pulsar.Schema = pulsar.NewStringSchema(nil)
		if s.typ == "AVRO" {
			schema = pulsar.NewAvroSchema(s.def, nil)
		}
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: full, SubscriptionName: fmt.Sprint("s", i), Schema: schema})
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		c.Close()
		out = append(out, "ok")
	}
	return out
}

// accepted reports whether an admin answer is a success.
func accepted(answer string) bool {
	f := strings.Fields(answer)
	return len(f) > 1 && f[1] == "200"
}

// TestSchemaEvolutionIsDecidedAsPulsarDecidesIt runs every evolution on
// pulsarsim and checks each step's acceptance.
func TestSchemaEvolutionIsDecidedAsPulsarDecidesIt(t *testing.T) {
	tg := scenarios.SimTarget(t)
	admin := tg.Sim.AdminURL()
	refused := 0
	for _, ev := range evolutions {
		answers := evolveByAdmin(t, admin, "evolve-"+ev.name, ev)
		for i, s := range ev.steps {
			if accepted(answers[i]) != s.ok {
				t.Errorf("%s step %d (%s %.60s): %s, want accepted=%v", ev.name, i, s.typ, s.def, answers[i], s.ok)
			}
			if !s.ok {
				refused++
			}
		}
		if !ev.client {
			continue
		}
		all := append(append([]step{}, ev.steps...), ev.consumers...)
		for i, outcome := range evolveByProducers(t, tg, admin, "evolve-client-"+ev.name, ev) {
			if (outcome == "ok") != all[i].ok || (outcome != "ok" && !strings.Contains(outcome, "IncompatibleSchema")) {
				t.Errorf("%s producer or consumer %d: %s, want accepted=%v", ev.name, i, outcome, all[i].ok)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no step was meant to be refused: the corpus checks nothing")
	}
}

// TestDifferentialSchemaEvolution runs every evolution on pulsarsim and on
// the Pulsar of PULSAR_URL and PULSAR_ADMIN_URL, and compares the admin
// API's answers and the producers' errors, message included.
func TestDifferentialSchemaEvolution(t *testing.T) {
	url := oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, realAdmin)
	suffix := fmt.Sprintf("-%d", time.Now().UnixNano())
	for _, ev := range evolutions {
		t.Run(ev.name, func(t *testing.T) {
			got := evolveByAdmin(t, sim.Sim.AdminURL(), "evolve-"+ev.name, ev)
			want := evolveByAdmin(t, realAdmin, "evolve-"+ev.name+suffix, ev)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("admin answers differ (-real +pulsarsim):\n%s", diff)
			}
			if !ev.client {
				return
			}
			got = evolveByProducers(t, sim, sim.Sim.AdminURL(), "evolve-client-"+ev.name, ev)
			want = evolveByProducers(t, real, realAdmin, "evolve-client-"+ev.name+suffix, ev)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("producers' outcomes differ (-real +pulsarsim):\n%s", diff)
			}
		})
	}
}

// wireSchemaAnswers sends PRODUCER and GET_OR_CREATE_SCHEMA commands with
// schemas no client library sends (malformed definitions, an unknown type)
// and describes the broker's answers.
func wireSchemaAnswers(t *testing.T, tg *scenarios.Target) []string {
	var out []string
	schema := func(typ pb.Schema_Type, data string) *pb.Schema {
		return &pb.Schema{Name: proto.String("s"), Type: typ.Enum(), SchemaData: []byte(data)}
	}
	cases := []*pb.Schema{
		schema(pb.Schema_Avro, "not json"),
		schema(pb.Schema_Avro, `{"type":"record","name":"R","fields":[{"name":"a","type":"strin"}]}`),
		schema(pb.Schema_Avro, `{"type":"record","name":"R-x","fields":[]}`),
		schema(pb.Schema_Json, `garbage`),
		schema(pb.Schema_String, `abc`),
		schema(pb.Schema_Int32, `abc`),
		schema(pb.Schema_ProtobufNative, `{}`),
		schema(pb.Schema_None, `xyz`),
		schema(pb.Schema_Type(99), ``),
	}
	for i, s := range cases {
		c := dialWire(t, tg.URL)
		topic := tg.Topic(fmt.Sprintf("wire-schema-%d", i))
		c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
		c.read()
		c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
			ProducerId: proto.Uint64(1), RequestId: proto.Uint64(2), Schema: s}))
		answer := c.readOrClosed()
		out = append(out, fmt.Sprintf("%v %q: %s", s.GetType(), s.GetSchemaData(), answer))
	}
	// GET_OR_CREATE_SCHEMA needs the topic to exist.
	c := dialWire(t, tg.URL)
	c.send(protocol.Base(pb.BaseCommand_GET_OR_CREATE_SCHEMA, &pb.CommandGetOrCreateSchema{
		Topic: proto.String(tg.Topic("wire-schema-missing")), RequestId: proto.Uint64(3), Schema: schema(pb.Schema_String, "")}))
	r := c.read().GetOrCreateSchemaResponse
	out = append(out, fmt.Sprintf("GET_OR_CREATE_SCHEMA of a missing topic: %v %q", r.GetErrorCode(),
		strings.ReplaceAll(r.GetErrorMessage(), tg.Topic("wire-schema-missing"), "TOPIC")))
	return out
}

// TestDifferentialSchemaRefusalsOnTheWire compares the answers to malformed
// schemas on the wire.
func TestDifferentialSchemaRefusalsOnTheWire(t *testing.T) {
	url := oracleURL(t)
	got := wireSchemaAnswers(t, scenarios.SimTarget(t))
	want := wireSchemaAnswers(t, scenarios.RemoteTarget(t, url, ""))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}

// readOrClosed describes the next answer, or says the broker closed the
// connection.
func (c *wireClient) readOrClosed() string {
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			return "connection closed"
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			c.t.Fatal(err)
		}
		if f.Command.GetType() == pb.BaseCommand_PING {
			c.send(protocol.PongCommand())
			continue
		}
		return describe(f.Command)
	}
}
