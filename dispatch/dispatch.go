package dispatch

import "slices"

// Dispatch decides which entries go to which consumer now, given the topic's
// log, and applies the decisions: permits are charged, pending acks and the
// in-flight list updated, the read position advanced and the replay queue
// drained. The replay queue (in position order) is served before new reads
// from the read position. Acknowledged entries are skipped and never sent.
// Call it after any event that may allow progress (flow, ack, redeliver,
// consumer change, new entries, and NextTimer falling due, after SetTime).
// It returns nil without consumers.
func (d *Dispatcher) Dispatch(log Log) []Delivery {
	if len(d.consumers) == 0 {
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
	ackSet, msgs := d.ackSetFor(e, log.Info(e))
	c.permits -= int(msgs)
	d.addUnacked(c, int(msgs))
	if _, held := c.pending[e]; !held {
		d.takeHolder(c, e)
	}
	c.pending[e] = pendingEntry{msgs: msgs, hash: hash}
	if d.draining {
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
		AckSet:          ackSet,
		Messages:        msgs,
		Epoch:           -1,
	}
}

// firstAvailablePermits returns the permits of the first available consumer in
// list order, or 0 when none is available (Pulsar's
// getFirstAvailableConsumerPermits).
func (d *Dispatcher) firstAvailablePermits() int {
	for _, c := range d.consumers {
		if c.available() {
			return c.permits
		}
	}
	return 0
}

// totalPermits is the dispatcher's total of its consumers' permits, negative
// ones included (Pulsar's totalAvailablePermits).
func (d *Dispatcher) totalPermits() int {
	n := 0
	for _, c := range d.consumers {
		n += c.permits
	}
	return n
}

// nextConsumer is Pulsar's getNextConsumer for Shared. Consumers are sorted
// by priority (0 is the highest) and the round-robin index rr names the next
// one to try. If that one is below priority 0, an available consumer of a
// higher priority placed before it wins; otherwise the consumer at rr if it
// is available, else the next available one at its priority level (wrapping
// within the level), else the first available one at a lower level. The
// index moves past the consumer returned. It returns nil when none is
// available.
func (d *Dispatcher) nextConsumer() *consumer {
	n := len(d.consumers)
	if n == 0 {
		return nil
	}
	if d.rr >= n {
		d.rr = 0
	}
	if p := d.consumers[d.rr].spec.Priority; p != 0 {
		for i := 0; i < d.rr && d.consumers[i].spec.Priority < p; i++ {
			if d.consumers[i].available() {
				d.rr = i + 1
				return d.consumers[i]
			}
		}
	}
	if i := d.sameOrLowerLevel(d.rr); i >= 0 {
		d.rr = i + 1
		return d.consumers[i]
	}
	return nil
}

// sameOrLowerLevel returns the index of the consumer nextConsumer picks at
// rr's priority level or below it, or -1.
func (d *Dispatcher) sameOrLowerLevel(rr int) int {
	list := d.consumers
	if list[rr].available() {
		return rr
	}
	level := list[rr].spec.Priority
	first := slices.IndexFunc(list, func(c *consumer) bool { return c.spec.Priority == level })
	levelEnd := rr
	for i := rr + 1; i != rr; {
		if i >= len(list) || list[i].spec.Priority != level {
			levelEnd = i
			i = first
			continue
		}
		if list[i].available() {
			return i
		}
		i++
	}
	for i := levelEnd; i < len(list); i++ {
		if list[i].available() {
			return i
		}
	}
	return -1
}

// readShared is one read of a Shared dispatcher: up to min(max(total
// permits, first available consumer's permits), MaxReadBatch) entries, from
// the replay queue when it holds any unacknowledged entry (those are taken
// out of it), else from the read position on. A normal read may include
// delayed entries: they are held when their consumer's turn comes.
func (d *Dispatcher) readShared(log Log, rc *readCap) (batch []int64) {
	n := min(max(d.totalPermits(), d.firstAvailablePermits()), d.opts.MaxReadBatch)
	n = rc.cap(max(n, 1))
	batch = d.readBuf[:0]
	defer func() { d.readBuf = batch }()
	for d.replay.len() > 0 && len(batch) < n && !rc.full() {
		e := d.replay.items[0].entry
		d.replay.popFront()
		if d.dupNext[e] {
			delete(d.dupNext, e)
			d.again = append(d.again, e)
		}
		if !d.cur.IsAcked(e) {
			batch = append(batch, e)
			rc.take(log.Info(e))
		}
	}
	if len(batch) > 0 || d.subBlocked {
		return batch
	}
	end := log.End()
	for len(batch) < n && !rc.full() {
		e := d.cur.NextUnacked(d.cur.ReadPosition())
		if e >= end {
			break
		}
		d.cur.SetReadPosition(e + 1)
		batch = append(batch, e)
		rc.take(log.Info(e))
	}
	return batch
}

// dispatchShared reads and hands out entries, as Pulsar's Shared dispatcher
// does, while some consumer is available (see readShared and sendShared).
func (d *Dispatcher) dispatchShared(log Log) []Delivery {
	var out []Delivery
	for d.firstAvailablePermits() > 0 {
		rc, ok := d.openRead()
		if !ok {
			break
		}
		batch := d.readShared(log, &rc)
		if len(batch) == 0 {
			break
		}
		start := len(out)
		out = d.sendShared(batch, log, out)
		out = d.sendAgain(log, out)
		d.spend(out[start:], log)
	}
	return out
}

// sendShared hands out one read in round-robin turns (Pulsar's
// trySendMessagesToConsumers). The next consumer (nextConsumer) gets
//
//	max(1, min(MaxRoundRobinBatch, ceil(min(remaining, permits, room) / avg)))
//
// entries, where remaining counts the messages of the read not yet sent,
// room the messages the consumer may still take before its unacked limit,
// and avg is the read's messages per entry (integer division, at least 1).
// A turn's entries are sent whole even when that drives the permits below
// zero; delayed entries among them are held, still using up their place in
// the turn. What is left when no consumer is available goes to the replay
// queue, without a redelivery count.
func (d *Dispatcher) sendShared(batch []int64, log Log, out []Delivery) []Delivery {
	remaining := 0
	for _, e := range batch {
		remaining += int(log.Info(e).Messages)
	}
	avg := max(remaining/len(batch), 1)
	start := 0
	for start < len(batch) && d.firstAvailablePermits() > 0 {
		c := d.nextConsumer()
		if c == nil {
			break
		}
		most := min(remaining, c.permits)
		if limit := d.maxUnacked(); limit > 0 {
			most = min(most, max(limit-c.unacked, 0))
		}
		k := max(min(d.opts.MaxRoundRobinBatch, (most+avg-1)/avg), 1)
		for i := start; i < min(start+k, len(batch)); i++ {
			e := batch[i]
			info := log.Info(e)
			if d.cur.IsAcked(e) || d.screenAck(e, info) || d.holdIfDelayed(e, info, 0) || d.held(e, info) {
				continue
			}
			out = append(out, d.deliverMulti(c, e, 0, log))
			remaining -= int(info.Messages)
			if c.held {
				// Its connection can take no more (Gate): the rest of
				// the turn goes back to the read.
				k = i + 1 - start
				break
			}
		}
		start += k
	}
	for _, e := range batch[min(start, len(batch)):] {
		d.replay.add(e, 0)
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
// waiting in the replay queue joins the queue too, so per-key order holds,
// unless the subscription allows out-of-order delivery. New reads stop when
// no consumer is available or the queue reaches the look-ahead limit.
func (d *Dispatcher) dispatchKeyShared(log Log) (out []Delivery) {
	rc, ok := d.openRead()
	if !ok {
		return nil
	}
	defer func() { d.spend(out, log) }()
	end := log.End()
	avail := 0
	for _, c := range d.consumers {
		if c.available() {
			avail++
		}
	}
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
		if avail == 0 || rc.full() {
			w += copy(q.items[w:], q.items[i:])
			break
		}
		if _, blocked := d.scratch[it.hash]; !blocked {
			c := d.sel.selectHash(it.hash)
			if c != nil && c.available() && !d.heldByOther(it.hash, c) {
				q.forget(it) // before a screening Ack, which would look for it in the queue
				info := log.Info(it.entry)
				if info.Skip == SkipAck || d.held(it.entry, info) {
					d.screenAck(it.entry, info) // a transaction keeps it from consumers
					continue
				}
				rc.take(info)
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
	for avail > 0 && d.replay.len() < limit && !d.subBlocked && !rc.full() {
		e := d.cur.NextUnacked(d.cur.ReadPosition())
		if e >= end {
			break
		}
		d.cur.SetReadPosition(e + 1)
		if d.replay.contains(e) {
			continue
		}
		info := log.Info(e)
		rc.take(info)
		h := d.sel.hash(info.Key)
		if d.screenAck(e, info) || d.holdIfDelayed(e, info, h) || d.held(e, info) {
			continue
		}
		c := d.sel.selectHash(h)
		behindReplay := !d.ksOutOfOrder && d.replay.hasHash(h)
		if c == nil || !c.available() || behindReplay || d.heldByOther(h, c) {
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
