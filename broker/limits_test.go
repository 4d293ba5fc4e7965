package broker_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func startWithLimits(t *testing.T, l broker.Limits, opts ...broker.Option) *testkit.Broker {
	return testkit.Start(t, testkit.WithBroker(append(opts, broker.WithLimits(l))...))
}

// wantRefusal fails unless err is the client's report of a server error with
// this code and message.
func wantRefusal(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), code) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: %v, want %s %q", what, err, code, msg)
	}
}

func TestProducerBeyondMaxProducersPerTopicIsRefusedWithProducerBusy(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxProducersPerTopic: 2})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	var kept []pulsar.Producer
	for range 2 {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "capped"})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, p)
	}
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "capped"})
	wantRefusal(t, "third producer", err, "ProducerBusy",
		"Topic 'persistent://public/default/capped' reached max producers limit")
	// Other topics are not affected, and a closed producer frees its place.
	if p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "other"}); err != nil {
		t.Fatalf("producer on another topic: %v", err)
	} else {
		p.Close()
	}
	kept[0].Close()
	if p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "capped"}); err != nil {
		t.Fatalf("producer after one closed: %v", err)
	} else {
		p.Close()
	}
	kept[1].Close()
}

func TestConsumerBeyondMaxConsumersPerTopicIsRefusedWithConsumerBusy(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxConsumersPerTopic: 2})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	for _, sub := range []string{"a", "b"} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "crowded", SubscriptionName: sub, Type: pulsar.Shared})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	_, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "crowded", SubscriptionName: "a", Type: pulsar.Shared})
	wantRefusal(t, "third consumer", err, "ConsumerBusy", "Topic reached max consumers limit")
}

func TestConsumerBeyondMaxConsumersPerSubscriptionIsRefusedWithConsumerBusy(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxConsumersPerSubscription: 2})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	types := map[string]pulsar.SubscriptionType{"Shared": pulsar.Shared, "Failover": pulsar.Failover,
		"Key_Shared": pulsar.KeyShared}
	for name, typ := range types {
		topic := "sub-cap-" + name
		for range 2 {
			c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: typ})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			defer c.Close()
		}
		_, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: typ})
		wantRefusal(t, name+" third consumer", err, "ConsumerBusy", "Subscription reached max consumers limit")
		// Another subscription of the same topic has room of its own.
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "t", Type: typ})
		if err != nil {
			t.Fatalf("%s: other subscription: %v", name, err)
		}
		defer c.Close()
	}
}

func TestSubscriptionBeyondMaxSubscriptionsPerTopicIsNotAllowed(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxSubscriptionsPerTopic: 1})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "few-subs", SubscriptionName: "only", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const msg = "Exceed the maximum number of subscriptions of the topic: persistent://public/default/few-subs"
	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: "few-subs", SubscriptionName: "second", Type: pulsar.Shared})
	wantRefusal(t, "second subscription", err, "NotAllowedError", msg)
	// A reader's subscription counts too.
	_, err = client.CreateReader(pulsar.ReaderOptions{Topic: "few-subs", StartMessageID: pulsar.EarliestMessageID()})
	wantRefusal(t, "reader", err, "NotAllowedError", msg)
	// So does a producer's initial subscription (pulsar-client-go keeps that
	// option for its own retry-letter producers: this client speaks the
	// protocol).
	raw := dialRaw(t, addrOf(b))
	raw.connect()
	raw.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String("few-subs"), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(7),
		InitialSubscriptionName: proto.String("third"),
	}))
	if r := raw.read(); r.Error == nil || r.Error.GetError() != pb.ServerError_NotAllowedError || r.Error.GetMessage() != msg {
		t.Fatalf("producer with an initial subscription: %v", r)
	}
	// The existing subscription still takes consumers.
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "few-subs", SubscriptionName: "only", Type: pulsar.Shared})
	if err != nil {
		t.Fatalf("second consumer of the existing subscription: %v", err)
	}
	c2.Close()
}

func TestSameAddressLimitsCountTheClientsAddress(t *testing.T) {
	// Every client of this test comes from 127.0.0.1.
	b := startWithLimits(t, broker.Limits{MaxSameAddressProducersPerTopic: 1, MaxSameAddressConsumersPerTopic: 1})
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "one-each"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "one-each"})
	wantRefusal(t, "second producer", err, "ProducerBusy", "Topic reached max same address producers limit")
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "one-each", SubscriptionName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: "one-each", SubscriptionName: "b"})
	wantRefusal(t, "second consumer", err, "ConsumerBusy", "Topic reached max same address consumers limit")
}

func TestLimitsAreOffByDefault(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	for i := range 5 {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "open"})
		if err != nil {
			t.Fatalf("producer %d: %v", i, err)
		}
		defer p.Close()
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "open", SubscriptionName: "s" + string(rune('a'+i)),
			Type: pulsar.Shared})
		if err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
		defer c.Close()
	}
}

func TestConnectionBeyondMaxConnectionsGetsNotAllowedAndIsClosed(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxConnections: 1})
	first := dialRaw(t, addrOf(b))
	first.connect()
	second := dialRaw(t, addrOf(b))
	second.send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
	}))
	r := second.read()
	if r.Error == nil || r.Error.GetRequestId() != ^uint64(0) || r.Error.GetError() != pb.ServerError_NotAllowedError ||
		r.Error.GetMessage() != "Reached the maximum number of connections" {
		t.Fatalf("second connection got %v", r)
	}
	if !second.closedByBroker() {
		t.Fatal("the refused connection stayed open")
	}
	// The first connection is still served, and its place frees on close.
	first.send(protocol.Base(pb.BaseCommand_PING, &pb.CommandPing{}))
	if r := first.read(); r.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("first connection got %v, want PONG", r.GetType())
	}
	first.nc.Close()
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 5 * time.Second })
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "after"}); err != nil {
		t.Fatalf("a client once the first connection closed: %v", err)
	}
}

func TestConnectionBeyondMaxConnectionsPerIPNamesTheAddress(t *testing.T) {
	b := startWithLimits(t, broker.Limits{MaxConnectionsPerIP: 1})
	first := dialRaw(t, addrOf(b))
	first.connect()
	second := dialRaw(t, addrOf(b))
	r := second.read()
	want := "Reached the maximum number of connections on address/" + second.nc.LocalAddr().String()
	if r.Error == nil || r.Error.GetError() != pb.ServerError_NotAllowedError || r.Error.GetMessage() != want {
		t.Fatalf("second connection got %v, want NotAllowedError %q", r, want)
	}
}

func TestHandshakeNotDoneInTimeClosesTheConnection(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithHandshakeTimeout(100*time.Millisecond)))
	// Half a CONNECT frame: the size prefix promises more than ever comes.
	idle := dialRaw(t, addrOf(b))
	frame := protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("slow"), ProtocolVersion: proto.Int32(20),
	}))
	idle.write(frame[:len(frame)/2])
	if !idle.closedByBroker() {
		t.Fatal("a connection without a handshake stayed open")
	}
	// A connection that completes its handshake stays open past the timeout.
	ok := dialRaw(t, addrOf(b))
	ok.connect()
	ok.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := ok.r.ReadByte(); err == nil || !isTimeout(err) {
		t.Fatalf("a connected client: read %v, want a timeout (connection still open)", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
