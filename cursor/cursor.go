// Package cursor keeps one subscription's position in a topic's log, the way a
// Pulsar 4.0 managed-ledger cursor does: the mark-delete position, the entries
// acknowledged individually after it, the batch-index acknowledgement sets of
// partly acknowledged batch entries, the read position used for new reads, and
// the per-entry redelivery counters that Shared and Key_Shared dispatchers keep.
//
// Entries are numbered 0, 1, 2, … in the order they were appended to the log;
// -1 means "before the first entry". The package is a pure state machine: it
// starts no goroutines, reads no clock and is not safe for concurrent use (its
// owner, one topic, serialises access).
package cursor

import (
	"slices"
)

// Cursor is one subscription's cursor. The zero value is not usable; call New.
//
// Invariants kept by every method:
//   - every entry ≤ MarkDelete is acknowledged;
//   - the entry MarkDelete+1 is never in the individually acknowledged set
//     (the mark-delete position is always extended over a contiguous prefix);
//   - no map holds an entry ≤ MarkDelete, so the memory used is proportional
//     to the acknowledgement "holes" above the mark-delete position, not to the
//     length of the log;
//   - ReadPosition > MarkDelete.
type Cursor struct {
	markDelete int64
	read       int64

	// acked holds the individually acknowledged entries > markDelete.
	acked map[int64]struct{}
	// ackedMax is an upper bound of the largest key in acked (markDelete when empty).
	ackedMax int64
	// ackSets holds, for partly acknowledged batch entries, the bits of the
	// batch indexes still unacknowledged (Pulsar's convention: 1 = unacked).
	ackSets map[int64][]int64
	// redeliveries holds the redelivery counters, keyed by entry.
	redeliveries map[int64]int32
}

// New returns a cursor whose mark-delete position is markDelete (use -1 for a
// subscription positioned before the first entry, or last entry for "Latest").
// The read position starts at markDelete+1.
func New(markDelete int64) *Cursor {
	if markDelete < -1 {
		markDelete = -1
	}
	return &Cursor{
		markDelete:   markDelete,
		read:         markDelete + 1,
		acked:        make(map[int64]struct{}),
		ackedMax:     markDelete,
		ackSets:      make(map[int64][]int64),
		redeliveries: make(map[int64]int32),
	}
}

// MarkDelete returns the mark-delete position: every entry at or before it is
// acknowledged.
func (c *Cursor) MarkDelete() int64 { return c.markDelete }

// ReadPosition returns the next entry a normal (non-replay) read starts from.
// Individually acknowledged entries at or after it are skipped by the reader
// (see NextUnacked).
func (c *Cursor) ReadPosition() int64 { return c.read }

// SetReadPosition moves the read position to e, but never to or before the
// mark-delete position (it is clamped to MarkDelete+1).
func (c *Cursor) SetReadPosition(e int64) {
	if e <= c.markDelete {
		e = c.markDelete + 1
	}
	c.read = e
}

// Rewind sets the read position to the first entry after the mark-delete
// position, as Pulsar's ManagedCursor.rewind does. Because the mark-delete
// position always absorbs a contiguous acknowledged prefix, that entry is also
// the first unacknowledged one; acknowledged entries further on are skipped when
// read (NextUnacked).
func (c *Cursor) Rewind() { c.read = c.markDelete + 1 }

// NextUnacked returns the first entry ≥ from (and > MarkDelete) that is not
// fully acknowledged. Readers use it to skip individually acknowledged entries.
func (c *Cursor) NextUnacked(from int64) int64 {
	if from <= c.markDelete {
		from = c.markDelete + 1
	}
	if len(c.acked) == 0 || from > c.ackedMax {
		return from
	}
	for {
		if _, ok := c.acked[from]; !ok {
			return from
		}
		from++
	}
}

// IsAcked reports whether entry e is fully acknowledged (at or before the
// mark-delete position, or individually acknowledged). A batch entry with only
// some indexes acknowledged is not acknowledged.
func (c *Cursor) IsAcked(e int64) bool {
	if e <= c.markDelete {
		return true
	}
	_, ok := c.acked[e]
	return ok
}

// Acked returns the individually acknowledged entries after the mark-delete
// position, in ascending order. The slice is a copy.
func (c *Cursor) Acked() []int64 {
	if len(c.acked) == 0 {
		return nil
	}
	out := make([]int64, 0, len(c.acked))
	for e := range c.acked {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Backlog returns the number of entries after the mark-delete position and
// before end (the number of entries in the log) that are not acknowledged, as
// Pulsar's msgBacklog counts them: a batch entry counts once, and a partly
// acknowledged batch entry still counts.
func (c *Cursor) Backlog(end int64) int64 {
	n := end - 1 - c.markDelete
	if n <= 0 {
		return 0
	}
	if c.ackedMax < end {
		return n - int64(len(c.acked))
	}
	for e := range c.acked {
		if e < end {
			n--
		}
	}
	return n
}

// Ack acknowledges entry e individually: the entry is done, including when it
// was never delivered. Its batch-index ack set and redelivery counter are
// dropped (Pulsar calls removeBatch for every individual ack position), and the
// mark-delete position is extended over the contiguous acknowledged prefix.
// Acknowledging an entry that is already acknowledged does nothing else.
func (c *Cursor) Ack(e int64) {
	delete(c.redeliveries, e)
	if e <= c.markDelete {
		return
	}
	if _, ok := c.acked[e]; ok {
		return
	}
	delete(c.ackSets, e)
	if e != c.markDelete+1 {
		c.acked[e] = struct{}{}
		if e > c.ackedMax {
			c.ackedMax = e
		}
		return
	}
	c.markDelete = e
	c.absorbAcked()
	if c.read <= c.markDelete {
		c.read = c.markDelete + 1
	}
}

// absorbAcked extends the mark-delete position over individually acknowledged
// entries that directly follow it, removing them from the set.
func (c *Cursor) absorbAcked() {
	for len(c.acked) > 0 {
		next := c.markDelete + 1
		if _, ok := c.acked[next]; !ok {
			break
		}
		delete(c.acked, next)
		c.markDelete = next
	}
	if len(c.acked) == 0 {
		c.ackedMax = c.markDelete
	}
}

// AckCumulative acknowledges every entry ≤ e, moving the mark-delete position
// to e (then over any acknowledged entries that follow). A position at or
// before the current mark-delete position is ignored, as Pulsar refuses to move
// the mark-delete position backwards. The read position is pulled forward past
// the new mark-delete position if needed. State kept for entries ≤ e
// (individual acks, ack sets, redelivery counters) is released.
func (c *Cursor) AckCumulative(e int64) {
	if e <= c.markDelete {
		return
	}
	old := c.markDelete
	c.markDelete = e
	c.dropThrough(old, e)
	c.absorbAcked()
	if c.read <= c.markDelete {
		c.read = c.markDelete + 1
	}
}

// ExpireThrough applies a message-TTL expiry that found e as the newest expired
// entry: the mark-delete position becomes max(MarkDelete, e), every entry up to
// it counts as acknowledged regardless of individual acks, and the read
// position is pulled forward to at least e+1 so expired entries are never read.
func (c *Cursor) ExpireThrough(e int64) { c.AckCumulative(e) }

// dropThrough removes state for entries in (old, upto] from every map.
func (c *Cursor) dropThrough(old, upto int64) {
	span := upto - old
	if int64(len(c.acked)) < span {
		for k := range c.acked {
			if k <= upto {
				delete(c.acked, k)
			}
		}
	} else {
		for k := old + 1; k <= upto; k++ {
			delete(c.acked, k)
		}
	}
	if len(c.acked) == 0 {
		c.ackedMax = upto
	}
	for k := range c.ackSets {
		if k <= upto {
			delete(c.ackSets, k)
		}
	}
	for k := range c.redeliveries {
		if k <= upto {
			delete(c.redeliveries, k)
		}
	}
}

// ResetTo repositions the cursor at entry e, as a seek (resetCursor) does: the
// mark-delete position becomes e-1, individually acknowledged entries and batch
// ack sets are forgotten (seeking backwards un-acknowledges them; seeking
// forwards acknowledges everything before e), and the read position becomes e.
// Redelivery counters of entries before e are dropped; the others are kept (a
// Shared or Key_Shared seek disconnects every consumer, which clears them).
func (c *Cursor) ResetTo(e int64) {
	if e < 0 {
		e = 0
	}
	c.markDelete = e - 1
	c.read = e
	clear(c.acked)
	c.ackedMax = c.markDelete
	clear(c.ackSets)
	for k := range c.redeliveries {
		if k <= c.markDelete {
			delete(c.redeliveries, k)
		}
	}
}

// Durable returns a copy of what Pulsar's managed cursor persists of c: the
// mark-delete position, the individually acknowledged entries and the batch
// index acknowledgements. The copy's read position is the first entry after
// the mark-delete position and it has no redelivery counters, as a cursor
// recovered by another broker has none.
func (c *Cursor) Durable() *Cursor {
	d := New(c.markDelete)
	for e := range c.acked {
		d.acked[e] = struct{}{}
	}
	d.ackedMax = c.ackedMax
	for e, set := range c.ackSets {
		d.ackSets[e] = slices.Clone(set)
	}
	return d
}

// Restore returns a cursor holding what Durable keeps of one: mark-delete
// position markDelete, the entries in acked acknowledged individually and
// the batch-index acknowledgement sets of ackSets (Pulsar's convention: a 1
// bit is an unacknowledged index). It is how a cursor read back from disk is
// made: acknowledged entries at or before the mark-delete position are
// dropped, and the invariants of Cursor hold whatever the input.
func Restore(markDelete int64, acked []int64, ackSets map[int64][]int64) *Cursor {
	c := New(markDelete)
	for e, set := range ackSets {
		if e > c.markDelete && slices.ContainsFunc(set, func(w int64) bool { return w != 0 }) {
			c.ackSets[e] = slices.Clone(set)
		}
	}
	for _, e := range acked {
		if e > c.markDelete {
			delete(c.ackSets, e)
			c.acked[e] = struct{}{}
			c.ackedMax = max(c.ackedMax, e)
		}
	}
	c.absorbAcked()
	c.read = c.markDelete + 1
	return c
}
