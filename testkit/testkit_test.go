package testkit_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func send(t *testing.T, c pulsar.Client, topic string, payloads ...string) {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, pl := range payloads {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(pl)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNoGoroutineOutlivesAClosedBroker(t *testing.T) {
	t.Run("raw connections left open", func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		b := broker.New()
		if err := b.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			nc, err := net.Dial("tcp", b.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			connect := protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{ClientVersion: proto.String("leak-test")})
			if _, err := nc.Write(protocol.AppendCommand(nil, connect)); err != nil {
				t.Fatal(err)
			}
			if _, err := protocol.ReadFrame(nc, nil, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		b.Close()
		goleak.VerifyNone(t, before)
	})
	t.Run("real clients still connected", func(t *testing.T) {
		b := broker.New()
		if err := b.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), OperationTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "leak", SubscriptionName: "s", Type: pulsar.Shared})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		send(t, client, "leak", "a")
		if _, err := cons.Receive(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		b.Close()
		// The client's own goroutines live on until it is closed; none of
		// the broker's may.
		noBrokerGoroutine(t)
	})
}

// noBrokerGoroutine fails the test when a goroutine of the broker package is
// still running. A goroutine that has signalled its end to Close may still
// be on its way out for a moment, so it looks again a few times, as goleak
// does, before it fails.
func noBrokerGoroutine(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	var left string
	for wait := time.Millisecond; wait < 2*time.Second; wait *= 2 {
		left = ""
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "pulsarsim/pulsarsim/broker.") {
				left = g
				break
			}
		}
		if left == "" {
			return
		}
		time.Sleep(wait)
	}
	t.Fatalf("a broker goroutine outlived Close:\n%s", left)
}

func TestTraceRecordsDeliveriesAcksAndRedeliveryRequests(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "traced", SubscriptionName: "s", Type: pulsar.Shared,
		Name: "worker", NackRedeliveryDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, b.Client(), "traced", "x")
	m, _ := c.Receive(ctx)
	c.Nack(m)
	m, _ = c.Receive(ctx)
	c.Ack(m)
	b.WaitBacklog(ctx, "traced", "s", 0)

	var kinds []string
	for _, e := range b.Events() {
		if e.Topic == "persistent://public/default/traced" && !strings.HasPrefix(string(e.Kind), "producer") {
			kinds = append(kinds, string(e.Kind))
		}
	}
	want := "topic-loaded consumer-opened published delivered redelivery-asked delivered acked"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("trace %q, want it to start with %q", got, want)
	}
	tl := b.Timeline("traced", testkit.MessageID{Ledger: m.ID().LedgerID(), Entry: m.ID().EntryID()})
	for _, line := range []string{"published by", "delivered to worker on s with redelivery count 0",
		"worker asked for redelivery", "delivered to worker on s with redelivery count 1", "acked by worker"} {
		if !strings.Contains(tl, line) {
			t.Fatalf("timeline lacks %q:\n%s", line, tl)
		}
	}
}

func TestFailNextFailsThatManyCommandsThenServesAgain(t *testing.T) {
	b := testkit.Start(t)
	b.FailNext("PRODUCER", 2, testkit.ServerErrorNotAllowedError)
	c := b.Client()
	for i := range 2 {
		if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "f"}); err == nil || !strings.Contains(err.Error(), "NotAllowed") {
			t.Fatalf("producer %d: %v, want the injected NotAllowedError", i, err)
		}
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "f"})
	if err != nil {
		t.Fatalf("third producer: %v", err)
	}
	p.Close()
}

// fatalTB records the failure its Fatalf reports and ends the goroutine, as
// testing.T does; everything else is the test's.
type fatalTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestARefusedCallFailsTheTestNamingWhatWasRefused(t *testing.T) {
	tb := &fatalTB{TB: t}
	b := testkit.Start(tb)
	for _, call := range []struct {
		name string
		do   func()
		want string
	}{
		{"FailNext", func() { b.FailNext("NO_SUCH_COMMAND", 1, testkit.ServerErrorUnknownError) }, "NO_SUCH_COMMAND"},
		{"CreatePartitionedTopic", func() { b.CreatePartitionedTopic("twice", 2); b.CreatePartitionedTopic("twice", 2) }, "twice"},
		{"DeleteNamespace", func() { b.DeleteNamespace("nobody/none", false) }, "nobody/none"},
	} {
		tb.fatal = ""
		done := make(chan struct{})
		go func() {
			defer close(done)
			call.do()
		}()
		<-done
		tb.mu.Lock()
		if !strings.Contains(tb.fatal, call.want) {
			t.Errorf("%s refused: the test failed with %q, want it to name %s", call.name, tb.fatal, call.want)
		}
		tb.mu.Unlock()
	}
}

func TestFailNextSendMakesTheClientResend(t *testing.T) {
	b := testkit.Start(t)
	b.FailNext("SEND", 1, testkit.ServerErrorPersistenceError)
	send(t, b.Client(), "resend", "kept")
	// The Go client closes its connection on a SEND_ERROR and resends: the
	// message is stored once.
	if ms := b.Messages("resend"); len(ms) != 1 || string(ms[0].Payload) != "kept" {
		t.Fatalf("stored %d messages", len(ms))
	}
}

func TestDelayRepliesSlowsOnlyThatKind(t *testing.T) {
	b := testkit.Start(t)
	const delay = 200 * time.Millisecond
	b.DelayReplies("PRODUCER", delay)
	start := time.Now()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if took := time.Since(start); took < delay {
		t.Fatalf("producer created after %v, before the injected delay %v", took, delay)
	}
	b.DelayReplies("PRODUCER", 0)
}

func TestBrokerSideCloseMakesClientsReconnect(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "bounce", SubscriptionName: "s", Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "bounce", Name: "p", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !b.CloseConsumer("bounce", "s", "c") || !b.CloseProducer("bounce", "p") {
		t.Fatal("consumer or producer not found")
	}
	// Both come back by themselves, and messages flow again. (The message
	// comes from another client: pulsar-client-go's producer has a data race
	// between its reconnection and a send.)
	b.WaitFor(ctx, "producer p and consumer c back", func() bool {
		ts, _ := b.Topic("bounce")
		s, _ := b.Subscription("bounce", "s")
		return len(ts.Producers) == 1 && ts.Producers[0] == "p" && len(s.Consumers) == 1
	})
	send(t, b.Client(), "bounce", "after")
	m, err := c.Receive(ctx)
	if err != nil || string(m.Payload()) != "after" {
		t.Fatalf("after the broker-side closes: %v %v", m, err)
	}
	closes := 0
	for _, e := range b.Events() {
		if e.Reason == "broker" {
			closes++
		}
	}
	if closes != 2 {
		t.Fatalf("%d broker-side closes in the trace, want 2", closes)
	}
}

func TestDropConnectionsCutsEveryClientAndTheyReconnect(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "cut", SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := b.DropConnections(); n < 1 {
		t.Fatalf("dropped %d connections", n)
	}
	send(t, b.Client(), "cut", "back")
	if m, err := c.Receive(ctx); err != nil || string(m.Payload()) != "back" {
		t.Fatalf("after the cut: %v %v", m, err)
	}
}

func TestAdvanceReleasesDelayedMessages(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "later", SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "later"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in an hour"), DeliverAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(short); err == nil {
		t.Fatalf("a message for an hour later arrived now: %q", m.Payload())
	}
	b.Advance(time.Hour + time.Second)
	m, err := c.Receive(ctx)
	if err != nil || string(m.Payload()) != "in an hour" {
		t.Fatalf("after Advance: %v %v", m, err)
	}
}

func TestExpiryEventNamesTheRangeItCovered(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "aging", SubscriptionName: "s", Type: pulsar.Shared,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	send(t, b.Client(), "aging", "a", "b", "c")
	// Ack the first message so that the expiry starts after it.
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(m); err != nil {
		t.Fatal(err)
	}
	c.Close()
	b.WaitBacklog(ctx, "aging", "s", 2)
	b.SetTopicPolicies("aging", testkit.Policies{MessageTTLSeconds: new(60)})
	// The TTL ran out after a minute; the periodic check at 5 minutes
	// expires the messages.
	b.Advance(2 * time.Minute)
	if got := mustSub(t, b, "aging", "s").Backlog; got != 2 {
		t.Fatalf("backlog %d before the periodic check, want 2", got)
	}
	b.Advance(3 * time.Minute)
	b.WaitBacklog(ctx, "aging", "s", 0)
	var got []testkit.Event
	for _, e := range b.Events() {
		if e.Kind == testkit.EventExpired {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].From.Entry != 1 || got[0].ID.Entry != 2 {
		t.Fatalf("expiry events %+v, want one from entry 1 to entry 2", got)
	}
}

// mustSub returns a subscription's snapshot, failing the test when it does
// not exist.
func mustSub(t testing.TB, b *testkit.Broker, topic, name string) testkit.SubscriptionSnapshot {
	t.Helper()
	s, ok := b.Subscription(topic, name)
	if !ok {
		t.Fatalf("no subscription %s on %s", name, topic)
	}
	return s
}
