package testkit

import (
	"fmt"
	"strings"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

// Events returns a copy of every event the broker reported since Start:
// publishes, deliveries with their redelivery counts, acks, redelivery
// requests, consumers and producers opening and closing, expiries. It waits
// for the events still on their way to the hooks (see
// broker.Broker.DeliverEvents), so it must not be called from an OnEvent
// hook.
func (b *Broker) Events() []Event {
	b.srv.DeliverEvents()
	return b.history.Events()
}

// Timeline draws the life of one message (its entry, for a batch) as the
// broker saw it: published, each delivery with its redelivery count, acks,
// redelivery requests, the consumer closes that sent it back, expiry, and
// the copy a dead-letter policy produced. topic may be short or full; an
// invalid name fails the test.
func (b *Broker) Timeline(topic string, id MessageID) string {
	b.tb.Helper()
	tn, err := broker.ParseTopicName(topic)
	b.must(err, "timeline of %s", topic)
	k := view.Key{Topic: tn.String(), Ledger: id.Ledger, Entry: id.Entry}
	l := view.LifeOf(b.Events(), b.srv, k)
	if l == nil {
		return fmt.Sprintf("message %d:%d on %s\n  (no event)\n", k.Ledger, k.Entry, k.Topic)
	}
	return l.String()
}

// Timelines draws the timeline of every message in the trace, at most max
// of them (the ones with the most events first), or all when max <= 0.
func (b *Broker) Timelines(max int) string { return b.timelines(b.Events(), max) }

func (b *Broker) timelines(events []broker.Event, max int) string {
	return timelinesOf(view.Lives(events, b.srv, nil), max)
}

// timelinesOf draws the busiest of the lives, at most max of them.
func timelinesOf(all []*view.Life, max int) string {
	var sb strings.Builder
	for _, l := range view.Busiest(all, max) {
		sb.WriteString(l.String())
	}
	if max > 0 && len(all) > max {
		fmt.Fprintf(&sb, "… and %d more messages\n", len(all)-max)
	}
	return sb.String()
}

// failureScope returns the events a failure report shows, and what they
// are: every event, or, after a property check under rapid, those of the
// last case run (the shrunk case rapid prints) and its dead-letter topic.
func (b *Broker) failureScope() (events []broker.Event, scope string, topics func(string) bool) {
	events = b.Events()
	run := b.lastCase.Load()
	if run == nil {
		return events, "", func(string) bool { return true }
	}
	topics = func(t string) bool { return t == run.Topic || t == run.DeadLetterTopic }
	kept := events[:0:0]
	for _, e := range events {
		if topics(e.Topic) {
			kept = append(kept, e)
		}
	}
	return kept, fmt.Sprintf(" of the last case run, the one rapid prints (%s)", run.Topic), topics
}

// logFailure logs the timelines of the busiest messages of a failed test,
// or says that the broker saw none.
func (b *Broker) logFailure() {
	events, scope, _ := b.failureScope()
	tl := b.timelines(events, 10)
	if tl == "" {
		b.tb.Logf("pulsarsim: the broker saw no message%s", scope)
		return
	}
	b.tb.Logf("pulsarsim: what the broker saw%s (busiest messages first):\n%s", scope, tl)
}
