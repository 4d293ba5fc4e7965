package scenarios_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
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

// When a broker tells consumers that their terminated topic has ended
// (REACHED_END_OF_TOPIC), compared on the wire and as pulsar-client-go
// lives with it.

// quietWindow is how long a connection must stay silent for a step to be
// over. Both brokers answer well within it.
const quietWindow = 700 * time.Millisecond

// collect returns the kinds of the commands that arrive until the
// connection has been silent for quietWindow (PINGs answered, not listed).
func (c *wireClient) collect() []string {
	c.t.Helper()
	var got []string
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(quietWindow))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return got
		}
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
			got = append(got, f.Command.GetType().String())
		}
	}
}

// consumer subscribes consumer 1 of this connection, after a lookup.
func (c *wireClient) consumer(topic, sub string, typ pb.CommandSubscribe_SubType, earliest, durable bool) {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
	c.read()
	pos := pb.CommandSubscribe_Latest
	if earliest {
		pos = pb.CommandSubscribe_Earliest
	}
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String(sub), SubType: typ.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2),
		InitialPosition: pos.Enum(), Durable: proto.Bool(durable)}))
	if r := c.read(); r.Success == nil {
		c.t.Fatalf("subscribe %s: %s", sub, describe(r))
	}
}

func (c *wireClient) flow(n uint32) {
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(n)}))
}

func (c *wireClient) ackIDs(typ pb.CommandAck_AckType, ids ...*pb.MessageIdData) {
	c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1), AckType: typ.Enum(), MessageId: ids}))
}

// terminate terminates a topic through the admin API.
func terminate(t *testing.T, admin, topic string) {
	adminJSON(t, http.MethodPost, admin+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/terminate", nil, nil)
}

// endOfTopicTrace runs the moments at which a broker may send
// REACHED_END_OF_TOPIC and lists what each consumer got at each step.
func endOfTopicTrace(t *testing.T, url, admin, topic string) []string {
	var out []string
	step := func(what string, c *wireClient) {
		out = append(out, what+": "+strings.Join(c.collect(), " "))
	}
	ids := dialWire(t, url).publish(topic, 2)
	caught, idle, behind := dialWire(t, url), dialWire(t, url), dialWire(t, url)
	caught.consumer(topic, "caught", pb.CommandSubscribe_Exclusive, false, true)
	caught.flow(10)
	idle.consumer(topic, "idle", pb.CommandSubscribe_Shared, false, true)
	behind.consumer(topic, "behind", pb.CommandSubscribe_Exclusive, true, true)
	behind.flow(10)
	step("behind, before the termination", behind)

	terminate(t, admin, topic)
	step("caught up, at the termination", caught)
	step("caught up without permits, at the termination", idle)
	step("behind, at the termination", behind)
	behind.ackIDs(pb.CommandAck_Individual, ids[0])
	step("behind, one of two acknowledged", behind)
	behind.ackIDs(pb.CommandAck_Individual, ids[1])
	step("behind, all acknowledged", behind)
	behind.ackIDs(pb.CommandAck_Cumulative, ids[1])
	step("behind, acknowledged again", behind)
	behind.flow(10)
	step("behind, more permits", behind)

	late := dialWire(t, url)
	late.consumer(topic, "late", pb.CommandSubscribe_Shared, false, true)
	step("new subscription, no permits", late)
	late.flow(10)
	step("new subscription, first permits", late)
	late.flow(10)
	step("new subscription, more permits", late)
	late.nc.Close()
	again := dialWire(t, url)
	again.consumer(topic, "late", pb.CommandSubscribe_Shared, false, true)
	again.flow(10)
	step("the same subscription again, permits", again)

	reader := dialWire(t, url)
	reader.consumer(topic, "reader", pb.CommandSubscribe_Exclusive, false, false)
	reader.flow(10)
	step("non-durable subscription, permits", reader)
	return out
}

// TestDifferentialReachedEndOfTopic compares when both brokers tell
// consumers that their terminated topic has ended: at the termination,
// after acknowledgements that leave nothing unacknowledged, and on the
// first read past the end of each cursor.
func TestDifferentialReachedEndOfTopic(t *testing.T) {
	url := oracleURL(t)
	admin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, admin)
	got := endOfTopicTrace(t, sim.URL, sim.Sim.AdminURL(), sim.Topic("end-of-topic"))
	want := endOfTopicTrace(t, real.URL, admin, real.Topic("end-of-topic"))
	sameOnBoth(t, want, got)
}

// oracleAdmin returns the real broker's admin URL (PULSAR_ADMIN_URL,
// without a trailing slash), skipping the test without one.
// sameOnBoth fails the test with the difference when the traces of the
// real broker (want) and of pulsarsim (got) differ, and logs the trace
// when they do not.
func sameOnBoth(t *testing.T, want, got []string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the brokers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}

func oracleAdmin(t *testing.T) string {
	admin := strings.TrimSuffix(strings.TrimSpace(os.Getenv("PULSAR_ADMIN_URL")), "/")
	if admin == "" {
		t.Skip("set PULSAR_ADMIN_URL to the real Pulsar's admin API")
	}
	return admin
}

// sameStoryOnBoth runs story on pulsarsim and on the real broker, each with
// its admin URL, and compares what it noted (sameOnBoth).
func sameStoryOnBoth(t *testing.T, story func(t *testing.T, tg *scenarios.Target, admin string) []string) {
	url, admin := oracleURL(t), oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	got := story(t, sim, sim.Sim.AdminURL())
	want := story(t, scenarios.RemoteTarget(t, url, admin), admin)
	sameOnBoth(t, want, got)
}

// consumerSince returns the connectedSince of the consumers of the
// subscriptions of topic whose name starts with prefix.
func consumerSince(t *testing.T, admin, topic, prefix string) []string {
	var stats struct {
		Subscriptions map[string]struct {
			Consumers []struct {
				ConnectedSince string `json:"connectedSince"`
			} `json:"consumers"`
		} `json:"subscriptions"`
		Publishers []struct {
			ConnectedSince string `json:"connectedSince"`
		} `json:"publishers"`
	}
	resp, err := http.Get(admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, s := range stats.Subscriptions {
		if strings.HasPrefix(name, prefix) {
			for _, c := range s.Consumers {
				out = append(out, c.ConnectedSince)
			}
		}
	}
	if prefix == "" {
		for _, p := range stats.Publishers {
			out = append(out, p.ConnectedSince)
		}
	}
	return out
}

// changes waits up to 10 s for f's answer to differ from before, and
// reports whether it did.
func changes(before []string, f func() []string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if now := f(); len(now) > 0 && !cmp.Equal(now, before) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// goClientAtTheEnd consumes a terminated topic to its end with
// pulsar-client-go and reports what the client went through.
func goClientAtTheEnd(t *testing.T, tg *scenarios.Target, admin string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tg.Client()
	topic, other := tg.Topic("end-go"), tg.Topic("end-go-other")
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: other})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	tg.Produce(topic, 3, nil)
	terminate(t, admin, topic)
	consumerBefore := consumerSince(t, admin, topic, "sub")
	producerBefore := consumerSince(t, admin, other, "")
	var got []string
	for range 3 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Properties()["i"])
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	out = append(out, "received "+strings.Join(got, ","))
	out = append(out, "consumer reconnected after its last ack: "+
		fmtBool(changes(consumerBefore, func() []string { return consumerSince(t, admin, topic, "sub") })))
	out = append(out, "a producer of another topic on the same connection reconnected: "+
		fmtBool(changes(producerBefore, func() []string { return consumerSince(t, admin, other, "") })))
	short, stop := context.WithTimeout(ctx, quietWindow)
	_, err = cons.Receive(short)
	stop()
	out = append(out, "more messages: "+fmtBool(err == nil))
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		out = append(out, "the other producer fails: "+err.Error())
	}

	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.HasNext() {
		if _, err := r.Next(ctx); err != nil {
			t.Fatal(err)
		}
		n++
	}
	readerBefore := consumerSince(t, admin, topic, "reader")
	out = append(out, "reader read "+strings.Repeat("*", n))
	out = append(out, "reader reconnected after reading to the end: "+
		fmtBool(changes(readerBefore, func() []string { return consumerSince(t, admin, topic, "reader") })))
	return out
}

func fmtBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestDifferentialGoClientAtTheEndOfATerminatedTopic compares what
// pulsar-client-go goes through when it consumes a terminated topic to its
// end: it closes the connection the broker's REACHED_END_OF_TOPIC came on,
// so its consumer, and every other producer or consumer of that connection,
// reconnects; a reader that reads to the end reconnects too.
func TestDifferentialGoClientAtTheEndOfATerminatedTopic(t *testing.T) {
	url := oracleURL(t)
	admin := oracleAdmin(t)
	simTarget := scenarios.SimTarget(t)
	sim := goClientAtTheEnd(t, simTarget, simTarget.Sim.AdminURL())
	real := goClientAtTheEnd(t, scenarios.RemoteTarget(t, url, admin), admin)
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("the client's experience differs (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(sim, "\n"))
}
