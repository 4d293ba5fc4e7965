package broker

import (
	"bytes"
	"encoding/binary"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/internal/avro"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/schemacheck"
)

// Schemas are kept per topic, for all partitions of a partitioned topic
// together (as Pulsar keys them by the base name), as a list of versions 0,
// 1, 2…. Deleting a topic's schema adds a deletion as a version of its own,
// as Pulsar's registry does: the versions before it are gone, and the next
// schema takes the next number. A forced delete forgets every version, and
// numbering starts again at 0.
//
// A new schema is registered, or refused, as Pulsar 4.0's registry decides
// (schemaregistry.go, schemacheck.go). A version is written on the wire as an
// 8-byte big-endian number; no schema is the empty version.

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

// liveSchemasLocked returns the versions of a topic's schema since its last
// deletion and the version number of the first of them.
func (b *Broker) liveSchemasLocked(key string) ([]storedSchema, int) {
	list := b.data.Schemas[key]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Schema == nil {
			return list[i+1:], i + 1
		}
	}
	return list, 0
}

// schemaAt returns the schema of tn with the given version bytes (the newest
// when version is empty) and its version, or nil.
func (b *Broker) schemaAt(tn TopicName, version []byte) (*pb.Schema, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live, first := b.liveSchemasLocked(tn.Base().String())
	if len(live) == 0 {
		return nil, nil
	}
	if len(version) == 0 {
		return live[len(live)-1].Schema, encodeSchemaVersion(first + len(live) - 1)
	}
	v := decodeSchemaVersion(version)
	if v < int64(first) || v >= int64(first+len(live)) {
		return nil, nil
	}
	return live[v-int64(first)].Schema, version
}

// Schema is one version of a topic's schema, as a plain value.
type Schema struct {
	// Version numbers a topic's schemas 0, 1, 2… in registration order
	// (a deletion takes a number too).
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

// schemaValue turns a stored version into a Schema.
func schemaValue(v int, st storedSchema) Schema {
	out := Schema{Version: int64(v), Type: schemacheck.TypeNames[st.Schema.GetType()],
		Data: bytes.Clone(st.Schema.GetSchemaData()), Properties: map[string]string{}, Registered: st.At}
	for _, kv := range st.Schema.GetProperties() {
		out.Properties[kv.GetKey()] = kv.GetValue()
	}
	return out
}

// Schema returns version v of a topic's schema, or its newest version when v
// is negative. It fails with ErrSchemaNotFound when there is none, or when
// that version was deleted.
func (b *Broker) Schema(topic string, v int64) (Schema, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Schema{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	live, first := b.liveSchemasLocked(tn.Base().String())
	if v < 0 {
		v = int64(first + len(live) - 1)
	}
	if v < int64(first) || v >= int64(first+len(live)) {
		return Schema{}, ErrSchemaNotFound
	}
	return schemaValue(int(v), live[v-int64(first)]), nil
}

// Schemas returns the versions of a topic's schema since its last deletion,
// oldest first (none for a topic without a schema).
func (b *Broker) Schemas(topic string) ([]Schema, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []Schema{}
	live, first := b.liveSchemasLocked(tn.Base().String())
	for i, st := range live {
		out = append(out, schemaValue(first+i, st))
	}
	return out, nil
}

// protoSchema turns a Schema into the wire form the registry keeps. An
// unknown type fails with ErrInvalidSchema, worded as Pulsar's enum lookup
// fails.
func protoSchema(tn TopicName, s Schema) (*pb.Schema, error) {
	typ, ok := pb.Schema_None, false
	for t, name := range schemacheck.TypeNames {
		if name == s.Type {
			typ, ok = t, true
		}
	}
	switch {
	case s.Type == "BYTES":
		typ, ok = pb.Schema_None, true // stored as NONE, as Pulsar stores it
	case s.Type == "AUTO_CONSUME" || s.Type == "AUTO_PUBLISH" || s.Type == "AUTO":
		return nil, errorf(ErrInvalidSchemaData, "Schema %s is a client-side schema type", s.Type)
	case s.Type == "":
		return nil, errorf(ErrInvalidSchema, "Name is null")
	case !ok:
		return nil, errorf(ErrInvalidSchema, "No enum constant org.apache.pulsar.common.schema.SchemaType.%s", s.Type)
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
	return ps, nil
}

// PutSchema registers s as a topic's schema, as Pulsar's admin API does
// (whatever the namespace's auto-update setting), and returns its version:
// the version of the same schema when there is one, else a new one if it
// is compatible with the topic's schemas under the strategy in force. A
// topic of a namespace that does not exist fails with ErrNamespaceNotFound,
// an incompatible schema with ErrIncompatibleSchema, a malformed
// definition with ErrInvalidSchemaData, an unknown type with
// ErrInvalidSchema; their messages are Pulsar's.
func (b *Broker) PutSchema(topic string, s Schema) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	ps, err := protoSchema(tn, s)
	if err != nil {
		return 0, err
	}
	if !b.NamespaceExists(tn.NamespaceName()) {
		return 0, ErrNamespaceNotFound
	}
	strategy := b.schemaStrategy(tn)
	b.mu.Lock()
	defer b.mu.Unlock()
	v, fail := b.putSchemaLocked(tn.Base().String(), ps, strategy)
	if fail != nil {
		return 0, fail.Err()
	}
	return int64(v), nil
}

// CheckSchemaCompatibility reports whether s could be registered as a
// topic's next schema, as Pulsar's compatibility endpoint does, and the
// strategy in force. A schema that could not fails with the error
// PutSchema would return.
func (b *Broker) CheckSchemaCompatibility(topic string, s Schema) (SchemaCompatibility, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return "", err
	}
	ps, err := protoSchema(tn, s)
	if err != nil {
		return "", err
	}
	if !b.NamespaceExists(tn.NamespaceName()) {
		return "", ErrNamespaceNotFound
	}
	strategy := b.schemaStrategy(tn)
	if fail := schemacheck.ValidateData(ps); fail != nil {
		return strategy, fail.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	live, _ := b.liveSchemasLocked(tn.Base().String())
	if fail := checkCompatibility(live, ps, strategy); fail != nil {
		return strategy, fail.Err()
	}
	return strategy, nil
}

// SchemaVersionOf returns the version of a topic's schema that is the same
// as s, or -1 when none is, as Pulsar's schema version endpoint answers.
func (b *Broker) SchemaVersionOf(topic string, s Schema) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	ps, err := protoSchema(tn, s)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	live, first := b.liveSchemasLocked(tn.Base().String())
	var parsed *avro.Schema
	if schemacheck.ParsedByAvro(ps.GetType()) {
		if parsed, _ = schemacheck.ParseAvro(ps.GetSchemaData()); parsed == nil {
			return -1, nil
		}
	}
	for i, st := range live {
		if same, fail := schemacheck.SameDefinition(st.Schema, ps, parsed); fail == nil && same {
			return int64(first + i), nil
		}
	}
	return -1, nil
}

// DeleteSchema deletes a topic's schema and returns the version the
// deletion took, as Pulsar does: the versions so far are gone and the next
// schema gets the next number. With force it forgets every version instead
// (the answer is -1) and numbering starts again.
func (b *Broker) DeleteSchema(topic string, force bool) (int64, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	key := tn.Base().String()
	now := b.cfg.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if force {
		delete(b.data.Schemas, key)
		return -1, nil
	}
	b.data.Schemas[key] = append(b.data.Schemas[key], storedSchema{At: now})
	return int64(len(b.data.Schemas[key]) - 1), nil
}
