package dispatch

// Ack records an individual acknowledgement of entry e from any consumer of the
// subscription: the entry leaves whichever consumer's pending acks hold it
// (possibly unblocking that consumer), leaves the replay queue, is acknowledged
// in the cursor and loses its redelivery counter. Acknowledging an entry that
// was never delivered acknowledges it too. The broker must drop acks of entries
// beyond the end of the log, as Pulsar's cursor does.
func (d *Dispatcher) Ack(e int64) {
	for c := d.owner[e]; c != nil; c = d.owner[e] {
		if _, ok := c.pending[e]; !ok {
			d.dropHolder(c, e) // (never happens: a holder holds it)
			continue
		}
		d.removePending(c, e)
		d.maybeUnblock(c)
	}
	delete(d.dupMarked, e)
	d.replay.remove(e)
	d.cur.Ack(e)
	d.trimInflight()
}

// AckBatchIndexes records a batch-index acknowledgement of entry e (batchSize
// messages; ackSet in the wire convention, 1 = still unacked). The holding
// consumer's unacked count drops by the newly acknowledged messages, but a
// consumer blocked at its unacked limit stays blocked, as in Pulsar (only an
// ack of whole entries or a redeliver request unblocks it); when the whole
// entry is acknowledged it leaves the consumer's pending acks. Even a partial
// acknowledgement removes the entry's redelivery counter, as in Pulsar.
func (d *Dispatcher) AckBatchIndexes(e int64, batchSize int, ackSet []int64) {
	done := d.cur.AckBatchIndexes(e, batchSize, ackSet)
	holders := append([]*consumer{d.owner[e]}, d.extra[e]...)
	for _, c := range holders {
		switch {
		case c == nil:
		case done:
			d.removePending(c, e)
		default:
			pe := c.pending[e]
			left := int32(d.cur.Remaining(e, batchSize))
			if diff := pe.msgs - left; diff > 0 {
				pe.msgs = left
				c.pending[e] = pe
				d.addUnacked(c, -int(diff))
			}
		}
	}
	if done {
		d.replay.remove(e)
		d.trimInflight()
	}
}

// AckCumulative records a cumulative acknowledgement of every entry ≤ e from
// consumer id. It applies to Exclusive and Failover only; on Shared and
// Key_Shared it is ignored, as Pulsar ignores it (and still answers success).
func (d *Dispatcher) AckCumulative(id uint64, e int64) {
	if !d.opts.Type.singleActive() {
		return
	}
	if _, ok := d.byID[id]; !ok {
		return
	}
	d.cur.AckCumulative(e)
	d.trimInflight()
}

// Expire applies a message-TTL expiry through entry e (cursor.ExpireThrough).
// Expired entries waiting in the replay queue are dropped; entries already in a
// consumer's pending acks stay there until acknowledged, redelivered or the
// consumer leaves (Pulsar does not recall them), but are never sent again.
func (d *Dispatcher) Expire(e int64) {
	d.cur.ExpireThrough(e)
	d.dropAckedReplay()
	d.dropAckedDelayed()
	d.trimInflight()
}

// ResetTo repositions the subscription at entry e, as Pulsar's resetCursor: the
// cursor is reset (cursor.ResetTo), the replay queue emptied, and pending acks
// and in-flight entries forgotten. Pulsar disconnects the consumers first (all
// of them on Shared/Key_Shared, the active one on Exclusive/Failover); the
// broker should call RemoveConsumer for those before ResetTo, which also clears the
// redelivery counters on Shared/Key_Shared.
func (d *Dispatcher) ResetTo(e int64) {
	d.cur.ResetTo(e)
	d.replay.clear()
	d.dropDelayed()
	clear(d.extra)
	clear(d.dupNext)
	clear(d.dupMarked)
	for _, c := range d.consumers {
		if c.pending != nil {
			for k := range c.pending {
				delete(d.owner, k)
			}
			clear(c.pending)
		}
		d.addUnacked(c, -c.unacked)
		c.unblock()
	}
	clear(d.holds)
	d.inflight = nil
}

// dropAckedReplay removes acknowledged entries from the replay queue.
func (d *Dispatcher) dropAckedReplay() {
	d.replay.filter(func(it replayItem) bool { return !d.cur.IsAcked(it.entry) })
}

// trimInflight drops acknowledged entries from the front of the active
// consumer's in-flight list, so nothing at or before the mark-delete position
// is retained.
func (d *Dispatcher) trimInflight() {
	i := 0
	for i < len(d.inflight) && d.cur.IsAcked(d.inflight[i].entry) {
		i++
	}
	if i == len(d.inflight) {
		d.inflight = d.inflight[:0]
		return
	}
	if i > 0 {
		d.inflight = d.inflight[i:]
	}
}
