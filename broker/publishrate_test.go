package broker_test

import (
	"context"
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

// A topic's publish rate stops the broker reading from the producer's
// connection once a second's messages are in; broker time passing lets the
// next ones in.
func TestPublishRateThrottlesTheProducersConnection(t *testing.T) {
	b := testkit.Start(t)
	ctx := testCtx(t)
	const topic = "persistent://public/default/pub-rate"
	b.CreateTopic(topic)
	b.SetTopicPolicies(topic, broker.Policies{PublishRate: &broker.PublishRate{Messages: 5}})
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 12)
	for i := range 12 {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte{byte(i)}},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	stored := func() int64 { ts, _ := b.Topic(topic); return ts.Entries }
	b.WaitFor(ctx, "five stored, then the connection throttled", func() bool {
		return stored() == 5 && b.PublishThrottled(topic)
	})
	// Nothing more is read while the clock stands still.
	if n := stored(); n != 5 {
		t.Fatalf("%d stored while throttled", n)
	}
	// A second refills the five tokens: five more, then throttled again.
	b.Advance(time.Second)
	b.WaitFor(ctx, "ten stored, throttled again", func() bool { return stored() == 10 && b.PublishThrottled(topic) })
	b.Advance(time.Second)
	for range 12 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := stored(); n != 12 {
		t.Fatalf("%d stored in the end, want 12", n)
	}
}

// With delayed delivery off, a delayed message goes out at once; a delay
// beyond maxDeliveryDelayInMillis is refused.
func TestDelayedDeliveryPolicy(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	const topic = "persistent://public/default/delay-policy"
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	b.SetTopicPolicies(topic, broker.Policies{DelayedDelivery: &broker.DelayedDelivery{Active: false, TickMillis: 1000}})
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("now"), DeliverAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, ctx, cons); string(m.Payload()) != "now" {
		t.Fatalf("got %q", m.Payload())
	}
	// Over the maximum, the SEND is refused (pulsar-client-go then drops the
	// producer from its connection, so the refusal is read on the wire).
	b.SetTopicPolicies(topic, broker.Policies{DelayedDelivery: &broker.DelayedDelivery{Active: true, TickMillis: 1000,
		MaxDelayMillis: 5000}})
	raw := dialRaw(t, strings.TrimPrefix(b.URL(), "pulsar://"))
	raw.connect()
	raw.producer(topic, 1)
	send := func(seq uint64, delay time.Duration) *pb.BaseCommand {
		now := time.Now().UnixMilli()
		md := &pb.MessageMetadata{ProducerName: proto.String("raw"), SequenceId: proto.Uint64(seq),
			PublishTime: proto.Uint64(uint64(now)), DeliverAtTime: proto.Int64(now + delay.Milliseconds())}
		cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{
			ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(seq), NumMessages: proto.Int32(1)})
		raw.write(protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, []byte("m"))))
		return raw.read()
	}
	r := send(1, time.Minute)
	if r.SendError == nil || r.SendError.GetError() != pb.ServerError_NotAllowedError ||
		r.SendError.GetMessage() != "Exceeds max allowed delivery delay of 5000 milliseconds" {
		t.Fatalf("a delay over the maximum: %v", r)
	}
	if r := send(2, time.Second); r.SendReceipt == nil {
		t.Fatalf("a delay under the maximum: %v", r)
	}
}
