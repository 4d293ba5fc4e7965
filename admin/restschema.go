package admin

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/internal/avro"
)

// The REST producer's schemas: the key and value schemas of a request (JSON
// of Pulsar's SchemaInfo, the definition base64 in "schema"), registered as
// one schema (a KEY_VALUE one, SEPARATED, when there is a key schema), and
// the encoding of a message's key and payload, given as text, with them,
// as Pulsar's REST resource converts the text for each schema type. Text a
// type cannot take becomes an empty payload, as in Pulsar.

// restSchemaInfo is a schema as the REST producer uses it.
type restSchemaInfo struct {
	name  string // the request's name, else the type's
	typ   string
	data  []byte // nil when the request gave none
	props map[string]string
	// kv holds the key and value schemas of a KEY_VALUE schema.
	kv []restSchemaInfo
}

// restSchemaJSON is Pulsar's SchemaInfo as JSON.
type restSchemaJSON struct {
	Name       *string           `json:"name"`
	Schema     *string           `json:"schema"`
	Type       *string           `json:"type"`
	Properties map[string]string `json:"properties"`
}

// restSchemaTypes are the names of Pulsar's SchemaType enum.
var restSchemaTypes = map[string]bool{"NONE": true, "STRING": true, "JSON": true, "PROTOBUF": true, "AVRO": true,
	"BOOLEAN": true, "INT8": true, "INT16": true, "INT32": true, "INT64": true, "FLOAT": true, "DOUBLE": true,
	"DATE": true, "TIME": true, "TIMESTAMP": true, "KEY_VALUE": true, "INSTANT": true, "LOCAL_DATE": true,
	"LOCAL_TIME": true, "LOCAL_DATE_TIME": true, "PROTOBUF_NATIVE": true, "BYTES": true, "AUTO": true,
	"AUTO_CONSUME": true, "AUTO_PUBLISH": true, "EXTERNAL": true}

// parseRESTSchema reads a request's schema; false when Pulsar's JSON reader
// would fail on it.
func parseRESTSchema(text string) (restSchemaInfo, bool) {
	var j restSchemaJSON
	if err := json.Unmarshal([]byte(text), &j); err != nil || j.Type == nil || !restSchemaTypes[*j.Type] {
		return restSchemaInfo{}, false
	}
	s := restSchemaInfo{name: *j.Type, typ: *j.Type, props: j.Properties}
	if j.Name != nil {
		s.name = *j.Name
	}
	if s.props == nil {
		s.props = map[string]string{}
	}
	if j.Schema != nil {
		data, err := base64.StdEncoding.DecodeString(*j.Schema)
		if err != nil {
			if data, err = base64.RawStdEncoding.DecodeString(*j.Schema); err != nil {
				return restSchemaInfo{}, false
			}
		}
		s.data = data
	}
	return s, true
}

// restStringSchema is the schema of a request without one: UTF-8 strings.
func restStringSchema() restSchemaInfo {
	return restSchemaInfo{name: "String", typ: "STRING", data: []byte{}, props: map[string]string{"__charset": "UTF-8"}}
}

// keyValue combines a key and a value schema into a SEPARATED KEY_VALUE
// schema, as Pulsar's KeyValueSchemaInfo encodes it: both definitions,
// each after its length, and each schema's name, type and properties in
// the properties.
func keyValue(key, value restSchemaInfo) restSchemaInfo {
	var data []byte
	for _, part := range []restSchemaInfo{key, value} {
		data = binary.BigEndian.AppendUint32(data, uint32(len(part.data)))
		data = append(data, part.data...)
	}
	props := map[string]string{"kv.encoding.type": "SEPARATED"}
	for prefix, part := range map[string]restSchemaInfo{"key": key, "value": value} {
		p, _ := json.Marshal(part.props)
		props[prefix+".schema.name"] = part.name
		props[prefix+".schema.type"] = part.typ
		props[prefix+".schema.properties"] = string(p)
	}
	return restSchemaInfo{typ: "KEY_VALUE", data: data, props: props, kv: []restSchemaInfo{key, value}}
}

// splitKeyValue recovers the key and value schemas of a stored KEY_VALUE
// schema.
func splitKeyValue(s broker.Schema) []restSchemaInfo {
	parts := make([]restSchemaInfo, 2)
	b := s.Data
	for i, prefix := range []string{"key", "value"} {
		parts[i] = restSchemaInfo{typ: s.Properties[prefix+".schema.type"], props: map[string]string{}}
		_ = json.Unmarshal([]byte(s.Properties[prefix+".schema.properties"]), &parts[i].props)
		if len(b) >= 4 {
			n := int(int32(binary.BigEndian.Uint32(b)))
			b = b[4:]
			if n >= 0 && n <= len(b) {
				parts[i].data, b = b[:n], b[n:]
			}
		}
	}
	return parts
}

// javaString renders the schema as Pulsar's SchemaData.toString does, for
// its error message.
func (s restSchemaInfo) javaString(registered time.Time) string {
	data := "null"
	if s.data != nil {
		bs := make([]string, len(s.data))
		for i, c := range s.data {
			bs[i] = strconv.Itoa(int(int8(c)))
		}
		data = "[" + strings.Join(bs, ", ") + "]"
	}
	props := make([]string, 0, len(s.props))
	for _, k := range sortedKeys(s.props) {
		props = append(props, k+"="+s.props[k])
	}
	return fmt.Sprintf("SchemaData(type=%s, isDeleted=false, timestamp=%d, user=Rest Producer, data=%s, props={%s})",
		s.typ, registered.UnixMilli(), data, strings.Join(props, ", "))
}

// restSchema returns the schema a request's messages are encoded with and
// its version: the stored version the request names, or its schemas (a
// STRING one by default) registered on the topic as a producer's are. On
// failure it returns the reason of Pulsar's 500 answer.
func (s *Server) restSchema(tn broker.TopicName, req *restProducerMessages) (restSchemaInfo, int64, string) {
	base := tn.Base().String()
	if req.SchemaVersion != nil && *req.SchemaVersion != -1 {
		stored, err := s.b.Schema(base, *req.SchemaVersion)
		if err != nil {
			return restSchemaInfo{}, 0, "Fail to publish message:java.lang.NullPointerException: " +
				`Cannot read field "schema" because "schemaAndMetadata" is null`
		}
		info := restSchemaInfo{typ: stored.Type, data: stored.Data, props: stored.Properties}
		if stored.Type == "KEY_VALUE" {
			info.kv = splitKeyValue(stored)
		}
		return info, stored.Version, ""
	}
	info := restStringSchema()
	if req.ValueSchema != "" {
		var ok bool
		if info, ok = parseRESTSchema(req.ValueSchema); !ok {
			return restSchemaInfo{}, 0, "Fail to add or retrieve schema."
		}
	}
	if req.KeySchema != "" {
		key, ok := parseRESTSchema(req.KeySchema)
		if !ok {
			return restSchemaInfo{}, 0, "Fail to add or retrieve schema."
		}
		// Pulsar's key-value encoding needs both definitions.
		for _, part := range []struct {
			name string
			info restSchemaInfo
		}{{"keyBytes", key}, {"valueBytes", info}} {
			if part.info.data == nil {
				return restSchemaInfo{}, 0, fmt.Sprintf(`Fail to publish message: Cannot read the array length because "%s" is null`, part.name)
			}
		}
		info = keyValue(key, info)
	}
	// Pulsar adds the schema through the first partition it knows that
	// exists as a topic.
	for _, p := range s.served.indexes(base) {
		if n, err := s.b.ExistingPartitions(restPartitionName(tn, p)); err != nil || n > 0 || info.data == nil {
			continue // Pulsar's registry refuses a schema without a definition
		}
		v, err := s.b.AddProducerSchema(base, broker.Schema{Type: info.typ, Data: info.data, Properties: info.props})
		if err == nil {
			return info, v, ""
		}
	}
	return restSchemaInfo{}, 0, "Fail to publish message:java.util.concurrent.ExecutionException: " +
		"org.apache.pulsar.broker.service.schema.exceptions.SchemaException: Unable to add schema " +
		info.javaString(s.b.Clock().Now()) + " to topic " + base
}

// encode converts a message's text to its bytes under the schema, as
// Pulsar's REST producer does; text the type cannot take gives no bytes.
func (s restSchemaInfo) encode(text *string) []byte {
	if text == nil {
		return []byte{}
	}
	in := *text
	be := binary.BigEndian
	integer := func(bits int) []byte {
		n, err := strconv.ParseInt(in, 10, bits)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint64(nil, uint64(n))[8-bits/8:]
	}
	switch s.typ {
	case "INT8":
		return integer(8)
	case "INT16":
		return integer(16)
	case "INT32":
		return integer(32)
	case "INT64", "TIME", "TIMESTAMP":
		return integer(64)
	case "STRING":
		return []byte(in)
	case "BYTES":
		return []byte(in)
	case "FLOAT":
		f, err := strconv.ParseFloat(strings.TrimSpace(in), 32)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint32(nil, math.Float32bits(float32(f)))
	case "DOUBLE":
		f, err := strconv.ParseFloat(strings.TrimSpace(in), 64)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint64(nil, math.Float64bits(f))
	case "BOOLEAN":
		if strings.EqualFold(in, "true") {
			return []byte{1}
		}
		return []byte{0}
	case "DATE":
		// DateFormat's medium date of the US locale, at midnight UTC.
		t, err := time.Parse("Jan 2, 2006", in)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint64(nil, uint64(t.UnixMilli()))
	case "INSTANT":
		t, err := time.Parse(time.RFC3339Nano, in)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint32(be.AppendUint64(nil, uint64(t.Unix())), uint32(t.Nanosecond()))
	case "LOCAL_DATE":
		t, err := time.Parse(time.DateOnly, in)
		if err != nil {
			return []byte{}
		}
		return be.AppendUint64(nil, uint64(epochDay(t)))
	case "LOCAL_TIME":
		t, err := time.Parse("15:04:05.999999999", in)
		if err != nil {
			if t, err = time.Parse("15:04", in); err != nil {
				return []byte{}
			}
		}
		return be.AppendUint64(nil, uint64(nanoOfDay(t)))
	case "LOCAL_DATE_TIME":
		t, err := time.Parse("2006-01-02T15:04:05.999999999", in)
		if err != nil {
			if t, err = time.Parse("2006-01-02T15:04", in); err != nil {
				return []byte{}
			}
		}
		return be.AppendUint64(be.AppendUint64(nil, uint64(epochDay(t))), uint64(nanoOfDay(t)))
	case "JSON":
		var out bytes.Buffer
		if !json.Valid([]byte(in)) || json.Compact(&out, []byte(in)) != nil {
			return []byte{}
		}
		return out.Bytes()
	case "AVRO":
		sc, err := avro.Parse(string(s.data))
		if err != nil {
			return []byte{}
		}
		out, err := sc.EncodeJSON([]byte(in))
		if err != nil {
			return []byte{}
		}
		return out
	}
	return []byte{}
}

// epochDay is the day of t counted from 1970-01-01, as Java's toEpochDay.
func epochDay(t time.Time) int64 {
	return int64(math.Floor(float64(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix()) / 86400))
}

// nanoOfDay is the time of day of t in nanoseconds, as Java's toNanoOfDay.
func nanoOfDay(t time.Time) int64 {
	return int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) +
		int64(t.Second())*int64(time.Second) + int64(t.Nanosecond())
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// base64Std encodes b in standard base64.
func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
