package dispatch

import "slices"

// replayItem is one entry waiting in the replay queue, with its sticky hash
// (0 when the subscription is not Key_Shared).
type replayItem struct {
	entry int64
	hash  int32
}

// replayQueue is the dispatcher's replay set: entries to send again before any
// new read, kept in position order (Pulsar's MessageRedeliveryController).
// Membership and per-hash counts are O(1); insertion and removal are a binary
// search plus a copy, cheap because the common case appends at the end or
// removes from the front.
type replayQueue struct {
	items  []replayItem
	member map[int64]int32
	hashes map[int32]int
}

func newReplayQueue() replayQueue {
	return replayQueue{member: make(map[int64]int32), hashes: make(map[int32]int)}
}

func (q *replayQueue) len() int { return len(q.items) }

func (q *replayQueue) contains(e int64) bool {
	_, ok := q.member[e]
	return ok
}

// hasHash reports whether an entry with sticky hash h is waiting.
func (q *replayQueue) hasHash(h int32) bool { return q.hashes[h] > 0 }

func (q *replayQueue) search(e int64) (int, bool) {
	return slices.BinarySearchFunc(q.items, e, func(it replayItem, e int64) int {
		switch {
		case it.entry < e:
			return -1
		case it.entry > e:
			return 1
		}
		return 0
	})
}

// add inserts e (no-op if already present).
func (q *replayQueue) add(e int64, hash int32) {
	if _, ok := q.member[e]; ok {
		return
	}
	q.member[e] = hash
	q.hashes[hash]++
	if n := len(q.items); n == 0 || q.items[n-1].entry < e {
		q.items = append(q.items, replayItem{e, hash})
		return
	}
	i, _ := q.search(e)
	q.items = slices.Insert(q.items, i, replayItem{e, hash})
}

// remove deletes e if present.
func (q *replayQueue) remove(e int64) {
	if _, ok := q.member[e]; !ok {
		return
	}
	i, found := q.search(e)
	if found {
		q.forget(q.items[i])
		q.items = slices.Delete(q.items, i, i+1)
	}
}

// forget drops it from the indexes (not from items).
func (q *replayQueue) forget(it replayItem) {
	delete(q.member, it.entry)
	if q.hashes[it.hash]--; q.hashes[it.hash] <= 0 {
		delete(q.hashes, it.hash)
	}
}

// filter keeps the items for which keep returns true, in order; keep may not
// modify the queue.
func (q *replayQueue) filter(keep func(replayItem) bool) {
	w := 0
	for _, it := range q.items {
		if keep(it) {
			q.items[w] = it
			w++
		} else {
			q.forget(it)
		}
	}
	clear(q.items[w:])
	q.items = q.items[:w]
}

// popFront removes the first item.
func (q *replayQueue) popFront() {
	q.forget(q.items[0])
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil
	}
}

func (q *replayQueue) clear() {
	q.items = nil
	clear(q.member)
	clear(q.hashes)
}

// entries returns the waiting entries in order (a copy).
func (q *replayQueue) entries() []int64 {
	if len(q.items) == 0 {
		return nil
	}
	out := make([]int64, len(q.items))
	for i, it := range q.items {
		out[i] = it.entry
	}
	return out
}
