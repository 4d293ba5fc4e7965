package view

import (
	"sort"
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

// History records a broker's events in order, for the view and for reports.
// Register Record with broker.OnEvent before the broker serves, so the
// history starts with the broker. It is safe for concurrent use.
type History struct {
	limit int // events kept at most, a multiple of historyChunk; 0 keeps all

	mu      sync.Mutex
	chunks  [][]broker.Event
	n       int    // events held
	dropped int    // events forgotten because of the limit
	last    uint64 // Seq of the newest event
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
	h.last = e.Seq
	h.mu.Unlock()
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

// Since returns a copy of the events held after the one numbered seq
// (every event held when seq is 0), oldest first, and the number of events
// forgotten so far because of the limit.
func (h *History) Since(seq uint64) (events []broker.Event, dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The chunks are in Seq order: skip those that end at or before seq.
	i := sort.Search(len(h.chunks), func(i int) bool { c := h.chunks[i]; return c[len(c)-1].Seq > seq })
	for ; i < len(h.chunks); i++ {
		c := h.chunks[i]
		j := sort.Search(len(c), func(j int) bool { return c[j].Seq > seq })
		events = append(events, c[j:]...)
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
	// Last is the Seq of the newest event, 0 before the first.
	Last uint64
}

// Stats returns the history's counts.
func (h *History) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Held: h.n, Dropped: h.dropped, Limit: h.limit, Last: h.last}
}
