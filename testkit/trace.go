package testkit

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// trace records every event of one broker, in order. Events are kept in
// fixed-size chunks, so recording never copies the events already recorded
// (a single growing slice did, and showed up in produce profiles).
type trace struct {
	mu     sync.Mutex
	chunks [][]broker.Event
	n      int
}

// traceChunk is the number of events in one chunk.
const traceChunk = 1024

func (tr *trace) record(e broker.Event) {
	tr.mu.Lock()
	if tr.n%traceChunk == 0 {
		tr.chunks = append(tr.chunks, make([]broker.Event, 0, traceChunk))
	}
	last := len(tr.chunks) - 1
	tr.chunks[last] = append(tr.chunks[last], e)
	tr.n++
	tr.mu.Unlock()
}

func (tr *trace) snapshot() []broker.Event {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.n == 0 {
		return nil
	}
	out := make([]broker.Event, 0, tr.n)
	for _, c := range tr.chunks {
		out = append(out, c...)
	}
	return out
}

// Events returns a copy of every event the broker reported since Start:
// publishes, deliveries with their redelivery counts, acks, redelivery
// requests, consumers and producers opening and closing, expiries. It waits
// for the events still on their way to the hooks (see
// broker.Broker.DeliverEvents), so it must not be called from an OnEvent
// hook.
func (b *Broker) Events() []broker.Event {
	b.srv.DeliverEvents()
	return b.trace.snapshot()
}

// entryKey identifies an entry across events: a message of a batch shares it.
type entryKey struct {
	topic         string
	ledger, entry int64
}

func keyOf(topic string, id broker.MessageID) entryKey {
	return entryKey{topic, id.Ledger, id.Entry}
}

// originOf returns the entry a dead-letter copy came from, read from its
// ORIGIN_MESSAGE_ID ("ledger:entry:partition[:batch]") and REAL_TOPIC.
func originOf(e broker.Event) (entryKey, bool) {
	origin, real := e.Properties["ORIGIN_MESSAGE_ID"], e.Properties["REAL_TOPIC"]
	if origin == "" || real == "" {
		return entryKey{}, false
	}
	var l, n int64
	if _, err := fmt.Sscanf(origin, "%d:%d", &l, &n); err != nil {
		return entryKey{}, false
	}
	return entryKey{real, l, n}, true
}

// Timeline draws the life of one message (its entry, for a batch) as the
// broker saw it: published, each delivery with its redelivery count, acks,
// redelivery requests, the consumer closes that sent it back, expiry, and
// the copy a dead-letter policy produced. topic may be short or full.
func (b *Broker) Timeline(topic string, id broker.MessageID) string {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err.Error()
	}
	return timeline(b.Events(), keyOf(tn.String(), id))
}

func timeline(events []broker.Event, k entryKey) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "message %d:%d on %s\n", k.ledger, k.entry, k.topic)
	var start time.Time
	holders := map[string]bool{} // consumers that hold the message now
	line := func(e broker.Event, format string, args ...any) {
		if start.IsZero() {
			start = e.Time
		}
		fmt.Fprintf(&sb, "  %+8.3fs  %s\n", e.Time.Sub(start).Seconds(), fmt.Sprintf(format, args...))
	}
	for _, e := range events {
		switch e.Kind {
		case broker.EventPublished:
			if keyOf(e.Topic, e.ID) == k {
				line(e, "published by %s", e.Producer)
			} else if o, ok := originOf(e); ok && o == k {
				line(e, "moved to the dead-letter topic %s by %s (REAL_TOPIC %s, ORIGIN_MESSAGE_ID %s)",
					e.Topic, e.Producer, e.Properties["REAL_TOPIC"], e.Properties["ORIGIN_MESSAGE_ID"])
			}
		case broker.EventDelivered:
			if e.Topic == k.topic && e.ID.Ledger == k.ledger && e.ID.Entry == k.entry {
				holders[e.Subscription+"/"+e.Consumer] = true
				line(e, "delivered to %s on %s with redelivery count %d", e.Consumer, e.Subscription, e.RedeliveryCount)
			}
		case broker.EventAcked:
			if e.Topic == k.topic && e.ID.Ledger == k.ledger && (e.ID.Entry == k.entry || e.Cumulative && e.ID.Entry > k.entry) {
				delete(holders, e.Subscription+"/"+e.Consumer)
				how := "acked"
				if e.Cumulative {
					how = "acked cumulatively"
				}
				line(e, "%s by %s on %s: the cursor moves past it", how, e.Consumer, e.Subscription)
			}
		case broker.EventRedeliveryAsked:
			if e.Topic != k.topic || !holders[e.Subscription+"/"+e.Consumer] {
				continue
			}
			asked := len(e.IDs) == 0
			for _, id := range e.IDs {
				asked = asked || (id.Ledger == k.ledger && id.Entry == k.entry)
			}
			if asked {
				delete(holders, e.Subscription+"/"+e.Consumer)
				line(e, "%s asked for redelivery (nack or ack timeout)", e.Consumer)
			}
		case broker.EventConsumerClosed:
			if e.Topic == k.topic && holders[e.Subscription+"/"+e.Consumer] {
				delete(holders, e.Subscription+"/"+e.Consumer)
				line(e, "%s closed (%s) while holding it: back to %s, count unchanged", e.Consumer, e.Reason, e.Subscription)
			}
		case broker.EventExpired:
			if e.Topic == k.topic && e.ID.Ledger == k.ledger && e.ID.Entry >= k.entry {
				line(e, "expired by message TTL on %s", e.Subscription)
			}
		}
	}
	return sb.String()
}

// Timelines draws the timeline of every message published in the trace,
// at most max of them (the ones with the most events first), or all when
// max <= 0.
func (b *Broker) Timelines(max int) string {
	events := b.Events()
	weight := map[entryKey]int{}
	var order []entryKey
	for _, e := range events {
		if e.Kind != broker.EventPublished && e.Kind != broker.EventDelivered {
			continue
		}
		k := keyOf(e.Topic, e.ID)
		if _, seen := weight[k]; !seen {
			order = append(order, k)
		}
		weight[k]++
	}
	sort.SliceStable(order, func(i, j int) bool { return weight[order[i]] > weight[order[j]] })
	var sb strings.Builder
	for i, k := range order {
		if max > 0 && i == max {
			fmt.Fprintf(&sb, "… and %d more messages\n", len(order)-max)
			break
		}
		sb.WriteString(timeline(events, k))
	}
	return sb.String()
}
