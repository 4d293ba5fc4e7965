package dispatch

// Dispatch decides which entries go to which consumer now, given the topic's
// log, and applies the decisions: permits are charged, pending acks and the
// in-flight list updated, the read position advanced and the replay queue
// drained. The replay queue (in position order) is served before new reads
// from the read position. Acknowledged entries are skipped and never sent.
// Call it after any event that may allow progress (flow, ack, redeliver,
// consumer change, new entries). It returns nil while paused or without
// consumers.
func (d *Dispatcher) Dispatch(log Log) []Delivery {
	if d.paused || len(d.consumers) == 0 {
		return nil
	}
	switch d.opts.Type {
	case Exclusive, Failover:
		return d.dispatchSingle(log)
	case KeyShared:
		return d.dispatchKeyShared(log)
	default:
		return d.dispatchShared(log)
	}
}

// deliverMulti gives entry e to Shared/Key_Shared consumer c.
func (d *Dispatcher) deliverMulti(c *consumer, e int64, hash int32, log Log) Delivery {
	msgs := int32(d.cur.Remaining(e, int(log.Info(e).Messages)))
	c.permits -= int(msgs)
	c.unacked += int(msgs)
	c.pending[e] = pendingEntry{msgs: msgs, hash: hash}
	d.owner[e] = c
	if d.sel != nil {
		h := d.holds[hash]
		if h == nil {
			h = &hashHold{c: c}
			d.holds[hash] = h
		}
		h.n++
	}
	if max := d.maxUnacked(); max > 0 && c.unacked >= max {
		c.blocked = true
	}
	d.sent(c, e)
	return Delivery{
		Consumer:        c.spec.ID,
		Entry:           e,
		RedeliveryCount: d.cur.RedeliveryCount(e),
		AckSet:          d.cur.AckSet(e),
		Messages:        msgs,
		Epoch:           -1,
	}
}

// nextShared returns the next Shared entry to send: the first
// unacknowledged replay entry, else the next unacknowledged entry from the read
// position. It does not consume it.
func (d *Dispatcher) nextShared(log Log) (e int64, fromReplay, ok bool) {
	end := log.End()
	for d.replay.len() > 0 {
		it := d.replay.items[0]
		if !d.cur.IsAcked(it.entry) {
			return it.entry, true, true
		}
		d.replay.popFront()
	}
	for {
		e = d.cur.NextUnacked(d.cur.ReadPosition())
		if e >= end {
			return 0, false, false
		}
		if !d.replay.contains(e) && !d.holdIfDelayed(e, log.Info(e), 0) {
			return e, false, true
		}
		d.cur.SetReadPosition(e + 1)
	}
}

// nextConsumer is Shared's getNextConsumer: among available consumers (not
// blocked, permits > 0) at the highest priority level present, the next one in
// round-robin order from the current index.
func (d *Dispatcher) nextConsumer() *consumer {
	found := false
	var best int32
	for _, c := range d.consumers {
		if c.available() && (!found || c.spec.Priority < best) {
			best, found = c.spec.Priority, true
		}
	}
	if !found {
		return nil
	}
	n := len(d.consumers)
	if d.rr >= n {
		d.rr = 0
	}
	for k := 0; k < n; k++ {
		i := (d.rr + k) % n
		if c := d.consumers[i]; c.spec.Priority == best && c.available() {
			d.rr = i + 1
			return c
		}
	}
	return nil
}

// dispatchShared hands entries round robin: each turn the next consumer (see
// nextConsumer) gets up to MaxRoundRobinBatch entries while it stays available;
// an entry is sent when permits > 0 and costs its unacknowledged messages.
func (d *Dispatcher) dispatchShared(log Log) []Delivery {
	var out []Delivery
	for {
		if _, _, ok := d.nextShared(log); !ok {
			break
		}
		c := d.nextConsumer()
		if c == nil {
			break
		}
		for n := 0; n < d.opts.MaxRoundRobinBatch && c.available(); n++ {
			e, fromReplay, ok := d.nextShared(log)
			if !ok {
				break
			}
			if fromReplay {
				d.replay.popFront()
			} else {
				d.cur.SetReadPosition(e + 1)
			}
			out = append(out, d.deliverMulti(c, e, 0, log))
		}
	}
	return out
}

// heldByOther reports whether a consumer other than c holds pending entries
// of hash h (the hash is draining from it; c must wait).
func (d *Dispatcher) heldByOther(h int32, c *consumer) bool {
	hold := d.holds[h]
	return hold != nil && hold.c != c
}

// dispatchKeyShared sends each entry to the consumer owning its sticky-key
// hash. Replay entries go first, in position order; an entry whose consumer is
// missing or unavailable, or whose hash is still held by another consumer,
// stays in (or joins) the replay queue. A new read of a hash with entries
// waiting in the replay queue joins the queue too, so per-key order holds. New
// reads stop when no consumer is available or the queue reaches the
// look-ahead limit.
func (d *Dispatcher) dispatchKeyShared(log Log) []Delivery {
	end := log.End()
	avail := 0
	for _, c := range d.consumers {
		if c.available() {
			avail++
		}
	}
	var out []Delivery
	// Replay pass. A hash found undeliverable stays blocked for the rest of the
	// pass (its consumer cannot become available meanwhile), which keeps the
	// pass cheap and per-key order strict.
	if d.scratch == nil {
		d.scratch = make(map[int32]struct{})
	}
	clear(d.scratch)
	q := &d.replay
	w := 0
	md := d.cur.MarkDelete()
	for i, it := range q.items {
		// Individual acks remove entries from the queue eagerly, so only the
		// mark-delete position needs checking here.
		if it.entry <= md {
			q.forget(it)
			continue
		}
		if avail == 0 {
			w += copy(q.items[w:], q.items[i:])
			break
		}
		if _, blocked := d.scratch[it.hash]; !blocked {
			c := d.sel.selectHash(it.hash)
			if c != nil && c.available() && !d.heldByOther(it.hash, c) {
				q.forget(it)
				out = append(out, d.deliverMulti(c, it.entry, it.hash, log))
				if !c.available() {
					avail--
				}
				continue
			}
			d.scratch[it.hash] = struct{}{}
		}
		q.items[w] = it
		w++
	}
	clear(q.items[w:])
	q.items = q.items[:w]
	limit := min(d.opts.LookAheadPerConsumer*len(d.consumers), d.opts.LookAheadPerSub)
	for avail > 0 && d.replay.len() < limit {
		e := d.cur.NextUnacked(d.cur.ReadPosition())
		if e >= end {
			break
		}
		d.cur.SetReadPosition(e + 1)
		if d.replay.contains(e) {
			continue
		}
		info := log.Info(e)
		h := d.sel.hash(info.Key)
		if d.holdIfDelayed(e, info, h) {
			continue
		}
		c := d.sel.selectHash(h)
		if c == nil || !c.available() || d.replay.hasHash(h) || d.heldByOther(h, c) {
			d.replay.add(e, h)
			continue
		}
		out = append(out, d.deliverMulti(c, e, h, log))
		if !c.available() {
			avail--
		}
	}
	return out
}
