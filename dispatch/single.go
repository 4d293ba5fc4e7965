package dispatch

import (
	"cmp"
	"slices"
	"strconv"
)

// failoverHashReplicas is CONSUMER_CONSISTENT_HASH_REPLICAS.
const failoverHashReplicas = 100

// pickActive chooses the active consumer of an Exclusive/Failover subscription
// as AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer:
// consumers sorted by (priority, name); candidates are those at the highest
// priority; partitioned topic → candidates[partition % n]; non-partitioned →
// a consistent-hash ring of the candidates' names, looked up with the topic
// name. When the active consumer changes the cursor is rewound: at once on
// Exclusive, after FailoverDelay on Failover (see Switching).
func (d *Dispatcher) pickActive() {
	sorted := slices.Clone(d.consumers)
	slices.SortStableFunc(sorted, func(a, b *consumer) int {
		if c := cmp.Compare(a.spec.Priority, b.spec.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(a.spec.Name, b.spec.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	d.consumers = sorted
	n := 0
	for n < len(sorted) && sorted[n].spec.Priority == sorted[0].spec.Priority {
		n++
	}
	var idx int
	switch {
	case d.opts.Type == Exclusive:
		idx = 0
	case d.opts.PartitionIndex >= 0:
		idx = d.opts.PartitionIndex % n
	default:
		idx = failoverRingIndex(sorted[:n], d.opts.Topic)
	}
	next := sorted[idx]
	if next == d.active {
		return
	}
	d.active = next
	d.inflight = d.inflight[:0]
	if d.opts.Type == Failover && d.opts.FailoverDelay > 0 {
		// A switch already waiting keeps its deadline.
		if !d.switching {
			d.switching, d.switchAt = true, d.now+d.opts.FailoverDelay
		}
		return
	}
	d.completeSwitch()
}

// completeSwitch makes the picked consumer the one served: the cursor is
// rewound so it gets everything unacknowledged.
func (d *Dispatcher) completeSwitch() {
	d.switching = false
	d.cur.Rewind()
	d.inflight = d.inflight[:0]
	d.switches++
}

// Switching reports whether a Failover subscription waits for
// activeConsumerFailoverDelayTimeMillis after its active consumer changed,
// and until when. Meanwhile nothing is sent, and FLOW (whose permits are
// kept) and redeliver requests trigger nothing. SetTime completes the switch
// once the time has come.
func (d *Dispatcher) Switching() (until int64, ok bool) { return d.switchAt, d.switching }

// Switches returns how many times a new active consumer started being
// served. On Failover the broker tells every consumer which one is active
// each time it grows (ACTIVE_CONSUMER_CHANGE after the delay).
func (d *Dispatcher) Switches() uint64 { return d.switches }

// failoverRingIndex picks a candidate for a non-partitioned Failover topic:
// each candidate i puts points Murmur31(name + decimal(j)), j < 100, on a ring
// (a later candidate overwrites an equal point); the topic name's Murmur31
// selects the first point at or after it, wrapping around.
func failoverRingIndex(cands []*consumer, topic string) int {
	type point struct {
		h   int32
		idx int
	}
	ring := make(map[int32]int, len(cands)*failoverHashReplicas)
	for i, c := range cands {
		for j := 0; j < failoverHashReplicas; j++ {
			ring[Murmur31([]byte(c.spec.Name+strconv.Itoa(j)))] = i
		}
	}
	target := Murmur31([]byte(topic))
	best, first := point{h: -1}, point{h: -1}
	for h, i := range ring {
		if first.h < 0 || h < first.h {
			first = point{h, i}
		}
		if h >= target && (best.h < 0 || h < best.h) {
			best = point{h, i}
		}
	}
	if best.h < 0 {
		return first.idx
	}
	return best.idx
}

// dispatchSingle sends entries to the active consumer in cursor order: while it
// has permits, one "read" of min(permits, MaxReadBatch) entries is sent whole,
// each costing its unacknowledged messages (so permits may go negative).
func (d *Dispatcher) dispatchSingle(log Log) []Delivery {
	c := d.active
	if c == nil || d.switching {
		return nil
	}
	end := log.End()
	view, _ := log.(Compacted)
	if !c.spec.ReadCompacted {
		view = nil
	}
	var out []Delivery
	for c.permits > 0 && !c.held {
		rc, ok := d.openRead()
		if !ok {
			break
		}
		start := len(out)
		want := rc.cap(min(c.permits, d.opts.MaxReadBatch))
		got := 0
		for ; got < want && !c.held && !rc.full(); got++ {
			e, compacted := d.nextSingle(view)
			if e >= end && !compacted {
				break
			}
			d.cur.SetReadPosition(e + 1)
			info := log.Info(e)
			rc.take(info)
			if !compacted && (d.screenAck(e, info) || d.held(e, info)) {
				continue
			}
			ackSet, msgs := d.ackSetFor(e, info)
			if compacted && d.cur.IsAcked(e) {
				ackSet, msgs = nil, info.Messages // read again whole from the view
			}
			c.permits -= int(msgs)
			d.inflight = append(d.inflight, sentEntry{e, msgs})
			out = append(out, Delivery{
				Consumer:  c.spec.ID,
				Entry:     e,
				AckSet:    ackSet,
				Messages:  msgs,
				Epoch:     c.epoch,
				Compacted: compacted,
			})
			d.sent(c, e)
		}
		d.spend(out[start:], log)
		if got == 0 {
			break
		}
	}
	return out
}

// nextSingle returns the next entry to read for the active consumer of a
// single-active subscription: the next unacknowledged entry from the read
// position, or, for a consumer reading compacted (view not nil) while the
// read position is at or before the view's horizon, the view's next entry
// (compacted true), acknowledged or not: Pulsar reads the compacted view
// without looking at the cursor's individual acknowledgements. Past the
// view's last entry the read goes on in the log after the horizon, as
// Pulsar's cursor seeks there.
func (d *Dispatcher) nextSingle(view Compacted) (e int64, compacted bool) {
	from := d.cur.ReadPosition()
	if view != nil && from <= view.CompactedHorizon() {
		if next := view.CompactedNext(from); next <= view.CompactedHorizon() {
			return next, true
		}
		from = view.CompactedHorizon() + 1
	}
	return d.cur.NextUnacked(from), false
}
