package scenarios_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A partition past a partitioned topic's count, and a read-compacted
// consumer on a non-persistent topic: Pulsar refuses both, the first with
// TopicNotFound until the topic grows to include the partition.

// partitionPastTheCount produces to and subscribes to partition 2 of a
// topic with 2 partitions, before and after the topic grows to 3.
func partitionPastTheCount(t *testing.T, url, admin, topic string) []string {
	path := admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/partitions"
	if status, body := adminCall(t, "PUT", path, "2"); status/100 != 2 {
		t.Fatalf("create 2 partitions: %d %s", status, body)
	}
	c := dialWire(t, url)
	partition := topic + "-partition-2"
	var out []string
	defer func() {
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], topic, "{topic}")
		}
	}()
	try := func(when string, id uint64) {
		c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
			Topic: proto.String(partition), RequestId: proto.Uint64(id)}))
		out = append(out, when+", partitioned metadata: "+describe(c.read()))
		c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
			Topic: proto.String(partition), RequestId: proto.Uint64(id + 4), MetadataAutoCreationEnabled: proto.Bool(true)}))
		out = append(out, when+", partitioned metadata with auto-creation: "+describe(c.read()))
		c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(partition), RequestId: proto.Uint64(id + 1)}))
		out = append(out, when+", lookup: "+describe(c.read()))
		c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(partition),
			ProducerId: proto.Uint64(id), RequestId: proto.Uint64(id + 2)}))
		out = append(out, when+", producer: "+producerAnswer(c.read()))
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(partition),
			Subscription: proto.String("sub"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
			ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(id + 3)}))
		out = append(out, when+", subscribe: "+describe(c.read()))
		c.send(protocol.Base(pb.BaseCommand_CLOSE_CONSUMER, &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(id),
			RequestId: proto.Uint64(id + 5)}))
		c.read()
	}
	try("2 partitions", 10)
	if status, body := adminCall(t, "POST", path, "3"); status/100 != 2 {
		t.Fatalf("grow to 3 partitions: %d %s", status, body)
	}
	try("3 partitions", 20)
	return out
}

// TestDifferentialPartitionPastTheCountIsNotFound compares the answers to a
// partition the partitioned topic does not have yet.
func TestDifferentialPartitionPastTheCountIsNotFound(t *testing.T) {
	sameStoryOnBoth(t, func(t *testing.T, tg *scenarios.Target, admin string) []string {
		return partitionPastTheCount(t, tg.URL, admin, tg.Topic("past-count"))
	})
}

// TestProducerOnAPartitionPastTheCountFails checks, with pulsar-client-go,
// that a producer on partition 2 of a 2-partition topic is refused, and
// created once the topic has 3 partitions.
func TestProducerOnAPartitionPastTheCountFails(t *testing.T) {
	b := scenarios.SimTarget(t).Sim
	b.CreatePartitionedTopic("past-count", 2)
	client := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "past-count-partition-2", SendTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "TopicNotFound") {
		t.Fatalf("producer on partition 2 of 2: %v, want TopicNotFound", err)
	}
	if _, ok := b.Topic("past-count-partition-2"); ok {
		t.Fatal("the refused producer created the partition")
	}
	b.UpdatePartitionedTopic("past-count", 3)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "past-count-partition-2"})
	if err != nil {
		t.Fatalf("producer on partition 2 of 3: %v", err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
}

// readCompactedNonPersistent subscribes read-compacted consumers of each
// type to a non-persistent topic on the wire, and opens a pulsar-client-go
// reader that reads compacted.
func readCompactedNonPersistent(t *testing.T, tg *scenarios.Target, _ string) []string {
	topic := strings.Replace(tg.Topic("np-compacted"), "persistent://", "non-persistent://", 1)
	c := dialWire(t, tg.URL)
	c.lookup(topic)
	var out []string
	for i, typ := range []pb.CommandSubscribe_SubType{pb.CommandSubscribe_Exclusive, pb.CommandSubscribe_Failover,
		pb.CommandSubscribe_Shared, pb.CommandSubscribe_Key_Shared} {
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
			Subscription: proto.String(fmt.Sprint("sub-", i)), SubType: typ.Enum(), ReadCompacted: proto.Bool(true),
			ConsumerId: proto.Uint64(uint64(i)), RequestId: proto.Uint64(uint64(100 + i))}))
		out = append(out, fmt.Sprintf("%v read-compacted: %s", typ, describe(c.read())))
	}
	r, err := tg.Client().CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(),
		ReadCompacted: true})
	msg := "created"
	if err == nil {
		r.Close()
	} else {
		msg = err.Error()
		if i := strings.Index(msg, "server error: "); i >= 0 {
			msg = msg[i:]
		}
	}
	return append(out, "pulsar-client-go reader with ReadCompacted: "+msg)
}

// TestDifferentialReadCompactedOnANonPersistentTopicIsRefused compares the
// answers to read-compacted consumers and readers of a non-persistent topic.
func TestDifferentialReadCompactedOnANonPersistentTopicIsRefused(t *testing.T) {
	sameStoryOnBoth(t, readCompactedNonPersistent)
}
