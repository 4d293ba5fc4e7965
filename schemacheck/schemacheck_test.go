package schemacheck_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/model"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/schemacheck"
)

func avroSchema(def string) *pb.Schema {
	return &pb.Schema{Name: proto.String("s"), Type: pb.Schema_Avro.Enum(), SchemaData: []byte(def)}
}

const (
	recordV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	// recordV2 adds a field without a default: old data cannot be read.
	recordV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`
)

// An Avro schema that adds a field without a default is refused under
// BACKWARD with an IncompatibleSchemaException, and accepted under FORWARD.
func TestAFieldWithoutDefaultIsBackwardIncompatible(t *testing.T) {
	from := []*pb.Schema{avroSchema(recordV1)}
	f := schemacheck.Check(from, avroSchema(recordV2), model.SchemaBackward, true)
	if f == nil || f.Class != schemacheck.IncompatibleClass || !errors.Is(f.Err(), model.ErrIncompatibleSchema) {
		t.Fatalf("BACKWARD: %+v, want an IncompatibleSchemaException", f)
	}
	if f := schemacheck.Check(from, avroSchema(recordV2), model.SchemaForward, true); f != nil {
		t.Fatalf("FORWARD: %+v, want compatible", f)
	}
}

// A definition that is not Avro is invalid schema data, named so in the
// producer's message.
func TestAMalformedAvroDefinitionIsInvalidData(t *testing.T) {
	f := schemacheck.ValidateData(avroSchema(`{"type":"record"`))
	if f == nil || !errors.Is(f.Err(), model.ErrInvalidSchemaData) {
		t.Fatalf("%+v, want invalid schema data", f)
	}
	if m := f.ProducerMessage(); !strings.Contains(m, "Invalid") {
		t.Fatalf("producer message %q", m)
	}
}
