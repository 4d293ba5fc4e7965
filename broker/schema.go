package broker

import (
	"bytes"
	"encoding/binary"

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

// schemaVersion returns the version of s on topic tn, registering s as a new
// version when it is new. A nil schema is "no schema": it gets the empty
// version, as Pulsar's tryAddSchema answers when schema validation is not
// enforced (the default). An explicit bytes schema (type None) is stored like
// any other.
func (b *Broker) schemaVersion(tn TopicName, s *pb.Schema) []byte {
	key := tn.Base().String()
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.schemas[key]
	if s == nil {
		return []byte{}
	}
	for i, have := range list {
		if have.GetType() == s.GetType() && bytes.Equal(have.GetSchemaData(), s.GetSchemaData()) {
			return encodeSchemaVersion(i)
		}
	}
	b.schemas[key] = append(list, proto.Clone(s).(*pb.Schema))
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
		return list[len(list)-1], encodeSchemaVersion(len(list) - 1)
	}
	if len(version) != 8 {
		return nil, nil
	}
	v := binary.BigEndian.Uint64(version)
	if v >= uint64(len(list)) {
		return nil, nil
	}
	return list[v], version
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
