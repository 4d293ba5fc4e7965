package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestExclusiveProducerFencesOthersAndBlocksSharedOnes(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "excl-prod", ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "excl-prod", ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err == nil || !strings.Contains(err.Error(), "ProducerFenced") {
		t.Fatalf("second exclusive producer: %v, want ProducerFenced", err)
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "excl-prod"})
	if err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("shared producer beside an exclusive one: %v, want ProducerBusy", err)
	}
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("mine")}); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForExclusiveProducerGetsTheTopicWhenTheHolderCloses(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 200 * time.Millisecond })
	first, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "wait-excl", ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		second, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "wait-excl",
			ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		if err == nil {
			_, err = second.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("second")})
			second.Close()
		}
		got <- err
	}()
	// The waiting producer outlives the client's 200 ms operation timeout:
	// it got a PRODUCER_SUCCESS that is not ready yet.
	select {
	case err := <-got:
		t.Fatalf("the waiting producer returned before the holder closed: %v", err)
	case <-time.After(400 * time.Millisecond):
	}
	first.Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiting producer: %v", err)
	}
	if ms := b.Messages("wait-excl"); len(ms) != 1 || string(ms[0].Payload) != "second" {
		t.Fatalf("stored %v", ms)
	}
}

func TestExclusiveWithFencingClosesTheOtherProducersSilently(t *testing.T) {
	// pulsar-client-go has no fencing mode: this client speaks the protocol.
	// Pulsar closes the fenced producer without a CLOSE_PRODUCER.
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("fence", 1)
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: ptr("fence"), ProducerId: ptr(uint64(2)), RequestId: ptr(uint64(9)),
		ProducerAccessMode: pb.ProducerAccessMode_ExclusiveWithFencing.Enum(),
	}))
	r := c.read()
	if r.ProducerSuccess == nil || r.ProducerSuccess.GetRequestId() != 9 {
		t.Fatalf("fencing producer: got %v, want its PRODUCER_SUCCESS and no CLOSE_PRODUCER before it", r.GetType())
	}
	if r.ProducerSuccess.TopicEpoch == nil || r.ProducerSuccess.GetTopicEpoch() != 0 {
		t.Fatalf("fencing producer: topic epoch %v, want 0 (the topic's first)", r.ProducerSuccess.TopicEpoch)
	}
	if st, _ := b.Topic("fence"); len(st.Producers) != 1 {
		t.Fatalf("producers after fencing: %v, want only the fencing one", st.Producers)
	}
}

func TestTerminatedTopicRefusesNewMessages(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "ended", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("last")})
	if err != nil {
		t.Fatal(err)
	}
	// A message in flight when the topic is terminated: its SEND is held, so
	// that it is still pending in the client when the producer, closed by
	// the termination, comes back and is refused. (A Send issued after the
	// termination races, in pulsar-client-go, with that reconnection.)
	ctx := testCtx(t)
	sends := b.Hold(broker.Fault{Command: "SEND", Topic: "ended", Count: 1})
	result := make(chan error, 1)
	p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("too late")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { result <- err })
	b.NextHeld(ctx, sends)
	if last := b.TerminateTopic("ended"); last.Entry != id.EntryID() {
		t.Fatalf("terminate: last %+v, want entry %d", last, id.EntryID())
	}
	if err := <-result; !errors.Is(err, pulsar.ErrTopicTerminated) {
		t.Fatalf("send in flight at the termination: %v, want ErrTopicTerminated", err)
	}
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "ended"}); err == nil || !strings.Contains(err.Error(), "TopicTerminated") {
		t.Fatalf("producer after termination: %v, want TopicTerminatedError", err)
	}
	if ms := b.Messages("ended"); len(ms) != 1 {
		t.Fatalf("stored %d messages, want the one before termination", len(ms))
	}
}
