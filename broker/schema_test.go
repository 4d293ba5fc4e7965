package broker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// record is an Avro record R with the given fields.
func record(fields string) string {
	return `{"type":"record","name":"R","namespace":"x","fields":[` + fields + `]}`
}

// producerErr creates a producer with schema s and closes it, returning
// the error.
func producerErr(c pulsar.Client, topic string, s pulsar.Schema) error {
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: s})
	if err == nil {
		p.Close()
	}
	return err
}

// consumerErr subscribes with schema s and closes the consumer.
func consumerErr(c pulsar.Client, topic, sub string, s pulsar.Schema) error {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Schema: s})
	if err == nil {
		cons.Close()
	}
	return err
}

// wantRefused checks that err is the broker's IncompatibleSchema with a
// message that contains want.
func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want IncompatibleSchema with %q", err, want)
	}
}

func TestAvroProducerWithAnIncompatibleSchemaIsRefusedUnderTheDefaultFullStrategy(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/avro-full"
	v1 := pulsar.NewAvroSchema(record(`{"name":"a","type":"string"}`), nil)
	withDefault := pulsar.NewAvroSchema(record(`{"name":"a","type":"string"},{"name":"b","type":"int","default":0}`), nil)
	withoutDefault := pulsar.NewAvroSchema(record(`{"name":"a","type":"string"},{"name":"c","type":"int"}`), nil)
	if err := producerErr(c, topic, v1); err != nil {
		t.Fatal(err)
	}
	if err := producerErr(c, topic, withDefault); err != nil {
		t.Fatalf("a field added with a default: %v", err)
	}
	err := producerErr(c, topic, withoutDefault)
	wantRefused(t, err, "Error during schema compatibility check with strategy FULL: org.apache.avro.SchemaValidationException: "+
		"Unable to read schema: \n{\n  \"type\" : \"record\",\n  \"name\" : \"R\",\n  \"namespace\" : \"x\",")
	if list, _ := b.Schemas(topic); len(list) != 2 {
		t.Fatalf("versions %+v, want the two compatible ones", list)
	}
	// The producer's own schema again is its version, not a new one.
	if err := producerErr(c, topic, v1); err != nil {
		t.Fatal(err)
	}
	if list, _ := b.Schemas(topic); len(list) != 2 {
		t.Fatalf("versions %+v after the first schema again", list)
	}
}

func TestProducerWithAnotherSchemaTypeIsRefused(t *testing.T) {
	_, c := startBroker(t)
	const topic = "persistent://public/default/type-change"
	if err := producerErr(c, topic, pulsar.NewAvroSchema(record(`{"name":"a","type":"string"}`), nil)); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, producerErr(c, topic, pulsar.NewStringSchema(nil)),
		"Incompatible schema: exists schema type AVRO, new schema type STRING")
	// A producer without a schema is welcome while validation is not
	// enforced.
	if err := producerErr(c, topic, nil); err != nil {
		t.Fatalf("a producer without schema: %v", err)
	}
}

func TestConsumerSchemaMustReadTheNewestSchema(t *testing.T) {
	_, c := startBroker(t)
	const topic = "persistent://public/default/consumer-schema"
	written := record(`{"name":"a","type":"string"},{"name":"b","type":"int","default":0}`)
	if err := producerErr(c, topic, pulsar.NewAvroSchema(written, nil)); err != nil {
		t.Fatal(err)
	}
	// Under FULL a consumer's schema is checked as BACKWARD: it must read
	// what the newest schema writes.
	err := consumerErr(c, topic, "s", pulsar.NewAvroSchema(record(`{"name":"a","type":"string"},{"name":"c","type":"int"}`), nil))
	wantRefused(t, err, "Error during schema compatibility check with strategy BACKWARD")
	if err := consumerErr(c, topic, "s", pulsar.NewAvroSchema(record(`{"name":"a","type":"string"}`), nil)); err != nil {
		t.Fatalf("a reader of a subset of the fields: %v", err)
	}
	wantRefused(t, consumerErr(c, topic, "s", pulsar.NewStringSchema(nil)),
		"Incompatible schema: exists schema type AVRO, new schema type STRING")
}

func TestConsumerOnAnIdleTopicRegistersItsSchema(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/idle-consumer"
	if err := consumerErr(c, topic, "s", pulsar.NewStringSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if s, err := b.Schema(topic, -1); err != nil || s.Type != "STRING" {
		t.Fatalf("schema %+v, %v", s, err)
	}
	wantRefused(t, consumerErr(c, topic, "s2", pulsar.NewInt32Schema(nil)),
		"Incompatible schema: exists schema type STRING, new schema type INT32")
}

func TestWithoutAutoUpdateOnlyRegisteredSchemasAreTaken(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/no-auto-update"
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.AllowAutoUpdateSchema = new(false) }); err != nil {
		t.Fatal(err)
	}
	s := record(`{"name":"a","type":"string"}`)
	wantRefused(t, producerErr(c, topic, pulsar.NewAvroSchema(s, nil)), "Schema not found and schema auto updating is disabled.")
	wantRefused(t, consumerErr(c, "persistent://public/default/no-auto-update-2", "s", pulsar.NewAvroSchema(s, nil)),
		"Schema not found and schema auto updating is disabled.")
	if _, err := b.PutSchema(topic, broker.Schema{Type: "AVRO", Data: []byte(s)}); err != nil {
		t.Fatalf("the admin API registers schemas whatever the setting: %v", err)
	}
	if err := producerErr(c, topic, pulsar.NewAvroSchema(s, nil)); err != nil {
		t.Fatalf("a registered schema: %v", err)
	}
}

func TestSchemaValidationEnforcedRefusesProducersWithoutASchema(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/enforced"
	if err := producerErr(c, topic, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaValidationEnforced = new(true) }); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, producerErr(c, topic, nil), "Producers cannot connect or send message without a schema to topics with a schema")
	if err := consumerErr(c, topic, "s", nil); err != nil {
		t.Fatalf("consumers without a schema stay welcome: %v", err)
	}
}

func TestTransitiveStrategyChecksEveryVersion(t *testing.T) {
	b, c := startBroker(t)
	v1 := record(`{"name":"a","type":"int"}`)
	v2 := record(`{"name":"a","type":"int"},{"name":"b","type":"int","default":0}`)
	v3 := record(`{"name":"a","type":"int"},{"name":"b","type":"int"}`) // reads v2's data, not v1's
	for strategy, accepted := range map[broker.SchemaCompatibility]bool{broker.SchemaBackward: true, broker.SchemaBackwardTransitive: false} {
		topic := "persistent://public/default/transitive-" + strings.ToLower(string(strategy))
		if err := b.CreateTopic(topic); err != nil {
			t.Fatal(err)
		}
		if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = &strategy }); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{v1, v2} {
			if err := producerErr(c, topic, pulsar.NewAvroSchema(s, nil)); err != nil {
				t.Fatal(err)
			}
		}
		err := producerErr(c, topic, pulsar.NewAvroSchema(v3, nil))
		if accepted && err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		if !accepted {
			wantRefused(t, err, "strategy BACKWARD_TRANSITIVE")
		}
	}
}

func TestADeletedSchemaLetsAnySchemaFollowUnderTheNextVersion(t *testing.T) {
	b, c := startBroker(t)
	const topic = "persistent://public/default/deleted-schema"
	if err := producerErr(c, topic, pulsar.NewStringSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if v, err := b.DeleteSchema(topic, false); err != nil || v != 1 {
		t.Fatalf("delete: version %d, %v", v, err)
	}
	if err := producerErr(c, topic, pulsar.NewInt64Schema(nil)); err != nil {
		t.Fatalf("a new type after the deletion: %v", err)
	}
	s, err := b.Schema(topic, -1)
	if err != nil || s.Version != 2 || s.Type != "INT64" {
		t.Fatalf("newest %+v, %v", s, err)
	}
	if _, err := b.Schema(topic, 0); !errors.Is(err, broker.ErrSchemaNotFound) {
		t.Fatalf("the deleted version: %v", err)
	}
	if v, err := b.DeleteSchema(topic, true); err != nil || v != -1 {
		t.Fatalf("forced delete: %d, %v", v, err)
	}
	if v, err := b.PutSchema(topic, broker.Schema{Type: "STRING"}); err != nil || v != 0 {
		t.Fatalf("after a forced delete versions start again: %d, %v", v, err)
	}
}

func TestProtobufNativeRootMessageMayNotChange(t *testing.T) {
	_, c := startBroker(t)
	const topic = "persistent://public/default/proto-native"
	if err := producerErr(c, topic, pulsar.NewProtoNativeSchemaWithMessage(&descriptorpb.FileDescriptorProto{}, nil)); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, producerErr(c, topic, pulsar.NewProtoNativeSchemaWithMessage(&descriptorpb.DescriptorProto{}, nil)),
		"Protobuf root message change is not allowed under the 'FULL' strategy. "+
			"Original message name: 'google.protobuf.FileDescriptorProto', new message name: 'google.protobuf.DescriptorProto'.")
}

func TestKeyValueSchemasKeepTheirKeyAndValueTypes(t *testing.T) {
	b, _ := startBroker(t)
	const topic = "persistent://public/default/key-value"
	// A KEY_VALUE schema's data is the key's definition and the value's,
	// each after its length; their types are in the properties.
	kv := func(valueType, valueDef string) broker.Schema {
		data := append([]byte{0, 0, 0, 0, 0, 0, 0, byte(len(valueDef))}, valueDef...)
		return broker.Schema{Type: "KEY_VALUE", Data: data,
			Properties: map[string]string{"key.schema.type": "STRING", "value.schema.type": valueType}}
	}
	if _, err := b.PutSchema(topic, kv("AVRO", record(`{"name":"a","type":"string"}`))); err != nil {
		t.Fatal(err)
	}
	_, err := b.PutSchema(topic, kv("JSON", record(`{"name":"b","type":"string"}`)))
	if !errors.Is(err, broker.ErrIncompatibleSchema) || !strings.Contains(err.Error(), "Key schemas or Value schemas are "+
		"different schema type, from key schema type is STRING and to key schema is STRING, from value schema is AVRO "+
		"and to value schema is JSON") {
		t.Fatalf("a value type change: %v", err)
	}
	_, err = b.PutSchema(topic, kv("AVRO", record(`{"name":"b","type":"string"}`)))
	if !errors.Is(err, broker.ErrIncompatibleSchema) || !strings.Contains(err.Error(), "Unable to read schema") {
		t.Fatalf("an incompatible value schema: %v", err)
	}
	if _, err := b.PutSchema(topic, kv("AVRO", record(`{"name":"a","type":"string"},{"name":"b","type":"int","default":1}`))); err != nil {
		t.Fatalf("a compatible value schema: %v", err)
	}
}

// Pulsar cannot read a PRODUCER whose schema has a type it does not know,
// and closes the connection; an AUTO_CONSUME consumer takes any schema.
func TestSchemaTypesOnTheWire(t *testing.T) {
	b, _ := startBroker(t)
	const topic = "persistent://public/default/wire-types"
	if _, err := b.PutSchema(topic, broker.Schema{Type: "STRING"}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr().String())
	c.connect()
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1),
		Schema: &pb.Schema{Name: proto.String("a"), Type: pb.Schema_AutoConsume.Enum(), SchemaData: []byte{}},
	}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("AUTO_CONSUME consumer: %v %v", r.GetType(), r.GetError())
	}
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(2),
		Schema: &pb.Schema{Name: proto.String("a"), Type: pb.Schema_Type(99).Enum(), SchemaData: []byte{}},
	}))
	if !c.closedByBroker() {
		t.Fatal("a schema type Pulsar does not know: the connection stays open")
	}
}
