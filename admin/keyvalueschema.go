package admin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// KEY_VALUE schemas in the admin API. A client registers a KEY_VALUE schema
// as the key's definition and the value's, each after its length as a
// 4-byte big-endian number, with their types in the properties
// (key.schema.type, value.schema.type). Pulsar's admin API speaks JSON
// instead: a schema's data is the object {"key":K,"value":V}, where K and V
// are the definitions as JSON, or "" for a primitive type (STRING, INT32…).
// A POSTed KEY_VALUE schema comes in that form and is stored in the binary
// one.

// primitiveSchemaTypes are the types whose definitions are empty, written
// "" in a KEY_VALUE schema's JSON.
var primitiveSchemaTypes = map[string]bool{"NONE": true, "STRING": true, "BOOLEAN": true, "INT8": true,
	"INT16": true, "INT32": true, "INT64": true, "FLOAT": true, "DOUBLE": true, "DATE": true, "TIME": true,
	"TIMESTAMP": true, "INSTANT": true, "LOCAL_DATE": true, "LOCAL_TIME": true, "LOCAL_DATE_TIME": true,
	"BYTES": true}

// keyValueDataJSON is a KEY_VALUE schema's data as the admin API answers
// it; the binary data itself when it does not split in two.
func keyValueDataJSON(s broker.Schema) string {
	data := s.Data
	part := func(which string) (json.RawMessage, bool) {
		if len(data) < 4 {
			return nil, false
		}
		n := int(int32(binary.BigEndian.Uint32(data)))
		data = data[4:]
		if n < 0 {
			n = 0
		}
		if n > len(data) {
			return nil, false
		}
		def := data[:n]
		data = data[n:]
		var compact bytes.Buffer
		if primitiveSchemaTypes[s.Properties[which+".schema.type"]] || json.Compact(&compact, def) != nil {
			return json.RawMessage(`""`), true
		}
		return compact.Bytes(), true
	}
	key, ok1 := part("key")
	value, ok2 := part("value")
	if !ok1 || !ok2 {
		return string(s.Data)
	}
	out, _ := json.Marshal(struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
	}{key, value})
	return string(out)
}

// keyValueDataBinary turns a POSTed KEY_VALUE schema's JSON data into the
// binary form: each definition as its JSON text, "" as an empty one.
func keyValueDataBinary(data []byte) ([]byte, error) {
	var doc struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Key == nil || doc.Value == nil {
		return nil, errStatus(http.StatusInternalServerError, errors.Join(errors.New(
			"a KEY_VALUE schema's data must be a JSON object with key and value"), err).Error())
	}
	var out []byte
	for _, def := range []json.RawMessage{doc.Key, doc.Value} {
		var compact bytes.Buffer
		_ = json.Compact(&compact, def)
		b := compact.Bytes()
		if string(b) == `""` {
			b = nil
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out, nil
}
