package dispatch

import "math/bits"

// Transactions, as Pulsar 4.0's dispatchers see them when they filter what
// they read (AbstractBaseDispatcher.filterEntriesForConsumer): a transaction
// marker, or a message of an aborted transaction, is acknowledged as it is
// read and never sent; an entry acknowledged in an open transaction (held by
// the subscription's pending acknowledgements) is passed over, neither sent
// nor acknowledged, until the transaction ends; a batch entry some of whose
// indexes are held goes out with those indexes marked acknowledged. How far
// the dispatcher may read at all (the topic's max read position, before the
// first message of an open transaction) is Log.End's business.

// Skip says whether an entry is kept from every consumer (EntryInfo.Skip).
type Skip int

// The ways an entry is kept from the consumers.
const (
	// Deliver: the entry goes to the consumers as usual.
	Deliver Skip = iota
	// SkipAck: acknowledge the entry when it is read, and never send it (a
	// transaction marker, a message of an aborted transaction).
	SkipAck
	// SkipHold: pass over the entry without acknowledging it (acknowledged
	// in a transaction that is still open). An abort gives it back with
	// RedeliverEntries.
	SkipHold
)

// screenAck acknowledges an entry to skip that way (a marker, an aborted
// message) when it is about to be sent, and reports whether it did. Delayed
// entries are checked after it and before held ones, as in Pulsar.
func (d *Dispatcher) screenAck(e int64, info EntryInfo) bool {
	if info.Skip != SkipAck {
		return false
	}
	d.Ack(e)
	return true
}

// held reports whether a transaction holds the entry, whole or every index
// a consumer could still get.
func (d *Dispatcher) held(e int64, info EntryInfo) bool {
	if info.Skip == SkipHold {
		return true
	}
	if info.Free == nil {
		return false
	}
	set, _ := d.ackSetFor(e, info)
	return set != nil && allZero(set)
}

// ackSetFor returns the ack set a delivery of e carries and the messages it
// counts: the cursor's partial acknowledgement, narrowed by the indexes a
// transaction holds (info.Free).
func (d *Dispatcher) ackSetFor(e int64, info EntryInfo) ([]int64, int32) {
	set := d.cur.AckSet(e)
	if info.Free == nil {
		return set, int32(d.cur.Remaining(e, int(info.Messages)))
	}
	if set == nil {
		set = allOnes(int(info.Messages))
	}
	out := make([]int64, min(len(set), len(info.Free)))
	n := 0
	for i := range out {
		out[i] = set[i] & info.Free[i]
		n += bits.OnesCount64(uint64(out[i]))
	}
	return out, int32(n)
}

func allOnes(n int) []int64 {
	n = max(n, 1)
	out := make([]int64, (n+63)/64)
	for i := range out {
		out[i] = -1
	}
	if r := n % 64; r != 0 {
		out[len(out)-1] = int64(uint64(1)<<uint(r) - 1)
	}
	return out
}

func allZero(s []int64) bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// ReleasePending takes entry e out of the pending acks of whichever Shared
// or Key_Shared consumer holds it, without acknowledging it: an
// acknowledgement in a transaction does this, as Pulsar's consumer drops a
// transactionally acknowledged entry from its pending acks at once. The
// consumer may be unblocked.
func (d *Dispatcher) ReleasePending(e int64) {
	if c := d.owner[e]; c != nil {
		d.removePending(c, e)
		d.maybeUnblock(c)
	}
}

// ReleaseIndexes lowers the unacknowledged messages the consumer holding
// batch entry e is charged for to left, when a transactional batch-index
// acknowledgement held some of its indexes (Pulsar's consumer lowers its
// count by the indexes acknowledged).
func (d *Dispatcher) ReleaseIndexes(e int64, left int32) {
	c := d.owner[e]
	if c == nil {
		return
	}
	pe := c.pending[e]
	if diff := pe.msgs - max(left, 0); diff > 0 {
		pe.msgs -= diff
		c.pending[e] = pe
		d.addUnacked(c, -int(diff))
	}
}

// RedeliverEntries gives entries back to the subscription when the
// transaction that acknowledged them aborts (Pulsar's
// redeliverUnacknowledgedMessages with positions). Shared and Key_Shared:
// each entry not acknowledged meanwhile joins the replay queue with its
// redelivery count raised by one, whoever held it (without consumers, or
// for an entry at or after the read position, only the count goes up: the
// first consumer to come rewinds the cursor, the next read sends the
// entry, and Pulsar keeps the count). Exclusive and Failover:
// the active consumer, if any and not waiting for a switch, is rewound, as
// on a redeliver-all request.
func (d *Dispatcher) RedeliverEntries(entries []int64, log Log) {
	if d.opts.Type.singleActive() {
		if d.active != nil {
			d.rewindActive(d.active)
		}
		return
	}
	for _, e := range entries {
		if d.cur.IsAcked(e) {
			// Pulsar replays an entry acknowledged meanwhile (after the
			// mark-delete position) and skips it when read: nothing to send.
			continue
		}
		if len(d.consumers) == 0 {
			// The first consumer to come empties the replay queue and
			// rewinds; the count stays, as Pulsar's tracker keeps it.
			d.cur.IncrementRedelivery(e)
			continue
		}
		if c := d.owner[e]; c != nil {
			d.removePending(c, e)
		}
		if e >= d.cur.ReadPosition() {
			// Not read since a rewind (a consumer came after the last one
			// left): the next read sends it, with the count raised here.
			// In the replay queue as well, it would go out twice.
			d.cur.IncrementRedelivery(e)
			continue
		}
		var h int32
		if d.opts.Type == KeyShared && d.sel != nil {
			h = d.sel.hash(log.Info(e).Key)
		}
		d.replay.add(e, h)
		d.cur.IncrementRedelivery(e)
	}
}

// CommitCumulative acknowledges every entry up to e, as a transaction's
// commit applies its cumulative acknowledgement: like AckCumulative, but
// whether or not the consumer that acknowledged is still attached.
// Exclusive and Failover only.
func (d *Dispatcher) CommitCumulative(e int64) {
	if !d.opts.Type.singleActive() {
		return
	}
	d.cur.AckCumulative(e)
	d.trimInflight()
}
