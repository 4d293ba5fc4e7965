package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// sendN publishes n messages "m0"… with p and returns the last message id.
func sendN(t *testing.T, p pulsar.Producer, from, n int) pulsar.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var id pulsar.MessageID
	for i := from; i < from+n; i++ {
		var err error
		if id, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// payloads lists the payloads stored on topic, oldest first.
func payloads(b *testkit.Broker, topic string) []string {
	var out []string
	for _, m := range b.Messages(topic) {
		out = append(out, string(m.Payload))
	}
	return out
}

func producerNamed(t *testing.T, client pulsar.Client, topic, name string) pulsar.Producer {
	t.Helper()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestASendThatArrivesTwiceIsStoredOnceWithDeduplication(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("deduplication %v", on), func(t *testing.T) {
			b := testkit.Start(t, testkit.WithBroker(broker.WithDeduplication(on)))
			p := producerNamed(t, b.Client(), "twice", "p")
			defer p.Close()
			sendN(t, p, 0, 1)
			b.Fault(broker.Fault{Command: "SEND", Topic: "twice", Duplicate: true, Count: 1})
			sendN(t, p, 1, 2)
			want := []string{"m0", "m1", "m2"}
			if !on {
				want = []string{"m0", "m1", "m1", "m2"}
			}
			if got := payloads(b, "twice"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("stored %v, want %v", got, want)
			}
			if got := p.LastSequenceID(); got != 2 {
				t.Fatalf("the producer's last sequence id is %d, want 2", got)
			}
			var dups []string
			for _, e := range b.Events() {
				if e.Kind == broker.EventDuplicate {
					dups = append(dups, fmt.Sprintf("%s %s %d", e.Topic, e.Producer, e.SequenceID))
				}
			}
			want = nil
			if on {
				want = []string{"persistent://public/default/twice p 1"}
			}
			if fmt.Sprint(dups) != fmt.Sprint(want) {
				t.Fatalf("duplicate events %v, want %v", dups, want)
			}
		})
	}
}

func TestAProducerUnderTheSameNameGoesOnFromTheStoredSequenceID(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("deduplication %v", on), func(t *testing.T) {
			b := testkit.Start(t, testkit.WithBroker(broker.WithDeduplication(on)))
			client := b.Client()
			first := producerNamed(t, client, "named", "p")
			sendN(t, first, 0, 5)
			first.Close()
			again := producerNamed(t, client, "named", "p")
			defer again.Close()
			sendN(t, again, 5, 1)
			want := int64(5) // the sequence ids 0-4 were stored
			if !on {
				want = 0 // PRODUCER_SUCCESS says -1: it starts again at 0
			}
			if got := again.LastSequenceID(); got != want {
				t.Fatalf("the new producer's first message has sequence id %d, want %d", got, want)
			}
			ms := b.Messages("named")
			if len(ms) != 6 || ms[5].SequenceID != uint64(want) {
				t.Fatalf("stored %d messages, the last with sequence id %d", len(ms), ms[len(ms)-1].SequenceID)
			}
		})
	}
}

func TestAProducerReconnectedAfterAnUnloadGoesOnWithoutDuplicates(t *testing.T) {
	b := testkit.Start(t, testkit.WithDeduplication())
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "unloaded", Name: "p",
		BatchingMaxPublishDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Batches in flight while the topic is unloaded: the client resends
	// what it has no receipt for.
	done := make(chan error, 40)
	for i := range 40 {
		if i == 20 {
			b.UnloadTopic("unloaded")
		}
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	for range 40 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint64]bool{}
	n := 0
	for _, m := range b.Messages("unloaded") {
		if seen[m.SequenceID] {
			t.Fatalf("sequence id %d stored twice", m.SequenceID)
		}
		seen[m.SequenceID] = true
		n++
	}
	if n != 40 {
		t.Fatalf("stored %d messages, want 40", n)
	}
}

func TestResendsOfStoredSequenceIDsAreDroppedAcrossBatches(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithDeduplication(true)))
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "batched", Name: "p",
		BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b.Fault(broker.Fault{Command: "SEND", Topic: "batched", Duplicate: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 6)
	for i := range 6 {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := p.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	ms := b.Messages("batched")
	if len(ms) != 6 {
		t.Fatalf("stored %d messages of two batches sent twice each, want 6", len(ms))
	}
}

func TestDeduplicationFollowsItsPolicyOnALiveTopic(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	p := producerNamed(t, client, "live", "p")
	sendN(t, p, 0, 2)
	p.Close()
	status := func() string {
		return b.Stats("live").DeduplicationStatus
	}
	if got := status(); got != "Disabled" {
		t.Fatalf("status %q before the policy", got)
	}
	b.SetNamespacePolicies("public/default", broker.Policies{DeduplicationEnabled: new(true)})
	if got := status(); got != "Enabled" {
		t.Fatalf("status %q after the namespace policy", got)
	}
	// Turned on now: what was stored before does not count.
	p = producerNamed(t, client, "live", "p")
	sendN(t, p, 2, 1)
	if got := p.LastSequenceID(); got != 0 {
		t.Fatalf("first sequence id after turning deduplication on: %d, want 0", got)
	}
	p.Close()
	p = producerNamed(t, client, "live", "p")
	sendN(t, p, 3, 1)
	if got := p.LastSequenceID(); got != 1 {
		t.Fatalf("first sequence id of the producer that came back: %d, want 1", got)
	}
	p.Close()
	// The topic's policy wins over the namespace's, and off forgets all.
	b.SetTopicPolicies("live", broker.Policies{DeduplicationEnabled: new(false)})
	if got := status(); got != "Disabled" {
		t.Fatalf("status %q after the topic policy", got)
	}
	p = producerNamed(t, client, "live", "p")
	defer p.Close()
	sendN(t, p, 4, 1)
	if got := p.LastSequenceID(); got != 0 {
		t.Fatalf("first sequence id with deduplication off: %d, want 0", got)
	}
}

func TestSequenceIDsOfProducerNamesGoneSixHoursAreForgotten(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithDeduplication(true)), testkit.WithInactiveTopicsKept())
	client := b.Client()
	p := producerNamed(t, client, "forgot", "p")
	sendN(t, p, 0, 3)
	p.Close()
	b.Advance(6 * time.Hour) // checks at 2, 4 and 6 hours: not more than 6 hours gone
	p = producerNamed(t, client, "forgot", "p")
	sendN(t, p, 3, 1)
	if got := p.LastSequenceID(); got != 3 {
		t.Fatalf("after 6 hours: first sequence id %d, want 3", got)
	}
	p.Close()
	b.Advance(8 * time.Hour) // the check at 14 hours finds it gone for 8
	p = producerNamed(t, client, "forgot", "p")
	defer p.Close()
	sendN(t, p, 4, 1)
	if got := p.LastSequenceID(); got != 0 {
		t.Fatalf("after 8 more hours: first sequence id %d, want 0", got)
	}
}
