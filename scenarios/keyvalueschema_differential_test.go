package scenarios_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The admin API's answer for a KEY_VALUE schema: its data is a JSON object
// of the key's and the value's definitions, not the binary encoding the
// producer registered.

// keyValueSchema is a KEY_VALUE schema as a client registers it: the key's
// and the value's definitions, each after its length, their types in the
// properties.
func keyValueSchema(keyType, keyDef, valueType, valueDef string) *pb.Schema {
	var data []byte
	for _, def := range []string{keyDef, valueDef} {
		data = binary.BigEndian.AppendUint32(data, uint32(len(def)))
		data = append(data, def...)
	}
	props := map[string]string{"key.schema.type": keyType, "key.schema.name": "", "key.schema.properties": "{}",
		"value.schema.type": valueType, "value.schema.name": "", "value.schema.properties": "{}",
		"kv.encoding.type": "SEPARATED"}
	sc := &pb.Schema{Name: proto.String("kv"), Type: pb.Schema_KeyValue.Enum(), SchemaData: data}
	for _, k := range []string{"key.schema.name", "key.schema.properties", "key.schema.type", "kv.encoding.type",
		"value.schema.name", "value.schema.properties", "value.schema.type"} {
		sc.Properties = append(sc.Properties, &pb.KeyValue{Key: proto.String(k), Value: proto.String(props[k])})
	}
	return sc
}

// schemaNote describes a schema answer with its timestamp left out; its
// data is shown as the JSON it holds (in its own order), when it is JSON.
func schemaNote(status int, body string) string {
	var doc map[string]any
	if json.Unmarshal([]byte(body), &doc) != nil {
		return fmt.Sprintf("%d %s", status, body)
	}
	mask := func(m map[string]any) {
		delete(m, "timestamp")
		if d, ok := m["data"].(string); ok {
			if json.Valid([]byte(d)) {
				m["data"] = json.RawMessage(d)
			} else {
				m["data"] = fmt.Sprintf("(not JSON) %q", d)
			}
		}
	}
	mask(doc)
	if list, ok := doc["getSchemaResponses"].([]any); ok {
		for _, s := range list {
			if m, ok := s.(map[string]any); ok {
				mask(m)
			}
		}
	}
	out, _ := json.Marshal(doc)
	return fmt.Sprintf("%d %s", status, out)
}

// keyValueSchemaAnswers registers KEY_VALUE schemas with producers (and
// one through the admin API) and reads them back through the admin API.
func keyValueSchemaAnswers(t *testing.T, tg *scenarios.Target, admin string) []string {
	c := dialWire(t, tg.URL)
	var out []string
	record := `{"type":"record","name":"K","namespace":"test","fields":[{"name":"id","type":"int"}]}`
	for i, sc := range []*pb.Schema{
		keyValueSchema("AVRO", record, "STRING", ""),
		keyValueSchema("INT32", "", "JSON", strings.Replace(record, `"K"`, `"V"`, 1)),
	} {
		topic := tg.Topic(fmt.Sprint("kv-schema-", i))
		path := admin + "/admin/v2/schemas/" + strings.TrimPrefix(topic, "persistent://")
		c.lookup(topic)
		id := uint64(i + 1)
		c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
			ProducerId: proto.Uint64(id), RequestId: proto.Uint64(id), Schema: sc}))
		out = append(out, fmt.Sprintf("producer %d: %s", id, producerAnswer(c.read())))
		for _, p := range []string{"/schema", "/schema/0", "/schemas"} {
			status, body := adminCall(t, "GET", path+p, "")
			out = append(out, fmt.Sprintf("topic %d, GET %s: %s", i, p, schemaNote(status, body)))
		}
	}
	// The admin API takes a KEY_VALUE schema in the form it answers.
	path := admin + "/admin/v2/schemas/" + strings.TrimPrefix(tg.Topic("kv-schema-posted"), "persistent://")
	post := `{"type":"KEY_VALUE","schema":"{\"key\":` + strings.ReplaceAll(record, `"`, `\"`) + `,\"value\":\"\"}",` +
		`"properties":{"key.schema.type":"AVRO","value.schema.type":"STRING","kv.encoding.type":"INLINE"}}`
	status, body := adminCall(t, "POST", path+"/schema", post)
	out = append(out, fmt.Sprintf("POST schema: %d %s", status, body))
	status, body = adminCall(t, "GET", path+"/schema", "")
	out = append(out, "GET the posted schema: "+schemaNote(status, body))
	return out
}

// TestDifferentialKeyValueSchemaAnswer compares the admin API's answers for
// KEY_VALUE schemas.
func TestDifferentialKeyValueSchemaAnswer(t *testing.T) {
	sameStoryOnBoth(t, keyValueSchemaAnswers)
}
