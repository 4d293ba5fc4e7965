// Package schemacheck is what Pulsar's schema registry checks for each
// schema type: that a schema's definition is well formed
// (SchemaDataValidator) and whether a new schema is compatible with the ones
// before it under a compatibility strategy (SchemaCompatibilityCheck). Each
// check answers as the Pulsar 4.0 class it follows, with its message. The
// checks are pure functions of the schemas; the broker's registry stores
// the versions and asks.
package schemacheck

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pulsarsim/pulsarsim/internal/avro"
	"github.com/pulsarsim/pulsarsim/model"
	"github.com/pulsarsim/pulsarsim/protocol/pb"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// IncompatibleClass and InvalidDataClass are the Java exception classes
// that reach clients' error messages.
const (
	IncompatibleClass = "org.apache.pulsar.broker.service.schema.exceptions.IncompatibleSchemaException"
	InvalidDataClass  = "org.apache.pulsar.broker.service.schema.exceptions.InvalidSchemaDataException"
)

// Failure is a schema the registry refuses, as the exception Pulsar
// throws: its class, message and cause, and whether it was thrown inside
// the registry's asynchronous steps (then Pulsar's producer path words it
// as "<exception> caused by <exception>").
type Failure struct {
	Code       pb.ServerError // the error code a client gets
	Class      string         // the Java exception's class
	Msg        string         // its message
	Cause      string         // the cause's toString, when the exception has one
	Completion bool           // thrown in the registry's asynchronous steps
}

// Incompatible is an IncompatibleSchemaException.
func Incompatible(format string, args ...any) *Failure {
	return &Failure{Code: pb.ServerError_IncompatibleSchema, Class: IncompatibleClass,
		Msg: fmt.Sprintf(format, args...), Completion: true}
}

// InvalidData is an InvalidSchemaDataException with its cause, if any.
func InvalidData(msg, cause string) *Failure {
	return &Failure{Code: pb.ServerError_IncompatibleSchema, Class: InvalidDataClass, Msg: msg, Cause: cause}
}

// Unexpected is a Java runtime exception (not a schema exception) that
// escapes the registry: clients get UnknownError.
func Unexpected(javaString string) *Failure {
	class, msg, _ := strings.Cut(javaString, ": ")
	return &Failure{Code: pb.ServerError_UnknownError, Class: class, Msg: msg, Completion: true}
}

// Wrapped is an IncompatibleSchemaException made from another exception:
// its message is the cause's toString.
func Wrapped(javaString string) *Failure {
	return Incompatible("%s", javaString)
}

// ProducerMessage is the message a producer (or GET_OR_CREATE_SCHEMA) gets:
// the exception's message followed by " caused by " and its cause.
func (f *Failure) ProducerMessage() string {
	if f.Completion {
		s := f.Class + ": " + f.Msg
		return s + " caused by " + s
	}
	if f.Cause != "" {
		return f.Msg + " caused by " + f.Cause
	}
	return f.Msg
}

// Err returns the failure as a broker error for the exported API.
func (f *Failure) Err() error {
	if f.Class == InvalidDataClass {
		return model.Errorf(model.ErrInvalidSchemaData, "%s", f.Msg)
	}
	if f.Code == pb.ServerError_UnknownError {
		return model.Errorf(model.ErrSchemaCheckFailed, "%s: %s", f.Class, f.Msg)
	}
	return model.Errorf(model.ErrIncompatibleSchema, "%s", f.Msg)
}

// ParsedByAvro reports whether Pulsar reads a type's definition as an Avro
// schema.
func ParsedByAvro(t pb.Schema_Type) bool {
	return t == pb.Schema_Avro || t == pb.Schema_Json || t == pb.Schema_Protobuf
}

// ParseAvro parses a definition, failing as Pulsar's use of Avro's parser
// fails: with the exception's toString.
func ParseAvro(data []byte) (*avro.Schema, string) {
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

// ValidateData checks that a definition is well formed for its type,
// as Pulsar's SchemaDataValidator does before registering it.
func ValidateData(sc *pb.Schema) *Failure {
	t, data := sc.GetType(), sc.GetSchemaData()
	name := TypeNames[t]
	switch t {
	case pb.Schema_Avro, pb.Schema_Json, pb.Schema_Protobuf:
		s, cause := ParseAvro(data)
		if s == nil && t == pb.Schema_Json {
			if _, jcause := jsonSchemaDefinition(data); jcause != "" {
				return InvalidData("Invalid schema definition data for JSON schema", jcause)
			}
			return nil
		}
		if s == nil {
			return InvalidData("Invalid schema definition data for "+name+" schema", cause)
		}
		if t == pb.Schema_Avro && s.Type == avro.Union {
			return InvalidData("Avro schema typed [UNION] is not supported", "")
		}
	case pb.Schema_ProtobufNative:
		if _, cause := protobufNativeRoot(data); cause != "" {
			if cause == rootMissing {
				return InvalidData("protobuf root message descriptor is null, please recheck rootMessageTypeName or "+
					"rootFileDescriptorName conf.", "")
			}
			return InvalidData("deserialize ProtobufNative Schema failed",
				"org.apache.pulsar.client.api.SchemaSerializationException: "+cause)
		}
	case pb.Schema_String:
		if len(data) > 0 && string(data) != "null" {
			return InvalidData(fmt.Sprintf("Invalid schema definition data for string schema : '%s'", data), "")
		}
	case pb.Schema_KeyValue:
		k, v, ok := decodeKeyValueSchema(data, sc.GetProperties())
		if !ok {
			return Unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
		}
		if f := ValidateData(k); f != nil {
			return f
		}
		return ValidateData(v)
	case pb.Schema_None:
	case pb.Schema_AutoConsume:
		return InvalidData("Schema AUTO_CONSUME is a client-side schema type", "")
	default:
		if len(data) > 0 {
			return InvalidData(fmt.Sprintf("Invalid schema definition data for primitive schemas :length of schema "+
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
		for t, name := range TypeNames {
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

// Check checks a new schema against existing ones of its type
// (oldest first) as the SchemaCompatibilityCheck of that type does: latest
// is true for the single-schema form (the non-transitive strategies and the
// consumer's check), whose JSON check differs.
func Check(from []*pb.Schema, to *pb.Schema, strategy model.SchemaCompatibility, latest bool) *Failure {
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
	if strategy == model.SchemaAlwaysIncompatible {
		return Incompatible("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")
	}
	return nil
}

// checkAvro is Pulsar's Avro check: Avro's SchemaValidator for the
// strategy, against the newest schema or, for a transitive strategy, each
// one from the newest.
func checkAvro(from []*pb.Schema, to *pb.Schema, strategy model.SchemaCompatibility) *Failure {
	var existing []*avro.Schema
	for i := len(from) - 1; i >= 0; i-- {
		s, cause := ParseAvro(from[i].GetSchemaData())
		if s == nil {
			return Wrapped(cause)
		}
		existing = append(existing, s)
	}
	next, cause := ParseAvro(to.GetSchemaData())
	if next == nil {
		return Wrapped(cause)
	}
	fail := func(writer, reader *avro.Schema) *Failure {
		return Incompatible("Error during schema compatibility check with strategy %s: "+
			"org.apache.avro.SchemaValidationException: Unable to read schema: \n%s\nusing schema:\n%s",
			strategy, writer.Pretty(), reader.Pretty())
	}
	switch strategy {
	case model.SchemaAlwaysCompatible:
		return nil
	case model.SchemaBackward, model.SchemaForward, model.SchemaFull:
		existing = existing[:1]
	case model.SchemaBackwardTransitive, model.SchemaForwardTransitive, model.SchemaFullTransitive:
	default:
		return fail(next, next)
	}
	for _, old := range existing {
		// Each pair is the writer's schema and the reader's, in the order
		// Avro's validators try them.
		pairs := [][2]*avro.Schema{{old, next}}
		switch strategy {
		case model.SchemaForward, model.SchemaForwardTransitive:
			pairs = [][2]*avro.Schema{{next, old}}
		case model.SchemaFull, model.SchemaFullTransitive:
			pairs = [][2]*avro.Schema{{next, old}, {old, next}}
		}
		for _, p := range pairs {
			ok, err := avro.CanRead(p[0], p[1])
			var de *avro.DefaultError
			if errors.As(err, &de) {
				return Unexpected(de.JavaString())
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
func checkJSON(from, to *pb.Schema, strategy model.SchemaCompatibility) *Failure {
	fromAvro, _ := ParseAvro(from.GetSchemaData())
	toAvro, _ := ParseAvro(to.GetSchemaData())
	toID, toErr := jsonSchemaDefinition(to.GetSchemaData())
	switch {
	case fromAvro != nil && toAvro != nil:
		return checkAvro([]*pb.Schema{from}, to, strategy)
	case fromAvro != nil && toErr == "":
		return nil
	case fromAvro != nil:
		return Incompatible("Unknown schema format")
	}
	fromID, fromErr := jsonSchemaDefinition(from.GetSchemaData())
	switch {
	case fromErr != "" || toAvro != nil:
		return nil
	case toErr != "":
		return Incompatible("Unknown schema format")
	case fromID != toID:
		return Incompatible("Incompatible Schema from %s + to %s", from.GetSchemaData(), to.GetSchemaData())
	}
	return nil
}

// checkProtobufNative is Pulsar's PROTOBUF_NATIVE check: the root message
// may not change.
func checkProtobufNative(from, to *pb.Schema, strategy model.SchemaCompatibility) *Failure {
	fromRoot, cause := protobufNativeRoot(from.GetSchemaData())
	toRoot, toCause := protobufNativeRoot(to.GetSchemaData())
	if cause == "" {
		cause = toCause
	}
	if cause != "" && cause != rootMissing {
		return Unexpected("org.apache.pulsar.client.api.SchemaSerializationException: " + cause)
	}
	switch strategy {
	case model.SchemaAlwaysCompatible:
		return nil
	case model.SchemaAlwaysIncompatible:
		return Incompatible("Unknown SchemaCompatibilityStrategy.")
	}
	if fromRoot != toRoot {
		return Incompatible("Protobuf root message change is not allowed under the '%s' strategy. "+
			"Original message name: '%s', new message name: '%s'.", strategy, fromRoot, toRoot)
	}
	return nil
}

// checkKeyValue is Pulsar's KEY_VALUE check: the key and value types may
// not change, and each is checked as a schema of its type.
func checkKeyValue(from []*pb.Schema, to *pb.Schema, strategy model.SchemaCompatibility) *Failure {
	if strategy == model.SchemaAlwaysCompatible {
		return nil
	}
	toKey, toValue, ok := decodeKeyValueSchema(to.GetSchemaData(), to.GetProperties())
	if !ok {
		return Unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
	}
	var keys, values []*pb.Schema
	for _, f := range from {
		if f.GetType() != pb.Schema_KeyValue {
			return Incompatible("From schema is not a KEY_VALUE schema.")
		}
		k, v, ok := decodeKeyValueSchema(f.GetSchemaData(), f.GetProperties())
		if !ok {
			return Unexpected("java.nio.BufferUnderflowException: the key and value schemas' lengths exceed the data")
		}
		if k.GetType() != toKey.GetType() || v.GetType() != toValue.GetType() {
			return Incompatible("Key schemas or Value schemas are different schema type, from key schema type is %s "+
				"and to key schema is %s, from value schema is %s and to value schema is %s",
				kvTypeName(k), kvTypeName(toKey), kvTypeName(v), kvTypeName(toValue))
		}
		keys, values = append(keys, k), append(values, v)
	}
	if fail := Check(keys, toKey, strategy, false); fail != nil {
		return fail
	}
	return Check(values, toValue, strategy, false)
}

// kvTypeName names a key or value schema's type; an absent type is BYTES.
func kvTypeName(s *pb.Schema) string {
	if s.GetType() == pb.Schema_None {
		return "BYTES"
	}
	return TypeNames[s.GetType()]
}

// SameDefinition reports whether two schemas are the same version, as
// Pulsar's getSchemaVersionBySchemaData decides: for the types it reads
// with Avro's parser, equal parsed schemas of the same type (next is given
// parsed then); otherwise the same type and bytes. A stored definition
// that does not parse fails as Pulsar's parser does there.
func SameDefinition(have, next *pb.Schema, nextParsed *avro.Schema) (bool, *Failure) {
	if nextParsed != nil && ParsedByAvro(have.GetType()) {
		old, cause := ParseAvro(have.GetSchemaData())
		if old == nil {
			return false, Unexpected(cause)
		}
		return old.Equal(nextParsed) && have.GetType() == next.GetType(), nil
	}
	return have.GetType() == next.GetType() && bytes.Equal(have.GetSchemaData(), next.GetSchemaData()), nil
}

// TypeNames are Pulsar's names of the schema types, by wire number.
var TypeNames = map[pb.Schema_Type]string{
	pb.Schema_None: "NONE", pb.Schema_String: "STRING", pb.Schema_Json: "JSON",
	pb.Schema_Protobuf: "PROTOBUF", pb.Schema_Avro: "AVRO", pb.Schema_Bool: "BOOLEAN",
	pb.Schema_Int8: "INT8", pb.Schema_Int16: "INT16", pb.Schema_Int32: "INT32", pb.Schema_Int64: "INT64",
	pb.Schema_Float: "FLOAT", pb.Schema_Double: "DOUBLE", pb.Schema_Date: "DATE", pb.Schema_Time: "TIME",
	pb.Schema_Timestamp: "TIMESTAMP", pb.Schema_KeyValue: "KEY_VALUE", pb.Schema_Instant: "INSTANT",
	pb.Schema_LocalDate: "LOCAL_DATE", pb.Schema_LocalTime: "LOCAL_TIME",
	pb.Schema_LocalDateTime: "LOCAL_DATE_TIME", pb.Schema_ProtobufNative: "PROTOBUF_NATIVE",
	pb.Schema_AutoConsume: "AUTO_CONSUME",
}
