package view

import (
	"sync"
	"time"
)

// topicLives keeps the lives of one topic's messages up to date with the
// history: a visit reads only the events since the previous one, so a topic
// page and its live updates cost what changed, not what the topic holds.
type topicLives struct {
	mu      sync.Mutex
	b       *builder
	read    uint64    // the events of the history read (History.Since)
	dropped int       // the events the history had forgotten then
	used    time.Time // the last visit, for eviction
}

// keptTopics is the number of topics whose lives the view keeps between
// visits; the least recently visited goes first.
const keptTopics = 8

// topicLivesOf returns the lives of topic's messages, up to date, and a
// function to call once the caller is done with them: until then, no other
// visit changes them.
func (v *Handler) topicLivesOf(topic string) (lives []*Life, done func()) {
	v.cacheMu.Lock()
	tl := v.cache[topic]
	if tl == nil {
		if len(v.cache) >= keptTopics {
			v.evictLocked()
		}
		tl = &topicLives{}
		v.cache[topic] = tl
	}
	tl.used = time.Now()
	v.cacheMu.Unlock()

	tl.mu.Lock()
	v.deliver()
	events, dropped := v.h.Since(tl.read)
	if tl.b == nil || dropped != tl.dropped {
		// First visit, or the history forgot events since the last one:
		// start again from what it holds, so that the page shows what the
		// history holds, as a first visit would.
		tl.b = newBuilder(v.b, func(k Key) bool { return k.Topic == topic && k.Cluster == "" })
		tl.read = 0
		events, dropped = v.h.Since(0)
		tl.dropped = dropped
	}
	for i := range events {
		tl.b.add(&events[i])
	}
	tl.read = max(tl.read, uint64(dropped)) + uint64(len(events))
	return tl.b.finish(), tl.mu.Unlock
}

// evictLocked forgets the least recently visited topic. The caller holds
// cacheMu.
func (v *Handler) evictLocked() {
	var oldest string
	for name, tl := range v.cache {
		if oldest == "" || tl.used.Before(v.cache[oldest].used) {
			oldest = name
		}
	}
	delete(v.cache, oldest)
}
