package broker

import (
	"bytes"
	"encoding/binary"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Schemas are kept per topic, for all partitions of a partitioned topic
// together (as Pulsar keys them by the base name), as a list of versions 0,
// 1, 2…; every new schema is accepted, i.e. compatibility is "always
// compatible". A version is written on the wire as an 8-byte big-endian
// number, as Pulsar's schema storage writes it; no schema is the empty
// version.

func encodeSchemaVersion(v int) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(v))
}

// decodeSchemaVersion reads an 8-byte schema version; -1 for any other.
func decodeSchemaVersion(v []byte) int64 {
	if len(v) != 8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(v))
}

// storedSchema is one version of a topic's schema.
type storedSchema struct {
	s  *pb.Schema
	at time.Time // when it was registered, by the broker clock
}

// schemaVersion returns the version of s on topic tn, registering s as a new
// version when it is new. A nil schema is "no schema": it gets the empty
// version, as Pulsar's tryAddSchema answers when schema validation is not
// enforced (the default). An explicit bytes schema (type None) is stored like
// any other.
func (b *Broker) schemaVersion(tn TopicName, s *pb.Schema) []byte {
	if s == nil {
		return []byte{}
	}
	key := tn.Base().String()
	now := b.cfg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.schemas[key]
	for i, have := range list {
		if have.s.GetType() == s.GetType() && bytes.Equal(have.s.GetSchemaData(), s.GetSchemaData()) {
			return encodeSchemaVersion(i)
		}
	}
	b.schemas[key] = append(list, storedSchema{proto.Clone(s).(*pb.Schema), now})
	return encodeSchemaVersion(len(list))
}

// schemaAt returns the schema of tn with the given version bytes (the newest
// when version is empty) and its version, or nil.
func (b *Broker) schemaAt(tn TopicName, version []byte) (*pb.Schema, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.schemas[tn.Base().String()]
	if len(list) == 0 {
		return nil, nil
	}
	if len(version) == 0 {
		return list[len(list)-1].s, encodeSchemaVersion(len(list) - 1)
	}
	if len(version) != 8 {
		return nil, nil
	}
	v := binary.BigEndian.Uint64(version)
	if v >= uint64(len(list)) {
		return nil, nil
	}
	return list[v].s, version
}

// Schema is one version of a topic's schema, as a plain value.
type Schema struct {
	// Version numbers a topic's schemas 0, 1, 2… in registration order.
	Version int64
	// Type is Pulsar's name of the schema type: "NONE" (bytes), "STRING",
	// "JSON", "AVRO", "PROTOBUF", "PROTOBUF_NATIVE", "KEY_VALUE", "INT32"…
	Type string
	// Data is the schema definition (e.g. an Avro record as JSON text).
	Data       []byte
	Properties map[string]string
	// Registered is when the broker stored this version, by its clock;
	// PutSchema ignores it.
	Registered time.Time
}

// schemaTypeNames are Pulsar's names of the schema types, by wire number.
var schemaTypeNames = map[pb.Schema_Type]string{
	pb.Schema_None: "NONE", pb.Schema_String: "STRING", pb.Schema_Json: "JSON",
	pb.Schema_Protobuf: "PROTOBUF", pb.Schema_Avro: "AVRO", pb.Schema_Bool: "BOOLEAN",
	pb.Schema_Int8: "INT8", pb.Schema_Int16: "INT16", pb.Schema_Int32: "INT32", pb.Schema_Int64: "INT64",
	pb.Schema_Float: "FLOAT", pb.Schema_Double: "DOUBLE", pb.Schema_Date: "DATE", pb.Schema_Time: "TIME",
	pb.Schema_Timestamp: "TIMESTAMP", pb.Schema_KeyValue: "KEY_VALUE", pb.Schema_Instant: "INSTANT",
	pb.Schema_LocalDate: "LOCAL_DATE", pb.Schema_LocalTime: "LOCAL_TIME",
	pb.Schema_LocalDateTime: "LOCAL_DATE_TIME", pb.Schema_ProtobufNative: "PROTOBUF_NATIVE",
}

// schemaValue turns a stored version into a Schema.
func schemaValue(v int, st storedSchema) Schema {
	out := Schema{Version: int64(v), Type: schemaTypeNames[st.s.GetType()],
		Data: bytes.Clone(st.s.GetSchemaData()), Properties: map[string]string{}, Registered: st.at}
	for _, kv := range st.s.GetProperties() {
		out.Properties[kv.GetKey()] = kv.GetValue()
	}
	return out
}

// Schema returns version v of a topic's schema, or its newest version when v
// is negative. It fails with ErrSchemaNotFound when there is none.
func (b *Broker) Schema(topic string, v int64) (Schema, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Schema{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.schemas[tn.Base().String()]
	if v < 0 {
		v = int64(len(list)) - 1
	}
	if v < 0 || v >= int64(len(list)) {
		return Schema{}, ErrSchemaNotFound
	}
	return schemaValue(int(v), list[v]), nil
}

// Schemas returns every version of a topic's schema, oldest first (none for
// a topic without a schema).
func (b *Broker) Schemas(topic string) ([]Schema, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []Schema{}
	for i, st := range b.schemas[tn.Base().String()] {
		out = append(out, schemaValue(i, st))
	}
	return out, nil
}

// PutSchema registers s as a topic's schema, as a producer's schema would
// be, and returns its version: the version of an identical schema (same type
// and data) when there is one, else a new one. Every schema is compatible.
// An unknown type fails with ErrInvalidSchema.
func (b *Broker) PutSchema(topic string, s Schema) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	typ, ok := pb.Schema_None, false
	for t, name := range schemaTypeNames {
		if name == s.Type {
			typ, ok = t, true
		}
	}
	if !ok {
		return 0, errorf(ErrInvalidSchema, "Invalid schema type %s", s.Type)
	}
	ps := &pb.Schema{Name: proto.String(tn.Local), Type: typ.Enum(), SchemaData: bytes.Clone(s.Data)}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps.Properties = append(ps.Properties, &pb.KeyValue{Key: proto.String(k), Value: proto.String(s.Properties[k])})
	}
	return decodeSchemaVersion(b.schemaVersion(tn, ps)), nil
}

// DeleteSchema removes every version of a topic's schema.
func (b *Broker) DeleteSchema(topic string) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.schemas, tn.Base().String())
	b.mu.Unlock()
	return nil
}

// handleGetSchema answers GET_SCHEMA; errors travel inside the response, as
// in Pulsar.
func (c *conn) handleGetSchema(g *pb.CommandGetSchema) {
	resp := &pb.CommandGetSchemaResponse{RequestId: proto.Uint64(g.GetRequestId())}
	tn, err := ParseTopicName(g.GetTopic())
	var s *pb.Schema
	var v []byte
	if err == nil {
		s, v = c.b.schemaAt(tn, g.GetSchemaVersion())
	}
	switch {
	case err != nil:
		resp.ErrorCode = pb.ServerError_InvalidTopicName.Enum()
		resp.ErrorMessage = proto.String(err.Error())
	case s == nil:
		resp.ErrorCode = pb.ServerError_TopicNotFound.Enum()
		resp.ErrorMessage = proto.String("Topic not found or no-schema")
	default:
		resp.Schema = s
		resp.SchemaVersion = v
	}
	c.send(protocol.Base(pb.BaseCommand_GET_SCHEMA_RESPONSE, resp))
}

// handleGetOrCreateSchema answers GET_OR_CREATE_SCHEMA, registering the schema
// as a new version when the topic does not have it yet.
func (c *conn) handleGetOrCreateSchema(g *pb.CommandGetOrCreateSchema) {
	resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: proto.Uint64(g.GetRequestId())}
	if tn, err := ParseTopicName(g.GetTopic()); err != nil {
		resp.ErrorCode = pb.ServerError_InvalidTopicName.Enum()
		resp.ErrorMessage = proto.String(err.Error())
	} else {
		resp.SchemaVersion = c.b.schemaVersion(tn, g.GetSchema())
	}
	c.send(protocol.Base(pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, resp))
}
