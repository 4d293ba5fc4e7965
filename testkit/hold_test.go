package testkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// sharedConsumer subscribes a Shared consumer that acks at once (no ack
// grouping) and asks for redelivery 10 ms after a nack.
func sharedConsumer(t *testing.T, c pulsar.Client, topic string) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Name: "worker",
		Type: pulsar.Shared, NackRedeliveryDelay: 10 * time.Millisecond,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

// pendingCount returns the redelivery count the broker holds for the only
// pending entry of the subscription, or -1 when nothing is pending.
func pendingCount(t *testing.T, b *testkit.Broker, topic string) int32 {
	t.Helper()
	var pending []testkit.PendingMessage
	for _, c := range mustSub(t, b, topic, "s").Consumers {
		pending = append(pending, c.Pending...)
	}
	switch len(pending) {
	case 0:
		return -1
	case 1:
		return pending[0].RedeliveryCount
	}
	t.Fatalf("%d entries pending, want at most 1", len(pending))
	return 0
}

// An ACK held until after a REDELIVER of the same message: on Shared the
// redelivery carries count 1, and the released ack then settles the message.
func TestHeldAckReleasedAfterARedeliveryOfTheSameMessage(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	const topic = "held-ack"
	hold := b.Hold(testkit.Fault{Command: "ACK", Topic: topic})
	c := b.Client()
	cons := sharedConsumer(t, c, topic)
	send(t, c, topic, "m")

	m, err := cons.Receive(ctx)
	if err != nil || m.RedeliveryCount() != 0 {
		t.Fatalf("first delivery: %v, count %d", err, m.RedeliveryCount())
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
	held := b.NextHeld(ctx, hold)
	if held.Command != "ACK" || held.Subscription != "s" || held.Consumer != "worker" ||
		len(held.IDs) != 1 || held.IDs[0].Entry != m.ID().EntryID() {
		t.Fatalf("held %+v, want the ACK of entry %d by worker on s", held, m.ID().EntryID())
	}
	if got, backlog := pendingCount(t, b, topic), mustSub(t, b, topic, "s").Backlog; got != 0 || backlog != 1 {
		t.Fatalf("with the ACK held: pending count %d, backlog %d; want 0 and 1", got, backlog)
	}

	// The REDELIVER travels on the same connection, behind the held ACK, and
	// is handled at once.
	cons.Nack(m)
	again, err := cons.Receive(ctx)
	if err != nil || string(again.Payload()) != "m" || again.RedeliveryCount() != 1 {
		t.Fatalf("redelivery: %v, count %d, want the message with count 1", err, again.RedeliveryCount())
	}
	if got := pendingCount(t, b, topic); got != 1 {
		t.Fatalf("after the redelivery: pending count %d, want 1", got)
	}

	b.Release(ctx, held)
	if s := mustSub(t, b, topic, "s"); s.Backlog != 0 || pendingCount(t, b, topic) != -1 {
		t.Fatalf("after the release: backlog %d, consumers %+v; want the message settled", s.Backlog, s.Consumers)
	}
	if hold.Fired() != 1 {
		t.Fatalf("the hold fired %d times, want 1", hold.Fired())
	}
}

// HeldCommand.Release may be called from an OnEvent hook, on the goroutine
// that is handling a command of the same connection: the released ACK runs
// right after that command.
func TestHeldAckReleasedFromAHookRunsAfterTheRedelivery(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	const topic = "hook-release"
	hold := b.Hold(testkit.Fault{Command: "ACK", Topic: topic, Consumer: "worker"})
	b.OnEvent(func(e testkit.Event) {
		if e.Kind == testkit.EventRedeliveryAsked {
			hold.ReleaseAll()
		}
	})
	c := b.Client()
	cons := sharedConsumer(t, c, topic)
	send(t, c, topic, "m")
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
	held := b.NextHeld(ctx, hold)
	cons.Nack(m)
	if err := held.Wait(ctx); err != nil {
		t.Fatalf("the ACK released from the hook: %v", err)
	}
	b.WaitBacklog(ctx, topic, "s", 0)

	var order []string
	for _, e := range b.Events() {
		switch {
		case e.Kind == testkit.EventRedeliveryAsked:
			order = append(order, "redeliver")
		case e.Kind == testkit.EventDelivered:
			order = append(order, "delivered-"+string(rune('0'+e.RedeliveryCount)))
		case e.Kind == testkit.EventAcked:
			order = append(order, "acked")
		}
	}
	if got, want := strings.Join(order, " "), "delivered-0 redeliver delivered-1 acked"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// Held commands go with their connection, or with the broker, and leave no
// goroutine behind.
func TestHeldCommandsAreDroppedWithTheirConnectionAndTheBroker(t *testing.T) {
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer b.Close() // on failure; the test closes it itself below
	ctx := ctxFor(t)
	acks, err := b.AddFault(testkit.Fault{Command: "ACK", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), OperationTimeout: 2 * time.Second, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons := sharedConsumer(t, client, "dropped")
	send(t, client, "dropped", "m")
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
	ack, err := acks.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The client's connections close: the held ACK is gone, as an ACK in
	// flight is when a connection breaks.
	client.Close()
	if err := ack.Wait(ctx); !errors.Is(err, testkit.ErrCommandDropped) {
		t.Fatalf("held ACK after its connection closed: %v, want ErrCommandDropped", err)
	}
	if ack.Release() {
		t.Fatal("a dropped command was released")
	}
	if len(acks.Held()) != 0 {
		t.Fatalf("the hold still lists %d commands", len(acks.Held()))
	}

	// A SUBSCRIBE held when the broker closes.
	subs, err := b.AddFault(testkit.Fault{Command: "SUBSCRIBE", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), OperationTimeout: 2 * time.Second, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		if c, err := other.Subscribe(pulsar.ConsumerOptions{Topic: "never", SubscriptionName: "s"}); err == nil {
			c.Close()
		}
	}()
	sub, err := subs.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := subs.Next(context.Background())
		waiting <- err
	}()
	b.Close()
	if err := sub.Wait(ctx); !errors.Is(err, testkit.ErrCommandDropped) {
		t.Fatalf("held SUBSCRIBE after Close: %v, want ErrCommandDropped", err)
	}
	if err := <-waiting; !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	noBrokerGoroutine(t)
}
