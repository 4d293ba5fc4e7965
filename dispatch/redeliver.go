package dispatch

// Redeliver handles REDELIVER_UNACKNOWLEDGED_MESSAGES with message ids from
// consumer id.
//
// Shared/Key_Shared: only entries in THAT consumer's pending acks count; each
// is removed from them, pushed to the replay queue and its redelivery counter
// goes up by one. Other ids (acknowledged, another consumer's, never
// delivered, or listed twice) are ignored. Any redeliver request unblocks the
// consumer.
//
// Exclusive/Failover: the ids are ignored; if id is the active consumer the
// cursor is rewound and every unacknowledged entry is sent again from the first
// one, with redelivery count 0. Requests from other consumers, and requests
// while a Failover switch waits for its delay, are ignored.
func (d *Dispatcher) Redeliver(id uint64, entries []int64) {
	c, ok := d.byID[id]
	if !ok {
		return
	}
	if d.opts.Type.singleActive() {
		d.rewindActive(c)
		return
	}
	d.oneChange(func() {
		for _, e := range entries {
			d.redeliverOne(c, e)
		}
	})
	c.unblock()
}

// RedeliverAll handles REDELIVER_UNACKNOWLEDGED_MESSAGES without ids.
// Shared/Key_Shared: every entry in the consumer's pending acks is redelivered
// as by Redeliver (count +1 each). Exclusive/Failover: same as Redeliver.
func (d *Dispatcher) RedeliverAll(id uint64) {
	c, ok := d.byID[id]
	if !ok {
		return
	}
	if d.opts.Type.singleActive() {
		d.rewindActive(c)
		return
	}
	d.oneChange(func() {
		for _, e := range sortedKeys(c.pending) {
			d.redeliverOne(c, e)
		}
	})
	c.unblock()
}

func (d *Dispatcher) redeliverOne(c *consumer, e int64) {
	if _, ok := c.pending[e]; !ok {
		return
	}
	pe := d.removePending(c, e)
	// Pulsar's addMessageToReplay refuses positions at or before mark-delete
	// (e.g. expired by TTL): no replay, no count.
	if d.cur.IsAcked(e) {
		return
	}
	d.replay.add(e, pe.hash)
	d.cur.IncrementRedelivery(e)
}

// rewindActive rewinds the cursor if c is the active consumer and no switch
// is waiting.
func (d *Dispatcher) rewindActive(c *consumer) {
	if c != d.active || d.switching {
		return
	}
	d.cur.Rewind()
	d.inflight = d.inflight[:0]
}
