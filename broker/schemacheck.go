package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/pulsarsim/pulsarsim/internal/avro"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// What Pulsar's schema registry checks for each schema type: that a schema's
// definition is well formed (SchemaDataValidator) and whether a new schema is
// compatible with the ones before it (SchemaCompatibilityCheck). Each check
// answers as the Pulsar 4.0 class it follows, with its message.

// Java exception classes that reach clients' error messages.
const (
	incompatibleClass = "org.apache.pulsar.broker.service.schema.exceptions.IncompatibleSchemaException"
	invalidDataClass  = "org.apache.pulsar.broker.service.schema.exceptions.InvalidSchemaDataException"
)

// schemaFailure is a schema the registry refuses, as the exception Pulsar
// throws: its class, message and cause, and whether it was thrown inside
// the registry's asynchronous steps (then Pulsar's producer path words it
// as "<exception> caused by <exception>").
type schemaFailure struct {
	code       pb.ServerError
	class      string
	msg        string
	cause      string // the cause's toString, when the exception has one
	completion bool
}

// incompatible is an IncompatibleSchemaException.
func incompatible(format string, args ...any) *schemaFailure {
	return &schemaFailure{code: pb.ServerError_IncompatibleSchema, class: incompatibleClass,
		msg: fmt.Sprintf(format, args...), completion: true}
}

// invalidData is an InvalidSchemaDataException with its cause, if any.
func invalidData(msg, cause string) *schemaFailure {
	return &schemaFailure{code: pb.ServerError_IncompatibleSchema, class: invalidDataClass, msg: msg, cause: cause}
}

// unexpected is a Java runtime exception (not a schema exception) that
// escapes the registry: clients get UnknownError.
func unexpected(javaString string) *schemaFailure {
	class, msg, _ := strings.Cut(javaString, ": ")
	return &schemaFailure{code: pb.ServerError_UnknownError, class: class, msg: msg, completion: true}
}

// wrapped is an IncompatibleSchemaException made from another exception:
// its message is the cause's toString.
func wrapped(javaString string) *schemaFailure {
	return incompatible("%s", javaString)
}

// producerMessage is the message a producer (or GET_OR_CREATE_SCHEMA) gets:
// the exception's message followed by " caused by " and its cause.
func (f *schemaFailure) producerMessage() string {
	if f.completion {
		s := f.class + ": " + f.msg
		return s + " caused by " + s
	}
	if f.cause != "" {
		return f.msg + " caused by " + f.cause
	}
	return f.msg
}

// err returns the failure as a broker error for the exported API.
func (f *schemaFailure) err() error {
	if f.class == invalidDataClass {
		return errorf(ErrInvalidSchemaData, "%s", f.msg)
	}
	if f.code == pb.ServerError_UnknownError {
		return errorf(ErrSchemaCheckFailed, "%s: %s", f.class, f.msg)
	}
	return errorf(ErrIncompatibleSchema, "%s", f.msg)
}

// parsedByAvro reports whether Pulsar reads a type's definition as an Avro
// schema.
func parsedByAvro(t pb.Schema_Type) bool {
	return t == pb.Schema_Avro || t == pb.Schema_Json || t == pb.Schema_Protobuf
}

// parseAvro parses a definition, failing as Pulsar's use of Avro's parser
// fails: with the exception's toString.
func parseAvro(data []byte) (*avro.Schema, string) {
	s, err := avro.Parse(string(data))
	if err != nil {
		var pe *avro.ParseError
		if errors.As(err, &pe) {
			return nil, pe.JavaString()
		}
		return nil, err.Error()
	}
	return s, ""
}

// validateSchemaData checks that a definition is well formed for its type,
// as Pulsar's SchemaDataValidator does before registering it.
func validateSchemaData(sc *pb.Schema) *schemaFailure {
	t, data := sc.GetType(), sc.GetSchemaData()
	name := schemaTypeNames[t]
	switch t {
	case pb.Schema_Avro, pb.Schema_Json, pb.Schema_Protobuf:
		s, cause := parseAvro(data)
		if s == nil && t == pb.Schema_Json {
			if _, jcause := jsonSchemaDefinition(data); jcause != "" {
				return invalidData("Invalid schema definition data for JSON schema", jcause)
			}
			return nil
		}
		if s == nil {
			return invalidData("Invalid schema definition data for "+name+" schema", cause)
		}
		if t == pb.Schema_Avro && s.Type == avro.Union {
			return invalidData("Avro schema typed [UNION] is not supported", "")
		}
	case pb.Schema_ProtobufNative:
		if _, cause := protobufNativeRoot(data); cause != "" {
			if cause == rootMissing {
				return invalidData("protobuf root message descriptor is null, please recheck rootMessageTypeName or "+
					"rootFileDescriptorName conf.", "")
			}
			return invalidData("deserialize ProtobufNative Schema failed",
				"org.apache.pulsar.client.api.SchemaSerializationException: "+cause)
		}
	case pb.Schema_String:
		if len(data) > 0 && string(data) != "null" {
			return invalidData(fmt.Sprintf("Invalid schema definition data for string schema : '%s'", data), "")
		}
	case pb.Schema_KeyValue:
		k, v, ok := decodeKeyValueSchema(data, sc.GetProperties())
		if !ok {
			return unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
		}
		if f := validateSchemaData(k); f != nil {
			return f
		}
		return validateSchemaData(v)
	case pb.Schema_None:
	case pb.Schema_AutoConsume:
		return invalidData("Schema AUTO_CONSUME is a client-side schema type", "")
	default:
		if len(data) > 0 {
			return invalidData(fmt.Sprintf("Invalid schema definition data for primitive schemas :length of schema "+
				"data should be zero, but %d bytes is found", len(data)), "")
		}
	}
	return nil
}

// jsonSchemaDefinition reads a JSON schema's definition in the form older
// clients wrote (a JSON Schema document rather than an Avro one), as
// Pulsar's Jackson reader of JsonSchema does: an object whose "type" is one
// of JSON Schema's types. It returns the document's "id" or the reader's
// error.
func jsonSchemaDefinition(data []byte) (id string, cause string) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		if _, e := avro.Parse(string(data)); e != nil && strings.Contains(e.Error(), "jackson") {
			return "", e.Error()
		}
		return "", "com.fasterxml.jackson.databind.exc.MismatchedInputException: " + err.Error()
	}
	switch doc["type"] {
	case "string", "object", "array", "number", "integer", "boolean", "null", "any":
		id, _ := doc["id"].(string)
		return id, ""
	}
	return "", fmt.Sprintf("com.fasterxml.jackson.databind.exc.InvalidTypeIdException: Could not resolve type id '%v' "+
		"as a subtype of `com.fasterxml.jackson.module.jsonSchema.JsonSchema`", doc["type"])
}

// rootMissing marks a PROTOBUF_NATIVE definition whose root message is not
// in its descriptors.
const rootMissing = "root message not found"

// protobufNativeRoot reads a PROTOBUF_NATIVE definition (JSON holding a
// base64 FileDescriptorSet, the root file's name and the root message's
// name), as Pulsar's ProtobufNativeSchemaUtils.deserialize does, and returns
// the root message's full name or why it cannot.
func protobufNativeRoot(data []byte) (string, string) {
	var def struct {
		FileDescriptorSet      string `json:"fileDescriptorSet"`
		RootMessageTypeName    string `json:"rootMessageTypeName"`
		RootFileDescriptorName string `json:"rootFileDescriptorName"`
	}
	if err := json.Unmarshal(data, &def); err != nil {
		return "", "com.fasterxml.jackson.core.JsonParseException: " + err.Error()
	}
	if def.FileDescriptorSet == "" {
		return "", `java.lang.NullPointerException: Cannot read the array length because "data" is null`
	}
	raw, err := base64.StdEncoding.DecodeString(def.FileDescriptorSet)
	if err != nil {
		return "", "java.lang.IllegalArgumentException: " + err.Error()
	}
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(raw, set); err != nil {
		return "", "com.google.protobuf.InvalidProtocolBufferException: " + err.Error()
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return "", "com.google.protobuf.Descriptors$DescriptorValidationException: " + err.Error()
	}
	fd, err := files.FindFileByPath(def.RootFileDescriptorName)
	if err != nil {
		return "", "java.lang.NullPointerException: the root file descriptor is missing"
	}
	rel := strings.TrimPrefix(strings.Replace(def.RootMessageTypeName, string(fd.Package()), "", 1), ".")
	var msgs protoreflect.MessageDescriptors = fd.Messages()
	var found protoreflect.MessageDescriptor
	for _, part := range strings.Split(rel, ".") {
		if msgs == nil {
			return "", rootMissing
		}
		found = msgs.ByName(protoreflect.Name(part))
		if found == nil {
			return "", rootMissing
		}
		msgs = found.Messages()
	}
	return string(found.FullName()), ""
}

// decodeKeyValueSchema splits a KEY_VALUE schema into its key and value
// schemas: its data is the key's definition and the value's, each after its
// length as a 4-byte big-endian number; their types, names and properties
// are in the schema's properties (key.schema.type…), BYTES when absent.
func decodeKeyValueSchema(data []byte, props []*pb.KeyValue) (key, value *pb.Schema, ok bool) {
	get := func(k string) string {
		for _, p := range props {
			if p.GetKey() == k {
				return p.GetValue()
			}
		}
		return ""
	}
	part := func(which string) *pb.Schema {
		if len(data) < 4 {
			return nil
		}
		n := int32(binary.BigEndian.Uint32(data))
		data = data[4:]
		var def []byte
		if n > 0 {
			if int(n) > len(data) {
				return nil
			}
			def, data = data[:n], data[n:]
		}
		typ := pb.Schema_None
		for t, name := range schemaTypeNames {
			if name == get(which+".schema.type") {
				typ = t
			}
		}
		return &pb.Schema{Name: proto.String(get(which + ".schema.name")), Type: typ.Enum(), SchemaData: def}
	}
	if key = part("key"); key == nil {
		return nil, nil, false
	}
	if value = part("value"); value == nil {
		return nil, nil, false
	}
	return key, value, true
}

// checkSchemas checks a new schema against existing ones of its type
// (oldest first) as the SchemaCompatibilityCheck of that type does: latest
// is true for the single-schema form (the non-transitive strategies and the
// consumer's check), whose JSON check differs.
func checkSchemas(from []*pb.Schema, to *pb.Schema, strategy SchemaCompatibility, latest bool) *schemaFailure {
	switch to.GetType() {
	case pb.Schema_Avro:
		return checkAvro(from, to, strategy)
	case pb.Schema_Json:
		if latest {
			return checkJSON(from[0], to, strategy)
		}
		return checkAvro(from, to, strategy)
	case pb.Schema_ProtobufNative:
		for _, f := range from {
			if fail := checkProtobufNative(f, to, strategy); fail != nil {
				return fail
			}
		}
		return nil
	case pb.Schema_KeyValue:
		return checkKeyValue(from, to, strategy)
	}
	if strategy == SchemaAlwaysIncompatible {
		return incompatible("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")
	}
	return nil
}

// checkAvro is Pulsar's Avro check: Avro's SchemaValidator for the
// strategy, against the newest schema or, for a transitive strategy, each
// one from the newest.
func checkAvro(from []*pb.Schema, to *pb.Schema, strategy SchemaCompatibility) *schemaFailure {
	var existing []*avro.Schema
	for i := len(from) - 1; i >= 0; i-- {
		s, cause := parseAvro(from[i].GetSchemaData())
		if s == nil {
			return wrapped(cause)
		}
		existing = append(existing, s)
	}
	next, cause := parseAvro(to.GetSchemaData())
	if next == nil {
		return wrapped(cause)
	}
	fail := func(writer, reader *avro.Schema) *schemaFailure {
		return incompatible("Error during schema compatibility check with strategy %s: "+
			"org.apache.avro.SchemaValidationException: Unable to read schema: \n%s\nusing schema:\n%s",
			strategy, writer.Pretty(), reader.Pretty())
	}
	switch strategy {
	case SchemaAlwaysCompatible:
		return nil
	case SchemaBackward, SchemaForward, SchemaFull:
		existing = existing[:1]
	case SchemaBackwardTransitive, SchemaForwardTransitive, SchemaFullTransitive:
	default:
		return fail(next, next)
	}
	for _, old := range existing {
		// Each pair is the writer's schema and the reader's, in the order
		// Avro's validators try them.
		pairs := [][2]*avro.Schema{{old, next}}
		switch strategy {
		case SchemaForward, SchemaForwardTransitive:
			pairs = [][2]*avro.Schema{{next, old}}
		case SchemaFull, SchemaFullTransitive:
			pairs = [][2]*avro.Schema{{next, old}, {old, next}}
		}
		for _, p := range pairs {
			ok, err := avro.CanRead(p[0], p[1])
			var de *avro.DefaultError
			if errors.As(err, &de) {
				return unexpected(de.JavaString())
			}
			if !ok {
				return fail(p[0], p[1])
			}
		}
	}
	return nil
}

// checkJSON is Pulsar's JSON check against the newest schema: Avro's rules
// when both definitions are Avro schemas; definitions in the older JSON
// Schema form pass, or compare their ids.
func checkJSON(from, to *pb.Schema, strategy SchemaCompatibility) *schemaFailure {
	fromAvro, _ := parseAvro(from.GetSchemaData())
	toAvro, _ := parseAvro(to.GetSchemaData())
	toID, toErr := jsonSchemaDefinition(to.GetSchemaData())
	switch {
	case fromAvro != nil && toAvro != nil:
		return checkAvro([]*pb.Schema{from}, to, strategy)
	case fromAvro != nil && toErr == "":
		return nil
	case fromAvro != nil:
		return incompatible("Unknown schema format")
	}
	fromID, fromErr := jsonSchemaDefinition(from.GetSchemaData())
	switch {
	case fromErr != "" || toAvro != nil:
		return nil
	case toErr != "":
		return incompatible("Unknown schema format")
	case fromID != toID:
		return incompatible("Incompatible Schema from %s + to %s", from.GetSchemaData(), to.GetSchemaData())
	}
	return nil
}

// checkProtobufNative is Pulsar's PROTOBUF_NATIVE check: the root message
// may not change.
func checkProtobufNative(from, to *pb.Schema, strategy SchemaCompatibility) *schemaFailure {
	fromRoot, cause := protobufNativeRoot(from.GetSchemaData())
	toRoot, toCause := protobufNativeRoot(to.GetSchemaData())
	if cause == "" {
		cause = toCause
	}
	if cause != "" && cause != rootMissing {
		return unexpected("org.apache.pulsar.client.api.SchemaSerializationException: " + cause)
	}
	switch strategy {
	case SchemaAlwaysCompatible:
		return nil
	case SchemaAlwaysIncompatible:
		return incompatible("Unknown SchemaCompatibilityStrategy.")
	}
	if fromRoot != toRoot {
		return incompatible("Protobuf root message change is not allowed under the '%s' strategy. "+
			"Original message name: '%s', new message name: '%s'.", strategy, fromRoot, toRoot)
	}
	return nil
}

// checkKeyValue is Pulsar's KEY_VALUE check: the key and value types may
// not change, and each is checked as a schema of its type.
func checkKeyValue(from []*pb.Schema, to *pb.Schema, strategy SchemaCompatibility) *schemaFailure {
	if strategy == SchemaAlwaysCompatible {
		return nil
	}
	toKey, toValue, ok := decodeKeyValueSchema(to.GetSchemaData(), to.GetProperties())
	if !ok {
		return unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
	}
	var keys, values []*pb.Schema
	for _, f := range from {
		if f.GetType() != pb.Schema_KeyValue {
			return incompatible("From schema is not a KEY_VALUE schema.")
		}
		k, v, ok := decodeKeyValueSchema(f.GetSchemaData(), f.GetProperties())
		if !ok {
			return unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
		}
		if k.GetType() != toKey.GetType() || v.GetType() != toValue.GetType() {
			return incompatible("Key schemas or Value schemas are different schema type, from key schema type is %s "+
				"and to key schema is %s, from value schema is %s and to value schema is %s",
				kvTypeName(k), kvTypeName(toKey), kvTypeName(v), kvTypeName(toValue))
		}
		keys, values = append(keys, k), append(values, v)
	}
	if fail := checkSchemas(keys, toKey, strategy, false); fail != nil {
		return fail
	}
	return checkSchemas(values, toValue, strategy, false)
}

// kvTypeName names a key or value schema's type; an absent type is BYTES.
func kvTypeName(s *pb.Schema) string {
	if s.GetType() == pb.Schema_None {
		return "BYTES"
	}
	return schemaTypeNames[s.GetType()]
}

// sameDefinition reports whether two schemas are the same version, as
// Pulsar's getSchemaVersionBySchemaData decides: for the types it reads
// with Avro's parser, equal parsed schemas of the same type (next is given
// parsed then); otherwise the same type and bytes. A stored definition
// that does not parse fails as Pulsar's parser does there.
func sameDefinition(have, next *pb.Schema, nextParsed *avro.Schema) (bool, *schemaFailure) {
	if nextParsed != nil && parsedByAvro(have.GetType()) {
		old, cause := parseAvro(have.GetSchemaData())
		if old == nil {
			return false, unexpected(cause)
		}
		return old.Equal(nextParsed) && have.GetType() == next.GetType(), nil
	}
	return have.GetType() == next.GetType() && bytes.Equal(have.GetSchemaData(), next.GetSchemaData()), nil
}
