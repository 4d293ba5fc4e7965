package dispatch

import "slices"

// Delayed delivery, as Pulsar's InMemoryDelayedDeliveryTracker: on Shared
// and Key_Shared subscriptions an entry whose deliver_at_time lies beyond the
// cutoff (now + DelayTick) is not sent when read; it is held in the delayed
// index. Whenever the dispatcher looks at the time (SetTime, as Pulsar's
// readMoreEntries asks hasMessageAvailable) the held entries due by the
// cutoff are released; the tracker's timer (NextTimer) makes sure that
// happens by the earliest deliver_at_time held. (Pulsar's timer also waits a
// tick after its previous run, but everything due by then was released by
// that run, so the earliest time held is always the later one.)
// Released entries join the replay queue and are sent in position order like
// replays, without a redelivery count bump. Exclusive and Failover send such
// entries at once. Time is whatever the broker passes to SetTime
// (milliseconds since the epoch).

// delayedItem is one entry held in the delayed index.
type delayedItem struct {
	at   int64 // deliver_at_time, ms
	hash int32 // sticky hash (Key_Shared)
}

// SetTime tells the dispatcher the current time in milliseconds; the broker
// calls it before every event and whenever NextTimer falls due. It completes
// a Failover switch whose delay has passed, and moves the delayed entries due
// by now + DelayTick to the replay queue; the next Dispatch sends them.
func (d *Dispatcher) SetTime(nowMs int64) {
	d.now = nowMs
	if d.switching && nowMs >= d.switchAt {
		d.completeSwitch()
	}
	first, ok := d.NextDelayed()
	cutoff := d.cutoff()
	if !ok || first > cutoff {
		return
	}
	var due []int64
	for e, it := range d.delayed {
		if it.at <= cutoff {
			due = append(due, e)
		}
	}
	slices.Sort(due)
	for _, e := range due {
		it := d.delayed[e]
		delete(d.delayed, e)
		if !d.cur.IsAcked(e) {
			d.replay.add(e, it.hash)
		}
	}
}

// NextTimer returns the time at which the dispatcher wants SetTime called
// (and Dispatch after it) even if nothing else happens: the end of a
// Failover switch delay, or the delayed-delivery timer. False when it has no
// timer.
func (d *Dispatcher) NextTimer() (int64, bool) {
	at, ok := d.switchAt, d.switching
	if first, held := d.NextDelayed(); held && (!ok || first < at) {
		at, ok = first, true
	}
	return at, ok
}

// Delayed returns the entries held in the delayed index, in position order.
func (d *Dispatcher) Delayed() []int64 { return sortedKeys(d.delayed) }

// NextDelayed returns the earliest deliver_at_time held, or false when the
// index is empty.
func (d *Dispatcher) NextDelayed() (int64, bool) {
	first, ok := int64(0), false
	for _, it := range d.delayed {
		if !ok || it.at < first {
			first, ok = it.at, true
		}
	}
	return first, ok
}

func (d *Dispatcher) cutoff() int64 { return d.now + d.opts.DelayTick }

// holdIfDelayed puts entry e in the delayed index when it is to be delivered
// after the cutoff, and reports whether it did.
func (d *Dispatcher) holdIfDelayed(e int64, info EntryInfo, hash int32) bool {
	if info.DeliverAt <= 0 || info.DeliverAt <= d.cutoff() {
		return false
	}
	if d.delayed == nil {
		d.delayed = make(map[int64]delayedItem)
	}
	d.delayed[e] = delayedItem{at: info.DeliverAt, hash: hash}
	return true
}

// dropDelayed empties the delayed index: the cursor is rewound or reset, so
// the entries will be read, and held, again.
func (d *Dispatcher) dropDelayed() { clear(d.delayed) }

// dropAckedDelayed removes acknowledged entries from the delayed index.
func (d *Dispatcher) dropAckedDelayed() {
	for e := range d.delayed {
		if d.cur.IsAcked(e) {
			delete(d.delayed, e)
		}
	}
}

// SetDelayTick changes DelayTick (ms, at least 1), as Pulsar's tracker
// takes the topic's current tickTime whenever it tracks a message.
func (d *Dispatcher) SetDelayTick(ms int64) {
	if ms > 0 {
		d.opts.DelayTick = ms
	}
}
