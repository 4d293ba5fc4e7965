package view

import (
	"math"
	"slices"
	"sync"

	"github.com/pulsarsim/pulsarsim/broker"
)

// historyChunk is the number of events in one chunk of a History. Events are
// kept in fixed-size chunks, so recording never copies the events already
// recorded (a single growing slice did, and showed up in produce profiles),
// and a bounded history forgets its oldest events a chunk at a time.
const historyChunk = 1024

// DefaultHistoryLimit is the number of events the standalone broker keeps
// for its view: about 65 MB at the 249 bytes a delivery event was measured
// to take (BENCHMARKS.md), more when published messages carry many
// properties. Older events are forgotten a chunk at a time.
const DefaultHistoryLimit = 256 * historyChunk

// History records a broker's events in order, for the view and for reports:
// register Record with broker.OnEvent, or call Follow, before the broker
// serves, so the history starts with the broker. One history can record the
// events of every broker of a cluster (Follow each, and each broker started
// again): it holds them in the order they reach it, each with the index of
// its broker (Event.Broker) and that broker's own Seq, so that a view of any
// of them shows a topic's life across the brokers it moved between. It is
// safe for concurrent use.
type History struct {
	limit int // events kept at most, a multiple of historyChunk; 0 keeps all

	mu       sync.Mutex
	chunks   [][]broker.Event
	n        int // events held
	dropped  int // events forgotten because of the limit
	followed []*broker.Broker
}

// NewHistory returns an empty history that keeps at most limit events (the
// newest; limit is rounded up to a multiple of 1024), or every event when
// limit <= 0.
func NewHistory(limit int) *History {
	if limit > 0 {
		limit = (limit + historyChunk - 1) / historyChunk * historyChunk
	} else {
		limit = 0
	}
	return &History{limit: limit}
}

// Record appends e. It is quick and takes no broker lock, so it can be given
// to broker.OnEvent directly.
func (h *History) Record(e broker.Event) {
	h.mu.Lock()
	if h.n == 0 || len(h.chunks[len(h.chunks)-1]) == historyChunk {
		if h.limit > 0 && h.n+historyChunk > h.limit {
			h.n -= len(h.chunks[0])
			h.dropped += len(h.chunks[0])
			h.chunks[0] = nil
			h.chunks = h.chunks[1:]
		}
		h.chunks = append(h.chunks, make([]broker.Event, 0, historyChunk))
	}
	last := len(h.chunks) - 1
	h.chunks[last] = append(h.chunks[last], e)
	h.n++
	h.mu.Unlock()
}

// Follow records b's events from now on (Record registered with b.OnEvent),
// and has Deliver wait for them. It returns a function that stops it.
func (h *History) Follow(b *broker.Broker) (stop func()) {
	cancel := b.OnEvent(h.Record)
	h.mu.Lock()
	h.followed = append(h.followed, b)
	h.mu.Unlock()
	return func() {
		cancel()
		h.mu.Lock()
		h.followed = slices.DeleteFunc(h.followed, func(o *broker.Broker) bool { return o == b })
		h.mu.Unlock()
	}
}

// Deliver returns once every event the brokers the history follows have
// emitted so far has reached it (broker.DeliverEvents on each).
func (h *History) Deliver() {
	h.mu.Lock()
	bs := slices.Clone(h.followed)
	h.mu.Unlock()
	for _, b := range bs {
		b.DeliverEvents()
	}
}

// Events returns a copy of the events held, oldest first.
func (h *History) Events() []broker.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return nil
	}
	out := make([]broker.Event, 0, h.n)
	for _, c := range h.chunks {
		out = append(out, c...)
	}
	return out
}

// Since returns a copy of the events recorded after the first n (every
// event held when n is 0), oldest first, and the number of events forgotten
// so far because of the limit. Stats().Last is the n of a later call that
// wants only what comes next. (For a history that follows one broker from
// its start, the n-th event is the one with Seq n.)
func (h *History) Since(n uint64) (events []broker.Event, dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Every chunk but the last is full, and the first holds the event
	// recorded after the dropped ones.
	skip := int(min(n, uint64(math.MaxInt))) - h.dropped
	for _, c := range h.chunks {
		switch {
		case skip >= len(c):
			skip -= len(c)
		case skip > 0:
			events = append(events, c[skip:]...)
			skip = 0
		default:
			events = append(events, c...)
		}
	}
	return events, h.dropped
}

// Stats says how much the history holds.
type Stats struct {
	// Held counts the events held; Dropped those forgotten because of the
	// limit (the oldest ones).
	Held, Dropped int
	// Limit is the most events held, 0 for no limit.
	Limit int
	// Last counts the events recorded so far, forgotten ones included: the
	// place of the newest (its Seq, for a history that follows one broker
	// from its start), 0 before the first.
	Last uint64
}

// Stats returns the history's counts.
func (h *History) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Held: h.n, Dropped: h.dropped, Limit: h.limit, Last: uint64(h.n + h.dropped)}
}
