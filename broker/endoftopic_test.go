package broker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The rules of REACHED_END_OF_TOPIC, checked on the wire. A PING after the
// command that could cause one is the barrier: the broker answers a
// connection's commands in order, so the PONG comes after anything the
// command caused.

// endClient is a raw client with the commands these tests need.
type endClient struct{ *rawClient }

func dialEnd(t *testing.T, b *broker.Broker) endClient {
	c := dialRaw(t, b.Addr().String())
	c.connect()
	return endClient{c}
}

func (c endClient) subscribe(topic, sub string, typ pb.CommandSubscribe_SubType, earliest, durable bool) {
	c.t.Helper()
	pos := pb.CommandSubscribe_Latest
	if earliest {
		pos = pb.CommandSubscribe_Earliest
	}
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String(sub), SubType: typ.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1),
		InitialPosition: pos.Enum(), Durable: proto.Bool(durable)}))
	if r := c.read(); r.Success == nil {
		c.t.Fatalf("subscribe %s: %v %v", sub, r.GetType(), r.GetError())
	}
}

func (c endClient) flow(n uint32) {
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(n)}))
}

func (c endClient) ack(typ pb.CommandAck_AckType, ids ...*pb.MessageIdData) {
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1), AckType: typ.Enum(), MessageId: ids}))
}

// until returns the kinds of the commands that arrive before the PONG of a
// PING sent now.
func (c endClient) until() []string {
	c.t.Helper()
	c.send(protocol.PingCommand())
	var got []string
	for {
		r := c.read()
		if r.GetType() == pb.BaseCommand_PONG {
			return got
		}
		got = append(got, r.GetType().String())
	}
}

func (c endClient) expect(what string, want ...string) {
	c.t.Helper()
	got := c.until()
	if len(got) != len(want) {
		c.t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			c.t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

const reached = "REACHED_END_OF_TOPIC"

// hangUp closes the connection and waits until the broker has let its
// consumer of sub go. The broker notices a closed socket when it next reads
// from it, so an Exclusive SUBSCRIBE sent at once on another connection
// could still find the old consumer there (ConsumerBusy, as on Pulsar).
func (c endClient) hangUp(b *broker.Broker, topic, sub string) {
	c.t.Helper()
	gone := make(chan struct{})
	var once sync.Once
	stop := b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventConsumerClosed && e.Topic == topic && e.Subscription == sub {
			once.Do(func() { close(gone) })
		}
	})
	defer stop()
	c.nc.Close()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("the broker kept the consumer of %s after its connection closed", sub)
	}
}

// publishRaw stores n messages on topic through a raw producer and returns
// their ids.
func publishRaw(t *testing.T, b *broker.Broker, topic string, n int) []*pb.MessageIdData {
	c := dialEnd(t, b)
	c.producer(topic, 1)
	var ids []*pb.MessageIdData
	for i := range n {
		c.write(sendFrame(1, uint64(i), []byte("m")))
		ids = append(ids, c.read().GetSendReceipt().GetMessageId())
	}
	return ids
}

func TestTerminationTellsTheSubscriptionsThatAcknowledgedEverything(t *testing.T) {
	b, _ := startBroker(t)
	topic := "persistent://public/default/end-at-termination"
	ids := publishRaw(t, b, topic, 2)
	caught := dialEnd(t, b)
	caught.subscribe(topic, "caught", pb.CommandSubscribe_Exclusive, false, true)
	caught.flow(10)
	idle := dialEnd(t, b) // no permits: told all the same
	idle.subscribe(topic, "idle", pb.CommandSubscribe_Shared, false, true)
	behind := dialEnd(t, b)
	behind.subscribe(topic, "behind", pb.CommandSubscribe_Exclusive, true, true)
	behind.flow(10)
	behind.expect("behind before the termination", "MESSAGE", "MESSAGE")

	if _, err := b.TerminateTopic(topic); err != nil {
		t.Fatal(err)
	}
	caught.expect("caught up at the termination", reached)
	idle.expect("caught up without permits at the termination", reached)
	behind.expect("behind at the termination")

	behind.ack(pb.CommandAck_Individual, ids[0])
	behind.expect("one of two acknowledged")
	behind.ack(pb.CommandAck_Individual, ids[1])
	behind.expect("all acknowledged", reached)
	behind.ack(pb.CommandAck_Cumulative, ids[1])
	behind.expect("acknowledged again", reached)
	behind.flow(10)
	behind.expect("permits after the end (its read at the end already failed)")
}

func TestAReadAtTheEndOfATerminatedTopicTellsOncePerCursor(t *testing.T) {
	b, _ := startBroker(t)
	topic := "persistent://public/default/end-read"
	publishRaw(t, b, topic, 1)
	if _, err := b.TerminateTopic(topic); err != nil {
		t.Fatal(err)
	}
	c := dialEnd(t, b)
	c.subscribe(topic, "late", pb.CommandSubscribe_Exclusive, false, true)
	c.expect("subscribed without permits")
	c.flow(10)
	c.expect("first read at the end", reached)
	c.flow(10)
	c.expect("more permits")
	c.hangUp(b, topic, "late")

	again := dialEnd(t, b)
	again.subscribe(topic, "late", pb.CommandSubscribe_Exclusive, false, true)
	again.flow(10)
	again.expect("the durable cursor keeps its failed read")
	again.send(protocol.Base(pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES,
		&pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: proto.Uint64(1)}))
	again.expect("an Exclusive redelivery cancels it, and the read fails again", reached)

	for i := range 2 {
		r := dialEnd(t, b)
		r.subscribe(topic, "reader", pb.CommandSubscribe_Exclusive, false, false)
		r.flow(10)
		r.expect("a reader's new non-durable cursor, time "+string(rune('1'+i)), reached)
		r.hangUp(b, topic, "reader")
	}
}

func TestAReadWaitingBeforeTheTerminationNeverFails(t *testing.T) {
	b, _ := startBroker(t)
	topic := "persistent://public/default/end-waiting"
	ids := publishRaw(t, b, topic, 1)
	c := dialEnd(t, b)
	c.subscribe(topic, "s", pb.CommandSubscribe_Shared, true, true)
	c.flow(10)
	c.expect("delivery", "MESSAGE")
	if _, err := b.TerminateTopic(topic); err != nil {
		t.Fatal(err)
	}
	c.expect("termination with one message unacknowledged")
	c.flow(10)
	c.expect("permits: the read waits since before the termination")
	c.ack(pb.CommandAck_Individual, ids[0])
	c.expect("the last acknowledgement", reached)
}

func TestGoClientReconnectsWhenToldItsTopicEnded(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := "persistent://public/default/end-go"
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("a")}, broker.ProducerMessage{Payload: []byte("b")})
	cons, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	b.TerminateTopic(topic)
	for range 2 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// pulsar-client-go closes the connection REACHED_END_OF_TOPIC came on,
	// and its consumer subscribes again.
	b.WaitFor(ctx, "the end told, the consumer back", func() bool {
		told, closed, reopened := false, false, false
		for _, e := range b.Events() {
			switch {
			case e.Kind == broker.EventReachedEndOfTopic && e.Subscription == "s":
				told = true
			case told && e.Kind == broker.EventConsumerClosed && e.Reason == "disconnect":
				closed = true
			case closed && e.Kind == broker.EventConsumerOpened && e.Subscription == "s":
				reopened = true
			}
		}
		return reopened
	})
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if m, err := cons.Receive(short); err == nil {
		t.Fatalf("got %q after the end", m.Payload())
	}
}
