package broker_test

import (
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The fields of these answers are compared with Pulsar 4.0.8 by
// scenarios.TestDifferentialQueryAnswers; these tests keep them when no
// real broker is at hand.

func TestLastMessageIDCarriesPartitionAndBatchIndexAndABareMarkDelete(t *testing.T) {
	b := testkit.Start(t)
	c, ids := rawSubscriber(t, b, "last-id-partition-2", pb.CommandSubscribe_Exclusive, 2)
	c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(3))}))
	r := c.read().GetGetLastMessageIdResponse()
	if r == nil {
		t.Fatal("no GET_LAST_MESSAGE_ID_RESPONSE")
	}
	last, md := r.GetLastMessageId(), r.GetConsumerMarkDeletePosition()
	if last.GetEntryId() != ids[1].GetEntryId() || last.Partition == nil || last.GetPartition() != 2 ||
		last.BatchIndex == nil || last.GetBatchIndex() != -1 {
		t.Fatalf("last message id %v, want entry %d with partition 2 and batch index -1 set", last, ids[1].GetEntryId())
	}
	if md == nil || md.GetLedgerId() != ids[0].GetLedgerId() || md.Partition != nil || md.BatchIndex != nil {
		t.Fatalf("mark-delete position %v, want ledger %d with neither partition nor batch index", md, ids[0].GetLedgerId())
	}

	// A consumer the connection does not have: Pulsar 4.0.8's code.
	c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{
		ConsumerId: ptr(uint64(9)), RequestId: ptr(uint64(4))}))
	if e := c.read().GetError(); e == nil || e.GetError() != pb.ServerError_MetadataError || e.GetMessage() != "Consumer not found" {
		t.Fatalf("unknown consumer: %v, want MetadataError \"Consumer not found\"", e)
	}
}

func TestConsumerStatsAnswerLikePulsarAndAnUnknownConsumerClosesTheConnection(t *testing.T) {
	b := testkit.Start(t)
	c, _ := rawSubscriber(t, b, "consumer-stats", pb.CommandSubscribe_Shared, 3)
	c.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS, &pb.CommandConsumerStats{
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(3))}))
	r := c.read().GetConsumerStatsResponse()
	if r == nil {
		t.Fatal("no CONSUMER_STATS_RESPONSE")
	}
	if r.ErrorCode != nil || r.GetType() != "Shared" || r.GetMsgBacklog() != 3 ||
		!strings.HasPrefix(r.GetAddress(), "/127.0.0.1:") || r.ConnectedSince == nil ||
		r.MsgRateOut == nil || r.MsgThroughputOut == nil || r.MsgRateRedeliver == nil {
		t.Fatalf("stats %v, want Shared, backlog 3, a /ip:port address, the time and the rates", r)
	}

	c.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS, &pb.CommandConsumerStats{
		ConsumerId: ptr(uint64(9)), RequestId: ptr(uint64(4))}))
	if !c.closedByBroker() {
		t.Fatal("CONSUMER_STATS for an unknown consumer: the connection stayed open, Pulsar 4.0.8 closes it")
	}
}

func TestTopicsOfNamespaceSayWhetherTheyWereFiltered(t *testing.T) {
	b := testkit.Start(t)
	b.Publish("listed-a", broker.ProducerMessage{Payload: []byte("a")})
	b.Publish("other", broker.ProducerMessage{Payload: []byte("b")})
	c := dialRaw(t, addrOf(b))
	c.connect()
	for i, pattern := range []string{"", "persistent://public/default/listed-.*"} {
		g := &pb.CommandGetTopicsOfNamespace{Namespace: ptr("public/default"), RequestId: ptr(uint64(i))}
		if pattern != "" {
			g.TopicsPattern = ptr(pattern)
		}
		c.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, g))
		r := c.read().GetGetTopicsOfNamespaceResponse()
		want := map[bool]int{false: 2, true: 1}[pattern != ""]
		if r == nil || r.Filtered == nil || r.GetFiltered() != (pattern != "") || len(r.GetTopics()) != want {
			t.Fatalf("pattern %q: %v, want filtered=%v set and %d topics", pattern, r, pattern != "", want)
		}
	}
}

func TestMessagesNameTheirPartitionMinusOneOnATopicThatIsNotPartitioned(t *testing.T) {
	b := testkit.Start(t)
	for topic, want := range map[string]int32{"plain": -1, "parted-partition-3": 3} {
		c, _ := rawSubscriber(t, b, topic, pb.CommandSubscribe_Shared, 1)
		c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(1))}))
		m := c.read().GetMessage()
		if m == nil || m.GetMessageId().Partition == nil || m.GetMessageId().GetPartition() != want {
			t.Fatalf("%s: MESSAGE %v, want its id's partition set to %d", topic, m, want)
		}
	}
}
