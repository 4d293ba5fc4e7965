package broker

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/internal/avro"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/schemacheck"
)

// The schema registry's decisions, as Pulsar 4.0's SchemaRegistryServiceImpl
// and AbstractTopic take them: a producer's schema is registered when new
// and compatible (or refused when the namespace does not allow automatic
// updates); a consumer's schema is registered on an idle topic, and checked
// otherwise.

// schemaStrategy returns the compatibility strategy in force for tn.
func (b *Broker) schemaStrategy(tn TopicName) SchemaCompatibility {
	return *b.appliedPolicies(tn).SchemaCompatibilityStrategy
}

// putSchemaLocked registers a schema as Pulsar's putSchemaIfAbsent does: a
// well-formed definition, the version of the same schema when there is
// one, else a new version when it is compatible with the schemas since the
// last deletion.
func (b *Broker) putSchemaLocked(key string, s *pb.Schema, strategy SchemaCompatibility) (int, *schemacheck.Failure) {
	if fail := schemacheck.ValidateData(s); fail != nil {
		return 0, fail
	}
	live, first := b.liveSchemasLocked(key)
	v, found, fail := findSchemaVersion(live, s)
	switch {
	case fail != nil:
		return 0, fail
	case found:
		return first + v, nil
	}
	if len(live) > 0 {
		if fail := checkCompatibility(live, s, strategy); fail != nil {
			return 0, fail
		}
	}
	b.data.Schemas[key] = append(b.data.Schemas[key], storedSchema{Schema: proto.Clone(s).(*pb.Schema), At: b.cfg.clock.Now()})
	return len(b.data.Schemas[key]) - 1, nil
}

// findSchemaVersion returns the index in live of the same schema as s, as
// Pulsar's getSchemaVersionBySchemaData finds it.
func findSchemaVersion(live []storedSchema, s *pb.Schema) (int, bool, *schemacheck.Failure) {
	if len(live) == 0 {
		return 0, false, nil
	}
	var parsed *avro.Schema
	if schemacheck.ParsedByAvro(s.GetType()) {
		var cause string
		if parsed, cause = schemacheck.ParseAvro(s.GetSchemaData()); parsed == nil {
			return 0, false, schemacheck.Unexpected(cause)
		}
	}
	for i, st := range live {
		same, fail := schemacheck.SameDefinition(st.Schema, s, parsed)
		if fail != nil {
			return 0, false, fail
		}
		if same {
			return i, true, nil
		}
	}
	return 0, false, nil
}

// checkCompatibility checks a new schema against a topic's live schemas
// under a strategy: against the newest one (checkCompatibilityWithLatest),
// or every one for a transitive strategy (checkCompatibilityWithAll).
func checkCompatibility(live []storedSchema, s *pb.Schema, strategy SchemaCompatibility) *schemacheck.Failure {
	if strategy == SchemaAlwaysCompatible || len(live) == 0 {
		return nil
	}
	if strategy.Transitive() {
		return checkWithAll(live, s, strategy)
	}
	return checkWithLatest(live[len(live)-1].Schema, s, strategy)
}

// checkWithLatest is Pulsar's check against the newest schema: the same
// type, and the type's check unless the definitions are the same bytes.
func checkWithLatest(latest, s *pb.Schema, strategy SchemaCompatibility) *schemacheck.Failure {
	if latest.GetType() != s.GetType() {
		return schemacheck.Incompatible("Incompatible schema: exists schema type %s, new schema type %s",
			schemacheck.TypeNames[latest.GetType()], schemacheck.TypeNames[s.GetType()])
	}
	if string(latest.GetSchemaData()) == string(s.GetSchemaData()) {
		return nil
	}
	return schemacheck.Check([]*pb.Schema{latest}, s, strategy, true)
}

// checkWithAll is Pulsar's check against every live schema: all of the
// same type, then the type's check over the list. Any other exception the
// check throws becomes an IncompatibleSchemaException.
func checkWithAll(live []storedSchema, s *pb.Schema, strategy SchemaCompatibility) *schemacheck.Failure {
	if strategy == SchemaAlwaysCompatible {
		return nil
	}
	var from []*pb.Schema
	for _, st := range live {
		if st.Schema.GetType() != s.GetType() {
			return schemacheck.Incompatible("Incompatible schema: exists schema type %s, new schema type %s",
				schemacheck.TypeNames[st.Schema.GetType()], schemacheck.TypeNames[s.GetType()])
		}
		from = append(from, st.Schema)
	}
	fail := schemacheck.Check(from, s, strategy, false)
	if fail != nil && fail.Class != schemacheck.IncompatibleClass {
		return schemacheck.Wrapped(fail.Class + ": " + fail.Msg)
	}
	return fail
}

// addSchema registers the schema of a producer (or of GET_OR_CREATE_SCHEMA)
// on tn and returns its version, as Pulsar's tryAddSchema and
// AbstractTopic.addSchema do. No schema is the empty version, unless the
// topic has a schema and schema validation is enforced (by the broker, or
// by the policy in force for the topic). When the namespace
// does not allow automatic updates only a schema the topic has is taken.
func (b *Broker) addSchema(tn TopicName, s *pb.Schema) ([]byte, *schemacheck.Failure) {
	pol := b.appliedPolicies(tn)
	key := tn.Base().String()
	b.mu.Lock()
	defer b.mu.Unlock()
	live, first := b.liveSchemasLocked(key)
	if s == nil {
		// The broker's setting (isSchemaValidationEnforced) enforces it
		// whatever the namespace and the topic say, as in Pulsar's
		// ServerCnx.
		if len(live) > 0 && (*pol.SchemaValidationEnforced || *b.cfg.policies.SchemaValidationEnforced) {
			return nil, schemacheck.Incompatible("Producers cannot connect or send message without a schema to topics with a " +
				"schemawhen SchemaValidationEnforced is enabled")
		}
		return []byte{}, nil
	}
	if !*pol.AllowAutoUpdateSchema {
		v, found, fail := findSchemaVersion(live, s)
		switch {
		case fail != nil:
			return nil, fail
		case !found:
			return nil, schemacheck.Incompatible("Schema not found and schema auto updating is disabled.")
		}
		return encodeSchemaVersion(first + v), nil
	}
	v, fail := b.putSchemaLocked(key, s, *pol.SchemaCompatibilityStrategy)
	if fail != nil {
		return nil, fail
	}
	return encodeSchemaVersion(v), nil
}

// consumerSchemaLocked applies a consumer's schema to its topic, as
// Pulsar's addSchemaIfIdleOrCheckCompatible: on a topic with no schema,
// producer, consumer or message the schema is registered as a producer's
// would be; otherwise it must be one a reader of the topic can use. It
// returns the refusal, or nil. An AUTO_CONSUME consumer takes any schema.
func (t *Topic) consumerSchemaLocked(s *pb.Schema) *schemacheck.Failure {
	if s == nil || s.GetType() == pb.Schema_AutoConsume {
		return nil
	}
	b := t.b
	key := t.name.Base().String()
	b.mu.Lock()
	live, _ := b.liveSchemasLocked(key)
	b.mu.Unlock()
	consumers := 0
	for _, sub := range t.subs {
		for _, cons := range sub.consumers {
			if !cons.autoConsume {
				consumers++
			}
		}
	}
	if len(live) == 0 && len(t.producers) == 0 && consumers == 0 && t.log.End() == 0 {
		_, fail := b.addSchema(t.name, s)
		return fail
	}
	strategy := b.schemaStrategy(t.name)
	if strategy == SchemaAlwaysCompatible {
		return nil
	}
	if len(live) == 0 {
		return schemacheck.Incompatible("Topic does not have schema to check")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	live, _ = b.liveSchemasLocked(key)
	switch strategy {
	case SchemaBackward, SchemaForward, SchemaForwardTransitive, SchemaFull:
		return checkWithLatest(live[len(live)-1].Schema, s, SchemaBackward)
	}
	return checkWithAll(live, s, strategy)
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

// handleGetOrCreateSchema answers GET_OR_CREATE_SCHEMA: the topic must
// exist; the schema is then registered as a producer's would be.
func (c *conn) handleGetOrCreateSchema(g *pb.CommandGetOrCreateSchema) {
	resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: proto.Uint64(g.GetRequestId())}
	tn, err := ParseTopicName(g.GetTopic())
	switch {
	case err != nil:
		resp.ErrorCode = pb.ServerError_InvalidTopicName.Enum()
		resp.ErrorMessage = proto.String(err.Error())
	case !c.b.topicExists(tn):
		resp.ErrorCode = pb.ServerError_TopicNotFound.Enum()
		resp.ErrorMessage = proto.String(fmt.Sprintf("Topic not found %s", tn))
	default:
		v, fail := c.b.addSchema(tn, g.GetSchema())
		if fail != nil {
			resp.ErrorCode = fail.Code.Enum()
			resp.ErrorMessage = proto.String(fail.ProducerMessage())
		} else {
			resp.SchemaVersion = v
		}
	}
	c.send(protocol.Base(pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, resp))
}

// knownSchemaType reports whether a command's schema, if any, has a type
// Pulsar knows: Pulsar cannot read a command whose schema type is another
// number, and closes the connection.
func knownSchemaType(s *pb.Schema) bool {
	return s == nil || (s.Type != nil && s.Type.Descriptor().Values().ByNumber(s.Type.Number()) != nil)
}

// closeForSchema closes the connection on a command Pulsar cannot read.
func (c *conn) closeForSchema() bool {
	c.log.Info("closing connection: a schema of an unknown type")
	return false
}
