package testkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestFaultOnOneTopicLeavesAnotherTopicUntouched(t *testing.T) {
	b := testkit.Start(t)
	b.CreatePartitionedTopic("parted", 2)
	c := b.Client()
	for _, topic := range []string{"a", "parted"} {
		h := b.Fault(testkit.Fault{Command: "SUBSCRIBE", Topic: topic, Error: testkit.ServerErrorNotAllowedError})
		_, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err == nil || !strings.Contains(err.Error(), "NotAllowed") {
			t.Fatalf("subscribe to %s: %v, want the injected NotAllowedError", topic, err)
		}
		fired := h.Fired()
		if fired == 0 {
			t.Fatalf("the fault on %s did not count the failed SUBSCRIBE", topic)
		}
		// Another topic, same connection: served, and not counted.
		other, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "b", SubscriptionName: "s-" + topic})
		if err != nil {
			t.Fatalf("subscribe to b while %s fails: %v", topic, err)
		}
		other.Close()
		if h.Fired() != fired {
			t.Fatalf("the fault on %s fired for topic b (%d -> %d)", topic, fired, h.Fired())
		}
		// Removed, the fault stops.
		h.Remove()
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatalf("subscribe to %s after Remove: %v", topic, err)
		}
		cons.Close()
		if h.Fired() != fired {
			t.Fatalf("the removed fault fired (%d -> %d)", fired, h.Fired())
		}
	}
}

func TestFaultHandleCountsItsFiringsAndRetiresAfterItsCount(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c := b.Client()

	// Two PRODUCERs named p1 fail; p2 is not concerned; the third p1 works.
	h := b.Fault(testkit.Fault{Command: "PRODUCER", Producer: "p1", Count: 2, Error: testkit.ServerErrorNotAllowedError})
	for i := range 2 {
		if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", Name: "p1"}); err == nil {
			t.Fatalf("producer p1 #%d was created through the fault", i)
		}
	}
	p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", Name: "p2", DisableBatching: true})
	if err != nil {
		t.Fatalf("producer p2: %v", err)
	}
	defer p2.Close()
	p1, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t", Name: "p1"})
	if err != nil {
		t.Fatalf("producer p1 after the fault's count: %v", err)
	}
	p1.Close()
	if got := h.Fired(); got != 2 {
		t.Fatalf("fired %d times, want 2", got)
	}
	if err := h.Wait(ctx, 3); !errors.Is(err, testkit.ErrFaultDone) {
		t.Fatalf("waiting for a third firing of a retired fault: %v, want ErrFaultDone", err)
	}

	// An observing fault counts the SENDs of p2 and lets them through.
	obs := b.Fault(testkit.Fault{Command: "SEND", Topic: "t", Producer: "p2", Observe: true})
	for range 3 {
		if _, err := p2.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	b.WaitFired(ctx, obs, 3)
	if got, stored := obs.Fired(), len(b.Messages("t")); got != 3 || stored != 3 {
		t.Fatalf("observed %d SENDs, stored %d messages; want 3 and 3", got, stored)
	}
}

func TestFaultRefusesAnUnknownCommandOrTwoActions(t *testing.T) {
	srv := broker.New()
	defer srv.Close()
	for _, f := range []testkit.Fault{
		{Command: "NO_SUCH_COMMAND"},
		{Command: "ACK", Drop: true, Observe: true},
		{Command: "ACK", Drop: true, Error: testkit.ServerErrorNotAllowedError},
		{Command: "ACK", Count: -1},
		{Command: "ACK", Topic: "a/b/c/d/e"},
	} {
		if _, err := srv.AddFault(f); err == nil {
			t.Errorf("AddFault(%+v) was accepted", f)
		}
	}
}

func TestDroppedConnectionFaultMakesTheClientReconnectAndOthersCarryOn(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	h := b.Fault(testkit.Fault{Command: "SEND", Topic: "cut", Count: 1, Drop: true})

	bystander := b.Client()
	cons, err := bystander.Subscribe(pulsar.ConsumerOptions{Topic: "calm", SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()

	// The first SEND closes the producer's connection; the client connects
	// again and sends it anew: it is stored once.
	send(t, b.Client(), "cut", "survives")
	if h.Fired() != 1 {
		t.Fatalf("fired %d times, want 1", h.Fired())
	}
	if ms := b.Messages("cut"); len(ms) != 1 || string(ms[0].Payload) != "survives" {
		t.Fatalf("stored %d messages on cut, want the one resent", len(ms))
	}
	opened := 0
	for _, e := range b.Events() {
		if e.Kind == testkit.EventProducerOpened && strings.HasSuffix(e.Topic, "/cut") {
			opened++
		}
	}
	if opened < 2 {
		t.Fatalf("the producer opened %d times, want a second time after the drop", opened)
	}
	// The other client's connection was not touched.
	send(t, bystander, "calm", "still here")
	m, err := cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "still here" {
		t.Fatalf("bystander received %v, %v", m, err)
	}
	if got := mustSub(t, b, "calm", "s").Consumers; len(got) != 1 {
		t.Fatalf("bystander's subscription has %d consumers", len(got))
	}
}
