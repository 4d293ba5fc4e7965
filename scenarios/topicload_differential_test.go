package scenarios_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A SUBSCRIBE that loads a topic (here after an unload) is answered once the
// topic has loaded, and until then the consumer does not exist for the
// commands that name it: a FLOW sent right behind the SUBSCRIBE, in the same
// write, is dropped, so no message comes until the client flows again. This
// is the window pulsar-client-go's zero-queue consumer relies on when a
// Receive races its reconnection.
func topicLoadStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	topic := tg.Topic("topic-load")
	c, err := tg.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	tg.Produce(topic, 2, nil)
	unload := func() {
		t.Helper()
		if status, body := httpDo(t, "PUT", admin+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/unload"); status/100 != 2 {
			t.Fatalf("unload: %d %s", status, body)
		}
	}
	unload()
	w := dialWire(t, tg.URL)
	w.lookup(topic)
	subscribe := func(consumer, request uint64) *pb.BaseCommand {
		return protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
			Topic: proto.String(topic), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
			ConsumerId: proto.Uint64(consumer), RequestId: proto.Uint64(request),
		})
	}
	together := func(cmds ...*pb.BaseCommand) {
		t.Helper()
		var b []byte
		for _, cmd := range cmds {
			b = protocol.AppendCommand(b, cmd)
		}
		if _, err := w.nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	flow := protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1)})
	together(subscribe(1, 7), flow)
	out := []string{"SUBSCRIBE and FLOW in one write: " + describeReply(w.read())}
	out = append(out, "then: "+strings.Join(describeAll(w.quietAnswers(describeReply)), ", "))
	w.send(flow)
	out = append(out, "FLOW after the answer: "+describeMessage(w.read()))
	// A second SUBSCRIBE of the consumer, now created, is answered at once.
	w.send(subscribe(1, 8))
	out = append(out, "the same SUBSCRIBE again: "+describeReply(w.read()))
	// While the topic loads, the same consumer's SUBSCRIBE again is refused,
	// and one closed before its answer is never answered.
	w.send(protocol.Base(pb.BaseCommand_CLOSE_CONSUMER, &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(13)}))
	out = append(out, "CLOSE_CONSUMER: "+describeReply(w.read()))
	unload()
	w.lookup(topic)
	together(subscribe(2, 9), subscribe(2, 10),
		subscribe(3, 11), protocol.Base(pb.BaseCommand_CLOSE_CONSUMER,
			&pb.CommandCloseConsumer{ConsumerId: proto.Uint64(3), RequestId: proto.Uint64(12)}))
	out = append(out, "two SUBSCRIBEs of one consumer, and a SUBSCRIBE and a CLOSE_CONSUMER, while the topic loads: "+
		strings.Join(describeAll(w.quietAnswers(describeReply)), ", "))
	return out
}

// describeReply names a SUCCESS or an ERROR with its request id.
func describeReply(cmd *pb.BaseCommand) string {
	switch {
	case cmd.Success != nil:
		return fmt.Sprintf("SUCCESS %d", cmd.Success.GetRequestId())
	case cmd.Error != nil:
		return fmt.Sprintf("ERROR %d %v %q", cmd.Error.GetRequestId(), cmd.Error.GetError(), cmd.Error.GetMessage())
	}
	return describe(cmd)
}

// describeAll names what answers reported, "nothing" for none.
func describeAll(got []string) []string {
	if len(got) == 0 {
		return []string{"nothing"}
	}
	return got
}

// describeMessage names a MESSAGE by its entry, anything else as describe
// does.
func describeMessage(cmd *pb.BaseCommand) string {
	if m := cmd.Message; m != nil {
		return "MESSAGE of the topic's first entry: " + boolText(m.GetMessageId().GetEntryId() == 0)
	}
	return describe(cmd)
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestDifferentialTopicLoadDropsEarlyFlow runs topicLoadStory on pulsarsim
// and on the real broker and compares what each answered.
func TestDifferentialTopicLoadDropsEarlyFlow(t *testing.T) {
	sameStoryOnBoth(t, topicLoadStory)
}

// TestSubscribeThatLoadsATopicIsAnsweredOnceLoaded runs topicLoadStory on
// pulsarsim alone, against what Pulsar 4.0.8 answered.
func TestSubscribeThatLoadsATopicIsAnsweredOnceLoaded(t *testing.T) {
	tg := scenarios.SimTarget(t)
	got := topicLoadStory(t, tg, tg.Sim.AdminURL())
	want := []string{
		"SUBSCRIBE and FLOW in one write: SUCCESS 7",
		"then: nothing",
		"FLOW after the answer: MESSAGE of the topic's first entry: yes",
		"the same SUBSCRIBE again: SUCCESS 8",
		"CLOSE_CONSUMER: SUCCESS 13",
		"two SUBSCRIBEs of one consumer, and a SUBSCRIBE and a CLOSE_CONSUMER, while the topic loads: " +
			`ERROR 10 ServiceNotReady "Consumer is already present on the connection", SUCCESS 12, SUCCESS 9`,
	}
	sameOnBoth(t, want, got)
}
