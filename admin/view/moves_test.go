package view_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

// brokersStore is a store that holds no entry and tells a cluster of n
// brokers, as a broker of a cluster does.
type brokersStore int

func (brokersStore) Entry(string, broker.MessageID) (broker.Entry, error) {
	return broker.Entry{}, errors.New("no entry")
}

func (n brokersStore) Brokers() []broker.BrokerInfo { return make([]broker.BrokerInfo, n) }

// movesEvents is a topic's story on two brokers, as a cluster's history
// records it (each broker numbers its own events): created on broker 0, two
// messages published there, the first acked, the second held when the topic
// moves to broker 1, which delivers it again and then crashes.
func movesEvents() []broker.Event {
	const topic = "persistent://public/default/t"
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var seq [2]uint64
	var out []broker.Event
	ev := func(b int, e broker.Event) {
		seq[b]++
		e.Seq, e.Broker, e.Topic = seq[b], b, topic
		e.Time = at.Add(time.Duration(len(out)) * time.Millisecond)
		if e.ID == (broker.MessageID{}) {
			e.ID.BatchIndex = -1
		}
		out = append(out, e)
	}
	m1 := broker.MessageID{Ledger: 3, Entry: 0, BatchIndex: -1}
	m2 := broker.MessageID{Ledger: 3, Entry: 1, BatchIndex: -1}
	c := broker.Event{Subscription: "s", Consumer: "c", ConsumerID: 1, Remote: "client:1"}
	with := func(e broker.Event, kind broker.EventKind, id broker.MessageID) broker.Event {
		e.Kind, e.ID = kind, id
		return e
	}
	ev(0, broker.Event{Kind: broker.EventTopicLoaded, Reason: "created"})
	ev(0, broker.Event{Kind: broker.EventPublished, ID: m1, Producer: "p"})
	ev(0, broker.Event{Kind: broker.EventPublished, ID: m2, Producer: "p"})
	ev(0, with(c, broker.EventDelivered, m1))
	ev(0, with(c, broker.EventDelivered, m2))
	ev(0, with(c, broker.EventAcked, m1))
	closed := with(c, broker.EventConsumerClosed, broker.MessageID{})
	closed.Reason = "broker"
	ev(0, closed)
	ev(0, broker.Event{Kind: broker.EventTopicUnloaded, Reason: "unload"})
	ev(1, broker.Event{Kind: broker.EventTopicLoaded, Reason: "loaded"})
	again := c
	again.Remote = "client:2"
	ev(1, with(again, broker.EventDelivered, m2))
	ev(1, broker.Event{Kind: broker.EventTopicUnloaded, Reason: "crash"})
	return out
}

func kindsAndBrokers(ms []view.Mark) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Where()+" "+string(m.Kind))
	}
	return out
}

func TestATopicsMovesAreOnTheLivesOfTheMessagesTheyFallIn(t *testing.T) {
	lives := view.Lives(movesEvents(), brokersStore(2), nil)
	if len(lives) != 2 {
		t.Fatalf("%d lives, want 2", len(lives))
	}
	acked, moved := lives[0], lives[1]
	if len(acked.Moves) != 0 {
		t.Errorf("the message acked before the move has moves %v", kindsAndBrokers(acked.Moves))
	}
	want := []string{
		"broker 0 published", "broker 0 delivered", "broker 0 broker-closed",
		"broker 0 topic-unloaded", "broker 1 topic-loaded", "broker 1 delivered",
		"broker 1 topic-unloaded", // after its last mark: it is still held
	}
	if diff := cmp.Diff(want, kindsAndBrokers(moved.Marks)); diff != "" {
		t.Errorf("marks of the moved message (-want +got):\n%s", diff)
	}
	var labels []string
	for _, m := range moved.Moves {
		labels = append(labels, m.MoveLabel())
	}
	if diff := cmp.Diff([]string{"unloaded from broker 0", "loaded on broker 1", "unloaded from broker 1 (crash)"}, labels); diff != "" {
		t.Errorf("move labels (-want +got):\n%s", diff)
	}
	// The deliveries are told apart although both brokers numbered one of
	// their events 5 and 2.
	if got := lanesOf(moved, "s"); !cmp.Equal(got, map[string][]int32{"c": {0, 0}}) {
		t.Errorf("lanes %v", got)
	}
	if o := outcome(moved, "s"); o != view.OutcomeHeld {
		t.Errorf("outcome %s, want held", o)
	}
	text := moved.String()
	for _, line := range []string{"broker 1  delivered to c on s with redelivery count 0", "broker 0  topic unloaded from broker 0: ",
		"broker 1  topic loaded on broker 1 from the store", "broker 1  topic unloaded from broker 1 (crash)"} {
		if !strings.Contains(text, line) {
			t.Errorf("the timeline lacks %q:\n%s", line, text)
		}
	}
	pic := string(view.Picture(moved))
	for _, want := range []string{`class="row-moves"`, `data-kind="topic-unloaded" data-reason="crash" data-broker="1"`,
		`unloaded from broker 0 · loaded on broker 1`, `>unloaded from broker 1 (crash)<`, `class="move-band"`} {
		if !strings.Contains(pic, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
}

func TestALoneBrokersLivesNameNoBroker(t *testing.T) {
	for _, store := range []view.Store{nil, brokersStore(1)} {
		moved := view.Lives(movesEvents(), store, nil)[1]
		for _, m := range moved.Marks {
			if m.Clustered || m.Where() != "" {
				t.Errorf("mark %s names broker %q", m.Kind, m.Where())
			}
		}
		if got := moved.Moves[0].MoveLabel() + " · " + moved.Moves[1].MoveLabel(); got != "unloaded · loaded" {
			t.Errorf("move labels %q", got)
		}
		if strings.Contains(moved.String(), "broker 0") {
			t.Errorf("the timeline names a broker:\n%s", moved)
		}
	}
}

func TestAMoveAfterAMessageWasSettledIsNotOnItsLife(t *testing.T) {
	events := movesEvents()
	// Broker 1 acknowledges the second message before it crashes.
	last := events[len(events)-1]
	ack := events[len(events)-2]
	ack.Kind, ack.Seq = broker.EventAcked, last.Seq
	last.Seq++
	events = append(events[:len(events)-1], ack, last)
	moved := view.Lives(events, brokersStore(2), nil)[1]
	if got := len(moved.Moves); got != 2 {
		t.Errorf("%d moves on the life, want the move before the ack and not the crash after it: %v", got, kindsAndBrokers(moved.Moves))
	}
}
