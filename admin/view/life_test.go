package view_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// lanesOf returns a life's deliveries on a subscription, per consumer, as
// redelivery counts in order.
func lanesOf(l *view.Life, sub string) map[string][]int32 {
	out := map[string][]int32{}
	for _, s := range l.Subs {
		if s.Name != sub {
			continue
		}
		for _, ln := range s.Lanes {
			for _, d := range ln.Deliveries {
				out[ln.Consumer] = append(out[ln.Consumer], d.At.Count)
			}
		}
	}
	return out
}

// ends returns the kinds of what ended each delivery on a subscription, in
// event order.
func ends(l *view.Life, sub string) []view.MarkKind {
	var out []view.MarkKind
	for _, m := range l.Marks {
		if m.Subscription != sub {
			continue
		}
		switch m.Kind {
		case view.MarkAcked, view.MarkAsked, view.MarkCrashed, view.MarkClosed, view.MarkBrokerClosed, view.MarkExpired:
			out = append(out, m.Kind)
		}
	}
	return out
}

func outcome(l *view.Life, sub string) view.OutcomeKind {
	for _, s := range l.Subs {
		if s.Name == sub {
			return s.Outcome.Kind
		}
	}
	return ""
}

func keyOf(topic string, id broker.MessageID) view.Key {
	return view.Key{Topic: topic, Ledger: id.Ledger, Entry: id.Entry}
}

func TestLivesOfTheOrdersScenario(t *testing.T) {
	b, ids := runOrders(t)
	events := b.Events()

	t.Run("the poison message's deliveries, requests and dead-letter copy", func(t *testing.T) {
		l := view.LifeOf(events, nil, keyOf(ordersFull, ids["poison"]))
		if diff := cmp.Diff(deliveriesOf(events, workers, ids["poison"]), lanesOf(l, workers)); diff != "" {
			t.Errorf("lanes on %s (-broker events +life):\n%s", workers, diff)
		}
		asked := countKind(events, broker.EventRedeliveryAsked, workers, ids["poison"])
		got := 0
		for _, k := range ends(l, workers) {
			if k == view.MarkAsked {
				got++
			}
		}
		if got != asked || asked == 0 {
			t.Errorf("%d redelivery requests in the life, %d in the events", got, asked)
		}
		dead := b.Messages(deadTopic)
		if len(l.Copies) != 1 || l.Copies[0].Copy != keyOf("persistent://public/default/"+deadTopic, dead[0].ID) {
			t.Fatalf("copies %+v, want the one on %s (%+v)", l.Copies, deadTopic, dead[0].ID)
		}
		if l.Copies[0].Subscription != workers {
			t.Errorf("the copy is said to come from %q, want %s", l.Copies[0].Subscription, workers)
		}
		if got := outcome(l, workers); got != view.OutcomeDeadLettered {
			t.Errorf("outcome on %s: %s, want dead-lettered", workers, got)
		}
		if got := outcome(l, audit); got != view.OutcomeAcked {
			t.Errorf("outcome on %s: %s, want acked", audit, got)
		}
	})

	t.Run("a crash sends the message back with its count unchanged", func(t *testing.T) {
		l := view.LifeOf(events, nil, keyOf(ordersFull, ids["crash-once"]))
		if diff := cmp.Diff([]view.MarkKind{view.MarkCrashed, view.MarkAcked}, ends(l, workers)); diff != "" {
			t.Errorf("ends on %s (-want +got):\n%s", workers, diff)
		}
		var counts []int32
		for _, c := range lanesOf(l, workers) {
			counts = append(counts, c...)
		}
		if diff := cmp.Diff([]int32{0, 0}, counts); diff != "" {
			t.Errorf("counts (-want +got):\n%s", diff)
		}
	})

	t.Run("a nack then an ack", func(t *testing.T) {
		l := view.LifeOf(events, nil, keyOf(ordersFull, ids["retry-once"]))
		if diff := cmp.Diff([]view.MarkKind{view.MarkAsked, view.MarkAcked}, ends(l, workers)); diff != "" {
			t.Errorf("ends on %s (-want +got):\n%s", workers, diff)
		}
		if n, most := l.Deliveries(); n != 3 || most != 1 {
			t.Errorf("%d deliveries, highest count %d; want 3 (two on %s, one on %s) and 1", n, most, workers, audit)
		}
	})

	t.Run("the text timeline and testkit's agree", func(t *testing.T) {
		l := view.LifeOf(events, storeOf{b}, keyOf(ordersFull, ids["poison"]))
		if got, want := b.Timeline(ordersTopic, ids["poison"]), l.String(); got != want {
			t.Errorf("testkit timeline:\n%s\nview life:\n%s", got, want)
		}
	})
}

func TestLifeShowsExpiryOfMessagesNoConsumerGot(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "aging", SubscriptionName: "s", Type: pulsar.Shared,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := produce(ctx, t, b, "aging", "a", "b", "c")
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(m); err != nil {
		t.Fatal(err)
	}
	c.Close()
	b.SetTopicPolicies("aging", broker.Policies{MessageTTLSeconds: new(60)})
	b.Advance(5 * time.Minute) // to the periodic TTL check
	b.WaitBacklog(ctx, "aging", "s", 0)
	full := "persistent://public/default/aging"
	got := map[int64]view.OutcomeKind{}
	for _, l := range view.Lives(b.Events(), nil, func(k view.Key) bool { return k.Topic == full }) {
		got[l.Entry] = outcome(l, "s")
	}
	want := map[int64]view.OutcomeKind{ids[0].Entry: view.OutcomeAcked, ids[1].Entry: view.OutcomeExpired,
		ids[2].Entry: view.OutcomeExpired}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes by entry (-want +got):\n%s", diff)
	}
}

func TestLifeAfterASeekShowsTheSecondRound(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "again", SubscriptionName: "s", Type: pulsar.Exclusive,
		Name: "reader", AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := produce(ctx, t, b, "again", "x")
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(m); err != nil {
		t.Fatal(err)
	}
	if err := c.Seek(m.ID()); err != nil {
		t.Fatal(err)
	}
	// The broker delivers the message again (the client drops it, as it
	// precedes nothing it asked for, and acks it).
	k := keyOf("persistent://public/default/again", ids[0])
	var l *view.Life
	b.WaitFor(ctx, "the delivery after the seek", func() bool {
		l = view.LifeOf(b.Events(), nil, k)
		n, _ := l.Deliveries()
		return n == 2
	})
	var kinds []view.MarkKind
	for _, mk := range l.Marks[:5] {
		kinds = append(kinds, mk.Kind)
	}
	want := []view.MarkKind{view.MarkPublished, view.MarkDelivered, view.MarkAcked, view.MarkSeek, view.MarkDelivered}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
	if got := l.Subs[0].Lanes[0].Deliveries[1].At.Seq; got != l.Marks[4].Seq {
		t.Errorf("the second delivery is not the one after the seek")
	}
}

func TestCumulativeAckSettlesEveryEntryTheConsumerHeld(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "upto", SubscriptionName: "s", Type: pulsar.Exclusive,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	produce(ctx, t, b, "upto", "a", "b", "c")
	var last pulsar.Message
	for range 3 {
		if last, err = c.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AckCumulative(last); err != nil {
		t.Fatal(err)
	}
	b.WaitBacklog(ctx, "upto", "s", 0)
	for _, l := range view.Lives(b.Events(), nil, func(k view.Key) bool { return k.Topic == "persistent://public/default/upto" }) {
		if got := outcome(l, "s"); got != view.OutcomeAcked {
			t.Errorf("entry %d: %s, want acked by the cumulative ack", l.Entry, got)
		}
	}
}

// produce sends payloads to topic, unbatched, and returns their ids.
func produce(ctx context.Context, t *testing.T, b *testkit.Broker, topic string, payloads ...string) []broker.MessageID {
	t.Helper()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []broker.MessageID
	for _, pl := range payloads {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID(), BatchIndex: -1})
	}
	return ids
}

func TestAConsumerOfTheSameNameClosingElsewhereDoesNotEndTheHold(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	// Two clients, each with a consumer named "same": the clients number
	// their consumers alike, so only the connections tell them apart.
	var consumers []pulsar.Consumer
	for range 2 {
		c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "twins", SubscriptionName: "s",
			Type: pulsar.Shared, Name: "same"})
		if err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, c)
	}
	ids := produce(ctx, t, b, "twins", "x")
	var other pulsar.Consumer
	select {
	case <-consumers[0].Chan():
		other = consumers[1]
	case <-consumers[1].Chan():
		other = consumers[0]
	case <-ctx.Done():
		t.Fatal("no delivery")
	}
	other.Close()
	b.WaitFor(ctx, "one consumer left", func() bool {
		s, _ := b.Subscription("twins", "s")
		return len(s.Consumers) == 1
	})
	l := view.LifeOf(b.Events(), nil, keyOf("persistent://public/default/twins", ids[0]))
	if got := outcome(l, "s"); got != view.OutcomeHeld {
		t.Fatalf("outcome %s, want held: the consumer that closed did not hold the message\n%s", got, l)
	}
}

// storeOf gives the view a test broker's stored entries.
type storeOf struct{ b *testkit.Broker }

func (s storeOf) Entry(topic string, id broker.MessageID) (broker.Entry, error) {
	return s.b.Entry(topic, id), nil
}

func TestEachCopyInABatchFindsItsOrigin(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	ids := produce(ctx, t, b, "src", "a", "b", "c")
	// A dead-letter producer as a client runs one: batching, each copy
	// naming its origin.
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "src-dlq", BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, id := range ids {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("copy"), Properties: map[string]string{
			"REAL_TOPIC": "persistent://public/default/src", "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1", id.Ledger, id.Entry)}}, nil)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	dead := b.Messages("src-dlq")
	if len(dead) != 3 || dead[0].BatchSize != 3 {
		t.Fatalf("the copies are %+v, want one batch of 3", dead)
	}
	src := func(k view.Key) bool { return k.Topic == "persistent://public/default/src" }
	for _, l := range view.Lives(b.Events(), storeOf{b}, src) {
		i := slices.IndexFunc(ids, func(id broker.MessageID) bool { return id.Entry == l.Entry })
		if len(l.Copies) != 1 || l.Copies[0].Copy != keyOf("persistent://public/default/src-dlq", dead[i].ID) ||
			l.Copies[0].CopyIndex != dead[i].ID.BatchIndex {
			t.Errorf("entry %d: copies %+v, want the copy at %+v", l.Entry, l.Copies, dead[i].ID)
		}
	}
	// Without the store, the events tell the first copy's origin only.
	n := 0
	for _, l := range view.Lives(b.Events(), nil, src) {
		n += len(l.Copies)
	}
	if n != 1 {
		t.Errorf("%d copies found from the events alone, want 1", n)
	}
}
