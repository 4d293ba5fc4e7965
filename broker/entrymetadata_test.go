package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// withEntryMetadata starts a broker with both entry metadata interceptors,
// exposing the metadata to clients or not.
func withEntryMetadata(t *testing.T, expose bool) *testkit.Broker {
	if expose {
		return testkit.Start(t, testkit.WithBrokerEntryMetadata())
	}
	return testkit.Start(t, testkit.WithBroker(broker.WithBrokerEntryMetadata(broker.BrokerEntryMetadata{
		BrokerTimestamp: true, Index: true})))
}

// sendBatchThenSingles publishes a batch of three messages "b0".."b2",
// then two messages "s0", "s1" of their own.
func sendBatchThenSingles(t *testing.T, client pulsar.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	batcher, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer batcher.Close()
	done := make(chan error, 3)
	for i := range 3 {
		batcher.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "b%d", i)},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := batcher.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	single, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	sendN(t, single, 0, 2)
}

// receiveN receives n messages with c, acknowledging each.
func receiveN(t *testing.T, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []pulsar.Message
	for range n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(out), err)
		}
		c.Ack(m)
		out = append(out, m)
	}
	return out
}

func subscribeEarliest(t *testing.T, client pulsar.Client, topic string) pulsar.Consumer {
	t.Helper()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestBrokerEntryMetadataGivesEachMessageTheBrokerTimeAndATopicIndex(t *testing.T) {
	b := withEntryMetadata(t, true)
	client := b.Client()
	b.Advance(time.Hour) // the broker's time is now an hour ahead of the client's
	brokerTime := b.Now().Truncate(time.Millisecond)
	sendBatchThenSingles(t, client, "indexed")
	c := subscribeEarliest(t, client, "indexed")
	var got []string
	for _, m := range receiveN(t, c, 5) {
		if m.Index() == nil || m.BrokerPublishTime() == nil {
			t.Fatalf("%s: index %v, broker publish time %v: want both", m.Payload(), m.Index(), m.BrokerPublishTime())
		}
		if bt := *m.BrokerPublishTime(); bt.Before(brokerTime) || !bt.After(m.PublishTime().Add(30*time.Minute)) {
			t.Errorf("%s: broker publish time %v, want the broker clock's (from %v), not the client's %v",
				m.Payload(), bt, brokerTime, m.PublishTime())
		}
		got = append(got, fmt.Sprintf("%s=%d", m.Payload(), *m.Index()))
	}
	if want := "[b0=0 b1=1 b2=2 m0=3 m1=4]"; fmt.Sprint(got) != want {
		t.Fatalf("indexes %v, want %s", got, want)
	}
	// Another topic counts from 0.
	sendN(t, producerNamed(t, client, "other", "p"), 0, 1)
	if m := receiveN(t, subscribeEarliest(t, client, "other"), 1)[0]; m.Index() == nil || *m.Index() != 0 {
		t.Fatalf("first message of another topic: index %v, want 0", m.Index())
	}
	// The broker keeps the same figures.
	var stored []string
	for _, m := range b.Messages("indexed") {
		stored = append(stored, fmt.Sprintf("%s=%d", m.Payload, m.Index))
		if m.BrokerPublishTime.Before(brokerTime) {
			t.Errorf("stored %s: broker publish time %v, want from %v", m.Payload, m.BrokerPublishTime, brokerTime)
		}
	}
	if want := "[b0=0 b1=1 b2=2 m0=3 m1=4]"; fmt.Sprint(stored) != want {
		t.Fatalf("stored indexes %v, want %s", stored, want)
	}
}

func TestBrokerEntryMetadataIsKeptFromClientsUnlessExposed(t *testing.T) {
	b := withEntryMetadata(t, false)
	client := b.Client()
	sendBatchThenSingles(t, client, "hidden")
	for _, m := range receiveN(t, subscribeEarliest(t, client, "hidden"), 5) {
		if m.Index() != nil || m.BrokerPublishTime() != nil {
			t.Fatalf("%s: index %v, broker publish time %v: want neither", m.Payload(), m.Index(), m.BrokerPublishTime())
		}
	}
	if ms := b.Messages("hidden"); len(ms) != 5 || ms[4].Index != 4 {
		t.Fatalf("stored: %d messages, want 5, the last with index 4", len(ms))
	}
}

func TestNoBrokerEntryMetadataByDefault(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	sendBatchThenSingles(t, client, "plain")
	for _, m := range receiveN(t, subscribeEarliest(t, client, "plain"), 5) {
		if m.Index() != nil || m.BrokerPublishTime() != nil {
			t.Fatalf("%s: index %v, broker publish time %v: want neither", m.Payload(), m.Index(), m.BrokerPublishTime())
		}
	}
	if ms := b.Messages("plain"); ms[0].Index != -1 || !ms[0].BrokerPublishTime.IsZero() {
		t.Fatalf("stored: index %d, broker publish time %v, want -1 and none", ms[0].Index, ms[0].BrokerPublishTime)
	}
}

func TestSeekByTimeFollowsTheBrokerTimestamp(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("interceptors %v", on), func(t *testing.T) {
			var b *testkit.Broker
			if on {
				b = withEntryMetadata(t, true)
			} else {
				b = testkit.Start(t)
			}
			client := b.Client()
			p := producerNamed(t, client, "timed", "p")
			defer p.Close()
			sendN(t, p, 0, 1)
			// The broker's clock runs an hour ahead from here; the client's
			// publish times do not.
			b.Advance(time.Hour)
			sendN(t, p, 1, 2)
			c := subscribeEarliest(t, client, "timed")
			if err := c.SeekByTime(b.Now().Add(-30 * time.Minute)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if !on {
				// Every publish time lies before the target: nothing is left.
				b.WaitBacklog(ctx, "timed", "s", 0)
				return
			}
			b.WaitBacklog(ctx, "timed", "s", 2)
			var got []string
			for _, m := range receiveN(t, c, 2) {
				got = append(got, string(m.Payload()))
			}
			if fmt.Sprint(got) != "[m1 m2]" {
				t.Fatalf("after the seek: %v, want [m1 m2], the messages the broker stored after the target", got)
			}
		})
	}
}

func TestACompactedBatchKeepsItsBrokerEntryMetadata(t *testing.T) {
	b := withEntryMetadata(t, true)
	client := b.Client()
	b.PublishBatch("compacted", broker.ProducerMessage{Key: "k", Payload: []byte("old")},
		broker.ProducerMessage{Key: "j", Payload: []byte("j")}, broker.ProducerMessage{Key: "k", Payload: []byte("new")})
	b.Compact("compacted")
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: "compacted", StartMessageID: pulsar.EarliestMessageID(),
		ReadCompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Index() == nil || m.BrokerPublishTime() == nil {
			t.Fatalf("%s from the compacted view: index %v, broker publish time %v", m.Payload(), m.Index(), m.BrokerPublishTime())
		}
		if len(m.Payload()) > 0 { // pulsar-client-go also hands over the compacted-out message, empty
			got = append(got, fmt.Sprintf("%s=%d", m.Payload(), *m.Index()))
		}
	}
	if want := "[j=1 new=2]"; fmt.Sprint(got) != want {
		t.Fatalf("read compacted %v, want %s: the batch's indexes as written", got, want)
	}
}

func TestBrokerEntryMetadataGoesOnlyToClientsThatAnnounceIt(t *testing.T) {
	br := broker.New(broker.WithBrokerEntryMetadata(broker.BrokerEntryMetadata{
		BrokerTimestamp: true, Index: true, ExposeToClients: true}))
	if err := br.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	const topic = "persistent://public/default/announced"
	cases := []struct {
		name     string
		version  int32
		announce bool
		want     bool
	}{
		{"protocol 21, announced", 21, true, true},
		{"protocol 18, announced", 18, true, true},
		{"protocol 21, not announced", 21, false, false},
		{"protocol 17, announced", 17, true, false},
	}
	drivers := make([]*rawDriver, len(cases))
	for i, c := range cases {
		drivers[i] = dialAnnouncing(t, br.Addr().String(), c.version, c.announce)
		defer drivers[i].nc.Close()
		drivers[i].subscribe(topic, fmt.Sprintf("s%d", i), 1, 10)
	}
	if _, err := br.Publish(topic, broker.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		d := drivers[i]
		d.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			body, err := protocol.ReadFrame(d.r, nil, 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			f, err := protocol.DecodeFrame(body)
			if err != nil {
				t.Fatal(err)
			}
			if f.Command.GetType() != pb.BaseCommand_MESSAGE {
				continue
			}
			got := protocol.BrokerEntryMetadataLen(f.Payload) > 0
			pl, err := protocol.ParsePayload(f.Payload)
			if got != c.want || err != nil || !pl.ChecksumValid() || string(pl.Body) != "m" {
				t.Errorf("%s: broker entry metadata %v (want %v), payload %q, %v", c.name, got, c.want, pl.Body, err)
			}
			break
		}
	}
}
