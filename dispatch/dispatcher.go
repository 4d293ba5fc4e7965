// Package dispatch decides which consumer of a subscription gets which log
// entry, as Pulsar 4.0's dispatchers do for the four subscription types:
// Exclusive and Failover (one active consumer, PersistentDispatcherSingleActiveConsumer),
// Shared (round robin by priority, PersistentDispatcherMultipleConsumers) and
// Key_Shared (by sticky-key hash, PersistentStickyKeyDispatcherMultipleConsumers).
//
// A Dispatcher owns a subscription's consumers, their permits, the pending
// acknowledgements of each Shared/Key_Shared consumer and the replay queue, and
// drives the subscription's cursor (package cursor), which holds the
// acknowledgement state and the redelivery counters. It is a pure state
// machine: events come in as method calls (consumer added or removed, flow,
// ack, redeliver) and Dispatch returns the deliveries to make now. It starts no
// goroutines, reads no clock and is not safe for concurrent use.
package dispatch

import (
	"slices"

	"github.com/pulsarsim/pulsarsim/cursor"
)

// pendingEntry is one entry in a Shared/Key_Shared consumer's pending acks.
type pendingEntry struct {
	msgs int32 // messages still unacknowledged (permit/unacked cost)
	hash int32 // sticky hash (Key_Shared), 0 otherwise
}

// consumer is the dispatcher's view of one consumer.
type consumer struct {
	spec    ConsumerSpec
	seq     uint64 // arrival order, for stable ordering
	permits int    // may go negative
	parked  int    // permits received while blocked on unacked messages
	blocked bool
	unacked int // messages in pending acks (Shared/Key_Shared)
	epoch   int64
	pending map[int64]pendingEntry // Shared/Key_Shared only
	held    bool                   // not writable, during one DispatchGated
}

// sentEntry is an entry sent to the active consumer since the last rewind
// (Exclusive/Failover).
type sentEntry struct {
	entry int64
	msgs  int32
}

// hashHold records which Key_Shared consumer holds pending entries of a hash and
// how many; another consumer may not receive that hash meanwhile (Pulsar 4.0's
// draining hashes).
type hashHold struct {
	c *consumer
	n int
}

// Dispatcher assigns a subscription's entries to its consumers. Create it with
// New; one Dispatcher serves one subscription with one subscription type.
type Dispatcher struct {
	opts Options
	cur  *cursor.Cursor

	consumers []*consumer // Shared/Key_Shared: ordered by (priority, arrival)
	byID      map[uint64]*consumer
	seq       uint64
	gate      Gate   // during DispatchGated only
	budget    Budget // during DispatchWith only

	// Exclusive/Failover.
	active   *consumer
	inflight []sentEntry // ascending; entries sent to active since last rewind
	// Failover: while switching, a new active consumer waits until switchAt
	// (activeConsumerFailoverDelayTimeMillis) before anything is sent;
	// switches counts the switches completed.
	switching bool
	switchAt  int64
	switches  uint64

	// Shared/Key_Shared.
	// totalUnacked is the sum of the consumers' unacked messages;
	// subBlocked is set while it keeps the subscription from reading new
	// entries (MaxUnackedPerSubscription); oneChangeRunning is set during
	// a oneChange.
	totalUnacked     int
	subBlocked       bool
	oneChangeRunning bool
	rr               int     // round-robin index into consumers
	readBuf          []int64 // reused by readShared
	replay           replayQueue
	owner            map[int64]*consumer // entry -> consumer whose pending acks hold it
	// extra lists the other consumers holding an entry sent again while
	// pending (duplicate.go); dupNext marks replay entries to replay twice,
	// again those of the current read, dupMarked those that got a copy.
	extra     map[int64][]*consumer
	dupNext   map[int64]bool
	again     []int64
	dupMarked map[int64]bool

	// Key_Shared.
	sel          selector
	ksMode       KeySharedMode
	ksOutOfOrder bool // allowOutOfOrderDelivery of the attached consumers
	// draining is set for AUTO_SPLIT without out-of-order delivery: a hash
	// that moves to another consumer waits until its old consumer holds no
	// entry of it (holds).
	draining bool
	holds    map[int32]*hashHold
	// scratch is reused by dispatchKeyShared for the hashes found blocked.
	scratch map[int32]struct{}

	// The time last given to SetTime, and the entries held until their
	// deliver_at_time (delayed delivery, Shared/Key_Shared).
	now     int64
	delayed map[int64]delayedItem
}

// New returns a dispatcher for a subscription of type opts.Type over cursor c.
// Zero option fields take Pulsar's defaults (see Options).
func New(opts Options, c *cursor.Cursor) *Dispatcher {
	return &Dispatcher{
		opts:   opts.withDefaults(),
		cur:    c,
		byID:   make(map[uint64]*consumer),
		replay: newReplayQueue(),
		owner:  make(map[int64]*consumer),
		extra:  make(map[int64][]*consumer),
		holds:  make(map[int32]*hashHold),
	}
}

// Type returns the subscription type.
func (d *Dispatcher) Type() SubType { return d.opts.Type }

// Cursor returns the cursor the dispatcher drives.
func (d *Dispatcher) Cursor() *cursor.Cursor { return d.cur }

// NumConsumers returns the number of attached consumers.
func (d *Dispatcher) NumConsumers() int { return len(d.byID) }

// Active returns the active consumer of an Exclusive or Failover subscription.
// The broker compares it before and after AddConsumer/RemoveConsumer to know
// when to send ACTIVE_CONSUMER_CHANGE (Failover only) to every consumer.
func (d *Dispatcher) Active() (uint64, bool) {
	if d.active == nil {
		return 0, false
	}
	return d.active.spec.ID, true
}

// AddConsumer attaches a consumer. It fails with ErrConsumerBusy for a second
// Exclusive consumer, with ErrKeySharedModeMismatch or ErrOutOfOrderMismatch
// for a Key_Shared consumer whose mode or allowOutOfOrderDelivery differs from
// the attached ones', with ErrConsumerAssign for a bad Key_Shared STICKY range,
// and with ErrDuplicateConsumer for an id already attached.
//
// When the first consumer of a Shared or Key_Shared subscription arrives, the
// cursor is rewound (read position := first unacknowledged entry) and the replay
// queue emptied. On Exclusive and Failover, the cursor is rewound whenever the
// active consumer changes; on Failover only after FailoverDelay (see
// Switching). Call SetTime first: the delay runs from the time it was given.
func (d *Dispatcher) AddConsumer(spec ConsumerSpec) error {
	if _, ok := d.byID[spec.ID]; ok {
		return ErrDuplicateConsumer
	}
	d.seq++
	spec.Ranges = slices.Clone(spec.Ranges)
	c := &consumer{spec: spec, seq: d.seq, epoch: spec.Epoch}
	switch d.opts.Type {
	case Exclusive:
		if len(d.consumers) > 0 {
			return ErrConsumerBusy
		}
	case KeyShared:
		if len(d.consumers) == 0 {
			d.ksMode = spec.KeySharedMode
			d.ksOutOfOrder = spec.AllowOutOfOrder
			d.draining = d.ksMode == AutoSplit && !d.ksOutOfOrder
			if d.ksMode == Sticky {
				d.sel = &rangeSelector{}
			} else if d.opts.KeySharedAutoSplitRanges {
				d.sel = &autoSplitSelector{}
			} else {
				d.sel = newHashRing(d.opts.ConsistentHashPoints)
			}
		} else if spec.KeySharedMode != d.ksMode {
			return ErrKeySharedModeMismatch
		} else if spec.AllowOutOfOrder != d.ksOutOfOrder {
			return ErrOutOfOrderMismatch
		}
		if err := d.sel.add(c); err != nil {
			return err
		}
	}
	d.byID[spec.ID] = c
	if d.opts.Type.singleActive() {
		d.consumers = append(d.consumers, c)
		d.pickActive()
		return nil
	}
	c.pending = make(map[int64]pendingEntry)
	if len(d.consumers) == 0 {
		d.cur.Rewind()
		d.replay.clear()
	}
	at := len(d.consumers)
	for i, o := range d.consumers {
		if o.spec.Priority > spec.Priority {
			at = i
			break
		}
	}
	d.consumers = slices.Insert(d.consumers, at, c)
	return nil
}

// RemoveConsumer detaches a consumer, whether it closed or its connection
// dropped. On Shared and Key_Shared its pending entries go to the replay queue
// with their redelivery counts unchanged; if it was the last consumer, the
// replay queue and ALL redelivery counters are cleared instead (the next
// consumer rewinds the cursor). On Exclusive and Failover the active consumer
// is picked again, with a rewind if it changed (after FailoverDelay on
// Failover). Unknown ids are ignored.
func (d *Dispatcher) RemoveConsumer(id uint64) { d.removeConsumer(id, true) }

// RemoveForReset detaches the consumer that a seek disconnects. On Exclusive
// and Failover no other consumer is made active meanwhile, as Pulsar's
// disconnectActiveConsumers leaves the standbys idle until the next consumer
// joins or leaves; on Shared and Key_Shared it is RemoveConsumer.
func (d *Dispatcher) RemoveForReset(id uint64) { d.removeConsumer(id, false) }

func (d *Dispatcher) removeConsumer(id uint64, repick bool) {
	c, ok := d.byID[id]
	if !ok {
		return
	}
	delete(d.byID, id)
	d.consumers = slices.DeleteFunc(d.consumers, func(o *consumer) bool { return o == c })
	if d.opts.Type.singleActive() {
		if c == d.active {
			d.active = nil
			d.inflight = nil
		}
		if repick && len(d.consumers) > 0 {
			d.pickActive()
		}
		return
	}
	if d.sel != nil {
		d.sel.remove(c)
	}
	if len(d.consumers) > 0 {
		d.oneChange(func() {
			for _, e := range sortedKeys(c.pending) {
				pe := d.removePending(c, e)
				if !d.cur.IsAcked(e) {
					d.replay.add(e, pe.hash)
				}
			}
		})
	} else {
		for e := range c.pending {
			delete(d.owner, e)
		}
		clear(d.extra)
		clear(d.dupNext)
		clear(d.dupMarked)
		d.addUnacked(c, -c.unacked)
		clear(d.holds)
		d.replay.clear()
		d.dropDelayed()
		d.cur.ClearRedeliveries()
		d.sel = nil
	}
	c.pending = nil
}

// Flow adds permits (in messages) to a consumer. Non-positive values are
// ignored (Pulsar closes the connection on FLOW with 0 permits; that is the
// broker's job). A Shared/Key_Shared consumer at its unacked-messages limit
// is blocked again (a redeliver request may have unblocked it) and parks the
// permits until it is unblocked.
func (d *Dispatcher) Flow(id uint64, permits int) {
	c, ok := d.byID[id]
	if !ok || permits <= 0 {
		return
	}
	if max := d.maxUnacked(); max > 0 && c.pending != nil && c.unacked >= max {
		c.blocked = true
	}
	if c.blocked {
		c.parked += permits
		return
	}
	c.permits += permits
}

// UpdateEpoch raises a consumer's epoch to epoch if it is larger (REDELIVER
// with consumer_epoch on Exclusive/Failover). Deliveries carry the epoch.
func (d *Dispatcher) UpdateEpoch(id uint64, epoch int64) {
	if c, ok := d.byID[id]; ok && epoch > c.epoch {
		c.epoch = epoch
	}
}

// maxUnacked returns the per-consumer limit, or 0 when unlimited.
func (d *Dispatcher) maxUnacked() int {
	if d.opts.MaxUnackedPerConsumer < 0 {
		return 0
	}
	return d.opts.MaxUnackedPerConsumer
}

// available reports whether a Shared/Key_Shared consumer can take an entry
// now: not blocked on unacked messages, not held back by the gate, permits
// left.
func (c *consumer) available() bool { return !c.blocked && !c.held && c.permits > 0 }

// unblock lifts an unacked-messages block and releases parked permits.
func (c *consumer) unblock() {
	if !c.blocked {
		return
	}
	c.blocked = false
	c.permits += c.parked
	c.parked = 0
}

// maybeUnblock unblocks c when its unacked messages fell to half the limit.
func (d *Dispatcher) maybeUnblock(c *consumer) {
	if c.blocked && c.unacked <= d.maxUnacked()/2 {
		c.unblock()
	}
}

// removePending drops e from c's pending acks and returns what it held.
func (d *Dispatcher) removePending(c *consumer, e int64) pendingEntry {
	pe, ok := c.pending[e]
	if !ok {
		return pe
	}
	delete(c.pending, e)
	d.dropHolder(c, e)
	d.addUnacked(c, -int(pe.msgs))
	if d.draining {
		if h := d.holds[pe.hash]; h != nil && h.c == c {
			if h.n--; h.n <= 0 {
				delete(d.holds, pe.hash)
			}
		}
	}
	return pe
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
