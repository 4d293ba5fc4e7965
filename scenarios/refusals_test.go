package scenarios_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// What Pulsar refuses or ignores, compared on the wire: no client library
// sends an ack with a transaction id to a broker without transactions, or a
// cumulative ack naming two messages, and pulsar-client-go hides the answers'
// codes behind its own errors.

// wireClient speaks the binary protocol by hand.
type wireClient struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialWire(t *testing.T, url string) *wireClient {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "pulsar://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &wireClient{t: t, nc: nc, r: bufio.NewReader(nc)}
	c.send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("fidelity-diff"), ProtocolVersion: proto.Int32(20),
	}))
	if r := c.read(); r.Connected == nil {
		t.Fatalf("handshake: %v", r.GetType())
	}
	return c
}

func (c *wireClient) send(cmd *pb.BaseCommand) {
	if _, err := c.nc.Write(protocol.AppendCommand(nil, cmd)); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next command other than PING (answered) and
// ACTIVE_CONSUMER_CHANGE.
func (c *wireClient) read() *pb.BaseCommand {
	c.t.Helper()
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			c.t.Fatal(err)
		}
		switch f.Command.GetType() {
		case pb.BaseCommand_PING:
			c.send(protocol.PongCommand())
		case pb.BaseCommand_ACTIVE_CONSUMER_CHANGE:
		default:
			return f.Command
		}
	}
}

// publish sends n messages with producer 1 and returns their ids.
func (c *wireClient) publish(topic string, n int) []*pb.MessageIdData {
	c.t.Helper()
	c.lookup(topic)
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1),
	}))
	if r := c.read(); r.ProducerSuccess == nil {
		c.t.Fatalf("producer: %v %v", r.GetType(), r.GetError())
	}
	var ids []*pb.MessageIdData
	for i := range n {
		md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(i)),
			PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
		cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1),
			SequenceId: proto.Uint64(uint64(i)), NumMessages: proto.Int32(1)})
		if _, err := c.nc.Write(protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, []byte("m")))); err != nil {
			c.t.Fatal(err)
		}
		r := c.read()
		if r.SendReceipt == nil {
			c.t.Fatalf("send: %v", r.GetType())
		}
		ids = append(ids, r.SendReceipt.MessageId)
	}
	return ids
}

// lookup looks topic up, as clients do before they produce or subscribe: it
// makes a real broker load the topic's bundle (without it, a fresh broker
// answers ServiceNotReady).
func (c *wireClient) lookup(topic string) {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
	if r := c.read(); r.GetLookupTopicResponse().GetResponse() != pb.CommandLookupTopicResponse_Connect {
		c.t.Fatalf("lookup: %v", r)
	}
}

// subscribe looks topic up, attaches consumer id to the subscription "sub"
// from the earliest message, without permits, and returns the broker's
// answer.
func (c *wireClient) subscribe(topic string, id uint64, typ pb.CommandSubscribe_SubType) string {
	c.t.Helper()
	c.lookup(topic)
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String("sub"), SubType: typ.Enum(),
		ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(100 + id), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}))
	return describe(c.read())
}

// ackAnswer describes an ACK_RESPONSE, or the answer that came instead.
func ackAnswer(cmd *pb.BaseCommand) string {
	r := cmd.AckResponse
	if r == nil {
		return describe(cmd)
	}
	if r.Error == nil {
		return fmt.Sprintf("ACK_RESPONSE %d ok", r.GetRequestId())
	}
	return fmt.Sprintf("ACK_RESPONSE %d %v %q", r.GetRequestId(), r.GetError(), r.GetMessage())
}

// ackRefusals sends the acks Pulsar refuses or ignores and describes the
// answers, with the mark-delete position after each (relative to the first
// message; -1 is before it).
func ackRefusals(t *testing.T, url, topic string) []string {
	c := dialWire(t, url)
	ids := c.publish(topic, 3)
	var out []string
	out = append(out, "subscribe Exclusive: "+c.subscribe(topic, 1, pb.CommandSubscribe_Exclusive))
	markDelete := func() string {
		c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{
			ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(900)}))
		r := c.read().GetGetLastMessageIdResponse()
		md := r.GetConsumerMarkDeletePosition()
		return fmt.Sprintf("mark-delete %d", int64(md.GetEntryId())-int64(ids[0].GetEntryId()))
	}
	acks := []struct {
		what string
		ack  *pb.CommandAck
	}{
		{"individual with a transaction", &pb.CommandAck{AckType: pb.CommandAck_Individual.Enum(), MessageId: ids[:1],
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(5)}},
		{"cumulative with a transaction", &pb.CommandAck{AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[:1],
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(6)}},
		{"cumulative naming two messages", &pb.CommandAck{AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[1:]}},
	}
	for i, a := range acks {
		a.ack.ConsumerId = proto.Uint64(1)
		a.ack.RequestId = proto.Uint64(uint64(10 + i))
		c.send(protocol.Base(pb.BaseCommand_ACK, a.ack))
		out = append(out, a.what+": "+ackAnswer(c.read())+", "+markDelete())
	}
	// An ack for a consumer the connection does not have: no answer, so the
	// next answer is the next request's.
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(77), RequestId: proto.Uint64(20),
		AckType: pb.CommandAck_Individual.Enum(), MessageId: ids[:1]}))
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(21),
		AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[:1]}))
	out = append(out, "unknown consumer, then a cumulative ack of the first message: "+ackAnswer(c.read()))
	// Shared ignores a cumulative ack before it looks at the transaction.
	out = append(out, "subscribe Shared on another subscription: "+func() string {
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
			Topic: proto.String(topic), Subscription: proto.String("shared"), SubType: pb.CommandSubscribe_Shared.Enum(),
			ConsumerId: proto.Uint64(2), RequestId: proto.Uint64(102), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
		}))
		return describe(c.read())
	}())
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(2), RequestId: proto.Uint64(30),
		AckType: pb.CommandAck_Cumulative.Enum(), MessageId: ids[:1], TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(7)}))
	out = append(out, "Shared, cumulative with a transaction: "+ackAnswer(c.read()))
	return out
}

// TestDifferentialAckRefusals compares how both brokers answer the acks
// Pulsar refuses (a transaction id while transactions are off) or ignores (a
// cumulative ack naming more than one message, or on Shared), and that an
// ack for an unknown consumer gets no answer.
func TestDifferentialAckRefusals(t *testing.T) {
	url := oracleURL(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, "")
	got := ackRefusals(t, sim.URL, sim.Topic("ack-refusals"))
	want := ackRefusals(t, real.URL, real.Topic("ack-refusals"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}

// subscribeRefusals subscribes consumers that the subscription's first
// consumer makes unwelcome and returns the errors pulsar-client-go reports.
func subscribeRefusals(t *testing.T, tg *scenarios.Target) []string {
	client := tg.Client()
	var out []string
	try := func(topic string, first, second pulsar.ConsumerOptions) {
		for _, o := range []*pulsar.ConsumerOptions{&first, &second} {
			o.Topic, o.SubscriptionName = topic, "sub"
		}
		c, err := client.Subscribe(first)
		if err != nil {
			t.Fatalf("first consumer: %v", err)
		}
		defer c.Close()
		_, err = client.Subscribe(second)
		msg := "accepted"
		if err != nil {
			// pulsar-client-go wraps the broker's message; keep the
			// broker's part.
			msg = err.Error()
			if i := strings.Index(msg, "server error: "); i >= 0 {
				msg = msg[i:]
			}
		}
		out = append(out, msg)
	}
	try(tg.Topic("refuse-type"), pulsar.ConsumerOptions{Type: pulsar.Shared}, pulsar.ConsumerOptions{Type: pulsar.Failover})
	try(tg.Topic("refuse-mode"), pulsar.ConsumerOptions{Type: pulsar.KeyShared},
		pulsar.ConsumerOptions{Type: pulsar.KeyShared, KeySharedPolicy: &pulsar.KeySharedPolicy{
			Mode: pulsar.KeySharedPolicyModeSticky, HashRanges: []int{0, 65535}}})
	try(tg.Topic("refuse-order"), pulsar.ConsumerOptions{Type: pulsar.KeyShared},
		pulsar.ConsumerOptions{Type: pulsar.KeyShared, KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: true}})
	try(tg.Topic("refuse-order-2"), pulsar.ConsumerOptions{Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: true}}, pulsar.ConsumerOptions{Type: pulsar.KeyShared})
	try(tg.Topic("accept-order"), pulsar.ConsumerOptions{Type: pulsar.KeyShared,
		KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: true}},
		pulsar.ConsumerOptions{Type: pulsar.KeyShared, KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: true}})
	return out
}

// TestDifferentialSubscribeRefusals compares the errors of consumers whose
// subscription type, Key_Shared mode or allowOutOfOrderDelivery differs
// from the subscription's.
func TestDifferentialSubscribeRefusals(t *testing.T) {
	url := oracleURL(t)
	sim := subscribeRefusals(t, scenarios.SimTarget(t))
	real := subscribeRefusals(t, scenarios.RemoteTarget(t, url, ""))
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("the refusals differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(sim, "\n"))
}
