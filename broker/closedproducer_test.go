package broker_test

import (
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// remotes lists the client addresses of the broker's open connections.
func remotes(b *testkit.Broker) []string {
	var out []string
	for _, c := range b.Connections() {
		out = append(out, c.Remote)
	}
	return out
}

func TestSendInFlightWhenTheBrokerClosesItsProducerIsIgnoredAndTheConnectionStays(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "unloaded", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	before := remotes(b)
	if len(before) != 1 {
		t.Fatalf("connections %v, want the client's one", before)
	}

	// A SEND written before the client learns of the unload reaches the
	// broker after CLOSE_PRODUCER, and before the producer is created again:
	// the SEND and the PRODUCER that re-creates the producer are held, and
	// released in that order once the unload has closed the producer.
	sends := b.Hold(broker.Fault{Command: "SEND", Topic: "unloaded", Count: 1})
	creates := b.Hold(broker.Fault{Command: "PRODUCER", Topic: "unloaded", Count: 1})
	result := make(chan error, 1)
	p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("in flight")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { result <- err })
	send := b.NextHeld(ctx, sends)
	b.UnloadTopic("unloaded")
	create := b.NextHeld(ctx, creates)
	b.Release(ctx, send, create) // fails if the SEND took the connection down

	if err := <-result; err != nil {
		t.Fatalf("send in flight at the unload: %v", err)
	}
	if after := remotes(b); !slices.Equal(after, before) {
		t.Fatalf("connections %v after the late SEND, want %v still open", after, before)
	}
	var got []string
	for _, m := range b.Messages("unloaded") {
		got = append(got, string(m.Payload))
	}
	if !slices.Equal(got, []string{"before", "in flight"}) {
		t.Fatalf("stored %q, want the late SEND ignored and its resend stored once", got)
	}
}

func TestSendForAProducerNeverOpenedStillClosesTheConnection(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "closed-by-client", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	// A producer the client closed itself is not one the broker closed: a
	// SEND for it after its CLOSE_PRODUCER costs the connection, as in
	// Pulsar.
	sends := b.Hold(broker.Fault{Command: "SEND", Topic: "closed-by-client", Count: 1})
	p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("late")},
		func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	send := b.NextHeld(ctx, sends)
	before := remotes(b)
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	b.WaitFor(ctx, "the producer closed by the client", func() bool {
		topic, _ := b.Topic("closed-by-client")
		return len(topic.Producers) == 0
	})
	send.Release()
	b.WaitFor(ctx, "the connection closed", func() bool {
		return !slices.Equal(remotes(b), before)
	})
	<-closed
}
