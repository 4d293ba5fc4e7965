package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestKeepAliveDropsASilentClientAndKeepsOneThatAnswers(t *testing.T) {
	// An interval long enough that a loaded machine still schedules the
	// answering goroutine within it.
	b := testkit.Start(t, testkit.WithBroker(broker.WithKeepAlive(250*time.Millisecond)))
	silent := dialRaw(t, addrOf(b))
	silent.connect()
	answering := dialRaw(t, addrOf(b))
	answering.connect()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Answer every PING, for six keep-alive intervals.
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			answering.nc.SetReadDeadline(deadline)
			body, err := protocol.ReadFrame(answering.r, nil, 1<<20)
			if err != nil {
				return
			}
			if f, err := protocol.DecodeFrame(body); err == nil && f.Command.GetType() == pb.BaseCommand_PING {
				answering.nc.Write(protocol.AppendCommand(nil, protocol.PongCommand()))
			}
		}
	}()
	// The silent client reads PINGs but never answers: it is dropped.
	if !silent.closedByBroker() {
		t.Fatal("the silent client was not dropped")
	}
	<-done
	answering.send(protocol.PingCommand())
	if r := answering.read(); r.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("the answering client: got %v, want PONG on a live connection", r.GetType())
	}
}

func TestInvalidTopicNamesAreRefused(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	for _, name := range []string{"bad://public/default/t", "a/b", "persistent://pub lic/default/t", "persistent://public/default/"} {
		c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
			Topic: ptr(name), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(1)),
		}))
		if r := c.read(); r.GetError().GetError() != pb.ServerError_InvalidTopicName {
			t.Fatalf("producer on %q: got %v %v, want InvalidTopicName", name, r.GetType(), r.GetError())
		}
	}
}

func TestNonPersistentTopicDeliversLiveMessagesWithIDZero(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	const topic = "non-persistent://public/default/live"
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("now")})
	if err != nil {
		t.Fatal(err)
	}
	if id.LedgerID() != 0 || id.EntryID() != 0 {
		t.Fatalf("receipt id %v, want (0, 0) as Pulsar gives non-persistent messages", id)
	}
	m := receive(t, ctx, cons)
	if string(m.Payload()) != "now" || m.ID().LedgerID() != 0 || m.ID().EntryID() != 0 {
		t.Fatalf("delivered %q with id %v", m.Payload(), m.ID())
	}
}
