package broker

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Admin HTTP handlers for schemas and lookups.

// schemaTypeNames are Pulsar's REST names of the schema types, by wire number.
var schemaTypeNames = map[pb.Schema_Type]string{
	pb.Schema_None: "NONE", pb.Schema_String: "STRING", pb.Schema_Json: "JSON",
	pb.Schema_Protobuf: "PROTOBUF", pb.Schema_Avro: "AVRO", pb.Schema_Bool: "BOOLEAN",
	pb.Schema_Int8: "INT8", pb.Schema_Int16: "INT16", pb.Schema_Int32: "INT32", pb.Schema_Int64: "INT64",
	pb.Schema_Float: "FLOAT", pb.Schema_Double: "DOUBLE", pb.Schema_Date: "DATE", pb.Schema_Time: "TIME",
	pb.Schema_Timestamp: "TIMESTAMP", pb.Schema_KeyValue: "KEY_VALUE", pb.Schema_Instant: "INSTANT",
	pb.Schema_LocalDate: "LOCAL_DATE", pb.Schema_LocalTime: "LOCAL_TIME",
	pb.Schema_LocalDateTime: "LOCAL_DATE_TIME", pb.Schema_ProtobufNative: "PROTOBUF_NATIVE",
}

// schemaJSON is Pulsar's GetSchemaResponse.
type schemaJSON struct {
	Version    int64             `json:"version"`
	Type       string            `json:"type"`
	Timestamp  int64             `json:"timestamp"`
	Data       string            `json:"data"`
	Properties map[string]string `json:"properties"`
}

func (a *adminAPI) getSchema(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var version []byte
	if v := r.PathValue("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			reply(w, nil, errStatus(http.StatusNotFound, "Schema not found"))
			return
		}
		version = encodeSchemaVersion(int(n))
	}
	s, v := a.b.schemaAt(tn, version)
	if s == nil {
		reply(w, nil, errStatus(http.StatusNotFound, "Schema not found"))
		return
	}
	props := map[string]string{}
	for _, kv := range s.GetProperties() {
		props[kv.GetKey()] = kv.GetValue()
	}
	reply(w, schemaJSON{
		Version: int64(decodeSchemaVersion(v)), Type: schemaTypeNames[s.GetType()],
		Data: string(s.GetSchemaData()), Properties: props,
	}, nil)
}

// postSchema registers a schema given as Pulsar's PostSchemaPayload and
// answers its version.
func (a *adminAPI) postSchema(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var body struct {
		Type       string            `json:"type"`
		Schema     string            `json:"schema"`
		Properties map[string]string `json:"properties"`
	}
	if err := decodeJSON(r, &body); err != nil {
		reply(w, nil, errStatus(http.StatusBadRequest, err.Error()))
		return
	}
	typ, ok := pb.Schema_None, false
	for t, name := range schemaTypeNames {
		if strings.EqualFold(name, body.Type) {
			typ, ok = t, true
		}
	}
	if !ok {
		reply(w, nil, errStatus(http.StatusUnprocessableEntity, "Invalid schema type "+body.Type))
		return
	}
	s := &pb.Schema{Name: proto.String(tn.Local), Type: typ.Enum(), SchemaData: []byte(body.Schema)}
	for k, v := range body.Properties {
		s.Properties = append(s.Properties, &pb.KeyValue{Key: proto.String(k), Value: proto.String(v)})
	}
	v := a.b.schemaVersion(tn, s)
	reply(w, map[string]any{"version": map[string]int64{"version": int64(decodeSchemaVersion(v))}}, nil)
}

func (a *adminAPI) deleteSchema(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	a.b.mu.Lock()
	delete(a.b.schemas, tn.Base().String())
	a.b.mu.Unlock()
	reply(w, map[string]any{"version": map[string]int64{"version": 0}}, nil)
}

// lookup answers an HTTP lookup: this broker serves every topic.
func (a *adminAPI) lookup(w http.ResponseWriter, r *http.Request) {
	if _, err := topicFromPath(r); err != nil {
		reply(w, nil, err)
		return
	}
	web := "http://" + r.Host
	reply(w, map[string]string{
		"brokerUrl": a.b.URL(), "httpUrl": web, "nativeUrl": a.b.URL(),
		"brokerUrlTls": "", "httpUrlTls": "",
	}, nil)
}

// bundle answers the namespace bundle of a topic: a standalone namespace has
// one bundle spanning the whole hash range.
func (a *adminAPI) bundle(w http.ResponseWriter, r *http.Request) {
	if _, err := topicFromPath(r); err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode("0x00000000_0xffffffff")
}
