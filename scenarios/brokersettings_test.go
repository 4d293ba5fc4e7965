package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Broker-wide settings that need a broker of their own, compared with a
// Pulsar standalone started with the same standalone.conf lines
// (brokerSettingsConf; scripts/oracle-check starts it):
// isSchemaValidationEnforced, and partitioned topics created on first use.

// brokerSettingsConf are the standalone.conf lines of the real broker that
// PULSAR_BROKER_SETTINGS_URL names.
const brokerSettingsConf = `isSchemaValidationEnforced=true
allowAutoTopicCreationType=partitioned
defaultNumPartitions=3
maxNumPartitionsPerPartitionedTopic=8
`

// brokerSettingsTargets returns pulsarsim started with the settings of
// brokerSettingsConf, and the real broker started with them, skipping the
// test without one.
func brokerSettingsTargets(t *testing.T) (sim, real *scenarios.Target) {
	url, admin := os.Getenv("PULSAR_BROKER_SETTINGS_URL"), os.Getenv("PULSAR_BROKER_SETTINGS_ADMIN_URL")
	if url == "" || admin == "" {
		t.Skip("set PULSAR_BROKER_SETTINGS_URL and PULSAR_BROKER_SETTINGS_ADMIN_URL to a Pulsar started with these " +
			"standalone.conf lines (scripts/real-pulsar --conf):\n" + brokerSettingsConf)
	}
	// The real broker must run with these settings.
	_, body := adminCall(t, "GET", admin+"/admin/v2/brokers/configuration/runtime", "")
	var runtime map[string]string
	_ = json.Unmarshal([]byte(body), &runtime)
	for _, line := range strings.Fields(brokerSettingsConf) {
		key, want, _ := strings.Cut(line, "=")
		if runtime[key] != want {
			t.Fatalf("the broker at %s runs with %s=%q, want %q: start it with --conf holding\n%s", admin, key,
				runtime[key], want, brokerSettingsConf)
		}
	}
	sim = scenarios.SimTarget(t, testkit.WithBroker(
		broker.WithDefaultPolicies(broker.Policies{SchemaValidationEnforced: new(true)}),
		broker.WithAutoTopicCreationType(broker.TopicTypePartitioned),
		broker.WithDefaultNumPartitions(3),
		broker.WithMaxPartitionsPerTopic(8)))
	sim.AdminURL = sim.Sim.AdminURL()
	return sim, scenarios.RemoteTarget(t, url, admin)
}

// schemaValidationStory registers a schema on a topic, sets the
// namespace's own schemaValidationEnforced to false, and tries a producer
// without a schema: the broker's setting refuses it all the same.
func schemaValidationStory(t *testing.T, tg *scenarios.Target) []string {
	ns := "public/" + strings.TrimPrefix(tg.Topic("sv"), "persistent://public/default/")
	topic := "persistent://" + ns + "/t"
	var out []string
	call := func(what, method, path, body string) {
		status, answer := adminCall(t, method, tg.AdminURL+path, body)
		out = append(out, fmt.Sprintf("%s: %d %s", what, status, answer))
	}
	call("create namespace", "PUT", "/admin/v2/namespaces/"+ns, "")
	call("namespace schemaValidationEnforced false", "POST", "/admin/v2/namespaces/"+ns+"/schemaValidationEnforced", "false")
	call("create topic", "PUT", "/admin/v2/persistent/"+ns+"/t", "")
	call("post a schema", "POST", "/admin/v2/schemas/"+ns+"/t/schema", `{"type":"STRING","schema":"","properties":{}}`)
	client := tg.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	out = append(out, "producer without a schema: "+brokerPart(err))
	if err == nil {
		p.Close()
	}
	p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil)})
	out = append(out, "producer with the schema: "+brokerPart(err))
	if err == nil {
		p.Close()
	}
	return out
}

// brokerPart is the broker's part of a pulsar-client-go error, "ok" for
// none.
func brokerPart(err error) string {
	if err == nil {
		return "ok"
	}
	msg := err.Error()
	if i := strings.Index(msg, "server error: "); i >= 0 {
		msg = msg[i:]
	}
	return msg
}

// partitionedOnFirstUse describes what each way of first using a topic
// creates when the broker creates partitioned topics: the partitioned
// metadata a client asks for, a producer and a consumer of pulsar-client-go,
// and a PRODUCER, a SUBSCRIBE and a LOOKUP on the wire.
func partitionedOnFirstUse(t *testing.T, tg *scenarios.Target) []string {
	var out []string
	// What exists under the topic's name: a partitioned topic and its
	// count, a non-partitioned topic, or nothing.
	partitions := func(topic string) string {
		listed := func(path string) bool {
			_, body := adminCall(t, "GET", tg.AdminURL+path, "")
			var names []string
			_ = json.Unmarshal([]byte(body), &names)
			return slices.Contains(names, topic)
		}
		switch {
		case listed("/admin/v2/persistent/public/default/partitioned"):
			_, body := adminCall(t, "GET", tg.AdminURL+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+
				"/partitions", "")
			return "partitioned " + body
		case listed("/admin/v2/persistent/public/default"):
			return "non-partitioned"
		}
		return "none"
	}
	client := tg.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := tg.Topic("auto-producer")
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := client.TopicPartitions(topic)
	out = append(out, fmt.Sprintf("pulsar-client-go producer: %d partitions (%v), then %s", len(parts), err, partitions(topic)))
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	topic = tg.Topic("auto-consumer")
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	out = append(out, "pulsar-client-go consumer: then "+partitions(topic))

	w := dialWire(t, tg.URL)
	for i, step := range []struct {
		what string
		cmd  func(topic string) *pb.BaseCommand
	}{
		{"PARTITIONED_METADATA without auto-creation", func(topic string) *pb.BaseCommand {
			return protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
				Topic: proto.String(topic), RequestId: proto.Uint64(1)})
		}},
		{"PARTITIONED_METADATA with auto-creation", func(topic string) *pb.BaseCommand {
			return protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
				Topic: proto.String(topic), RequestId: proto.Uint64(2), MetadataAutoCreationEnabled: proto.Bool(true)})
		}},
		{"LOOKUP", func(topic string) *pb.BaseCommand {
			return protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(3)})
		}},
		{"PRODUCER", func(topic string) *pb.BaseCommand {
			return protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
				ProducerId: proto.Uint64(4), RequestId: proto.Uint64(4)})
		}},
		{"SUBSCRIBE", func(topic string) *pb.BaseCommand {
			return protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
				Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
				ConsumerId: proto.Uint64(5), RequestId: proto.Uint64(5)})
		}},
	} {
		topic := tg.Topic(fmt.Sprint("auto-wire-", i))
		if step.what == "PRODUCER" || step.what == "SUBSCRIBE" {
			w.lookup(topic)
		}
		w.send(step.cmd(topic))
		answer := producerAnswer(w.read())
		out = append(out, fmt.Sprintf("%s: %s, then %s", step.what, strings.ReplaceAll(answer, topic, "{topic}"), partitions(topic)))
	}
	return out
}

// partitionLimitStory sets a namespace's autoTopicCreation policy over and
// at maxNumPartitionsPerPartitionedTopic, and creates a topic of it.
func partitionLimitStory(t *testing.T, tg *scenarios.Target) []string {
	ns := "public/" + strings.TrimPrefix(tg.Topic("limit"), "persistent://public/default/")
	var out []string
	call := func(method, path, body string) {
		status, answer := adminCall(t, method, tg.AdminURL+path, body)
		out = append(out, fmt.Sprintf("%s %s %s -> %d %s", method, strings.ReplaceAll(path, ns, "{ns}"), body, status, answer))
	}
	call("PUT", "/admin/v2/namespaces/"+ns, "")
	policy := "/admin/v2/namespaces/" + ns + "/autoTopicCreation"
	call("POST", policy, `{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":9}`)
	call("POST", policy, `{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":8}`)
	call("GET", policy, "")
	parts, err := tg.Client().TopicPartitions("persistent://" + ns + "/t")
	return append(out, fmt.Sprintf("a client's new topic: %d partitions (%v)", len(parts), err))
}

// TestBrokerWideSettingsMatchPulsar compares pulsarsim and Pulsar started
// with the same broker-wide settings (brokerSettingsConf).
func TestBrokerWideSettingsMatchPulsar(t *testing.T) {
	sim, real := brokerSettingsTargets(t)
	t.Run("isSchemaValidationEnforced", func(t *testing.T) {
		sameOnBoth(t, schemaValidationStory(t, real), schemaValidationStory(t, sim))
	})
	t.Run("allowAutoTopicCreationType=partitioned", func(t *testing.T) {
		sameOnBoth(t, partitionedOnFirstUse(t, real), partitionedOnFirstUse(t, sim))
	})
	t.Run("maxNumPartitionsPerPartitionedTopic", func(t *testing.T) {
		sameOnBoth(t, partitionLimitStory(t, real), partitionLimitStory(t, sim))
	})
}
