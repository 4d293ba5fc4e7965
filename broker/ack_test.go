package broker_test

import (
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// rawSubscriber connects, publishes n messages to topic and subscribes
// consumer 1 of type typ from the earliest message; it returns the client
// and the ids of the messages.
func rawSubscriber(t *testing.T, b *testkit.Broker, topic string, typ pb.CommandSubscribe_SubType, n int) (*rawClient, []*pb.MessageIdData) {
	t.Helper()
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer(topic, 1)
	var ids []*pb.MessageIdData
	for i := 0; i < n; i++ {
		c.write(sendFrame(1, uint64(i), []byte("m")))
		r := c.read()
		if r.SendReceipt == nil {
			t.Fatalf("send: %v", r.GetType())
		}
		ids = append(ids, r.SendReceipt.MessageId)
	}
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: ptr(topic), Subscription: ptr("s"), SubType: typ.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(2)), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("subscribe: %v %v", r.GetType(), r.GetError())
	}
	return c, ids
}

// ack sends an ACK with a request id and returns the ACK_RESPONSE.
func (c *rawClient) ack(a *pb.CommandAck) *pb.CommandAckResponse {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_ACK, a))
	r := c.read()
	if r.AckResponse == nil {
		c.t.Fatalf("got %v, want ACK_RESPONSE", r.GetType())
	}
	return r.AckResponse
}

func TestAckWithATransactionIsRefusedWhileTransactionsAreOff(t *testing.T) {
	b := testkit.Start(t)
	for _, typ := range []pb.CommandSubscribe_SubType{pb.CommandSubscribe_Shared, pb.CommandSubscribe_Exclusive} {
		for _, kind := range []pb.CommandAck_AckType{pb.CommandAck_Individual, pb.CommandAck_Cumulative} {
			topic := "txn-ack-" + typ.String() + "-" + kind.String()
			c, ids := rawSubscriber(t, b, topic, typ, 1)
			r := c.ack(&pb.CommandAck{
				ConsumerId: ptr(uint64(1)), AckType: kind.Enum(), MessageId: ids,
				TxnidMostBits: ptr(uint64(0)), TxnidLeastBits: ptr(uint64(7)), RequestId: ptr(uint64(9)),
			})
			ignored := kind == pb.CommandAck_Cumulative && typ == pb.CommandSubscribe_Shared
			switch {
			case ignored && r.Error != nil:
				t.Fatalf("%s: a cumulative ack on Shared is ignored before its transaction is looked at; got %v", topic, r.GetError())
			case !ignored && (r.GetError() != pb.ServerError_NotAllowedError ||
				!strings.Contains(r.GetMessage(), "Server don't support transaction ack!")):
				t.Fatalf("%s: got %v %q, want NotAllowedError", topic, r.GetError(), r.GetMessage())
			}
			if got := b.Sub(topic, "s").Backlog; got != 1 {
				t.Fatalf("%s: backlog %d after a refused ack, want 1", topic, got)
			}
		}
	}
}

func TestAckForAnUnknownConsumerGetsNoAnswer(t *testing.T) {
	b := testkit.Start(t)
	c, ids := rawSubscriber(t, b, "ack-unknown", pb.CommandSubscribe_Shared, 1)
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{
		ConsumerId: ptr(uint64(42)), AckType: pb.CommandAck_Individual.Enum(), MessageId: ids, RequestId: ptr(uint64(5)),
	}))
	// The next answer on the connection is the one to the next request.
	if r := c.ack(&pb.CommandAck{
		ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Individual.Enum(), MessageId: ids, RequestId: ptr(uint64(6)),
	}); r.GetRequestId() != 6 || r.Error != nil {
		t.Fatalf("got %v", r)
	}
}

func TestCumulativeAckNamingSeveralMessagesIsIgnored(t *testing.T) {
	b := testkit.Start(t)
	c, ids := rawSubscriber(t, b, "ack-multi", pb.CommandSubscribe_Exclusive, 3)
	r := c.ack(&pb.CommandAck{
		ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[1:], RequestId: ptr(uint64(5)),
	})
	if r.Error != nil {
		t.Fatalf("got %v, want success", r.GetError())
	}
	if got := b.Sub("ack-multi", "s").Backlog; got != 3 {
		t.Fatalf("backlog %d, want 3", got)
	}
	// One id is a cumulative ack.
	c.ack(&pb.CommandAck{
		ConsumerId: ptr(uint64(1)), AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[1:2], RequestId: ptr(uint64(6)),
	})
	if got := b.Sub("ack-multi", "s").Backlog; got != 1 {
		t.Fatalf("backlog %d after a cumulative ack of the second message, want 1", got)
	}
}

func TestKeySharedConsumerWithAnotherPolicyIsRefused(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	first := subscribe(t, client, pulsar.ConsumerOptions{Topic: "ks-policy", SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: true}})
	defer first.Close()
	for _, c := range []struct {
		policy *pulsar.KeySharedPolicy
		want   string
	}{
		{&pulsar.KeySharedPolicy{}, "Active subscription allows out of order delivery while the connecting consumer does not allow it."},
		{&pulsar.KeySharedPolicy{Mode: pulsar.KeySharedPolicyModeSticky, HashRanges: []int{0, 100}, AllowOutOfOrderDelivery: true},
			"Active subscription key_shared mode of 'AUTO_SPLIT' is different than the connecting consumer's key_shared mode 'STICKY'."},
	} {
		_, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "ks-policy", SubscriptionName: "s", Type: pulsar.KeyShared,
			KeySharedPolicy: c.policy})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("policy %+v: err = %v, want %q", c.policy, err, c.want)
		}
	}
}
