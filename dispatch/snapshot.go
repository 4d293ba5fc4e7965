package dispatch

import "slices"

// Snapshot is a plain-value copy of a dispatcher's and its cursor's state, for
// inspection (compare with go-cmp). Nothing in it aliases the dispatcher.
type Snapshot struct {
	Type SubType
	// KeySharedMode is the mode of the attached Key_Shared consumers, and
	// KeySharedAllowOutOfOrder their allowOutOfOrderDelivery.
	KeySharedMode            KeySharedMode
	KeySharedAllowOutOfOrder bool
	// Switching is set while a Failover subscription waits for the switch
	// delay after its active consumer changed, until SwitchAt (ms).
	Switching bool
	SwitchAt  int64
	// Active is the active consumer (Exclusive/Failover) when HasActive.
	Active    uint64
	HasActive bool
	// Consumers are the attached consumers, by id.
	Consumers []ConsumerState
	// Replay lists the entries waiting to be sent again, in position order.
	Replay []int64
	// SubscriptionBlocked is set while the consumers' unacknowledged
	// messages keep the subscription from reading new entries
	// (MaxUnackedPerSubscription).
	SubscriptionBlocked bool
	// Delayed lists the entries held for their deliver_at_time (Shared and
	// Key_Shared), in position order.
	Delayed []int64
	// MarkDelete, ReadPosition and Acked are the cursor's positions and its
	// individually acknowledged entries after MarkDelete.
	MarkDelete   int64
	ReadPosition int64
	Acked        []int64
	// AckSets are the partly acknowledged batch entries' unacked bits.
	AckSets map[int64][]int64
	// Redeliveries are the non-zero redelivery counters.
	Redeliveries map[int64]int32
	// Duplicated lists the entries a duplicate dispatch (ReplayTwice) left
	// with more than one holder: several consumers, or a consumer and the
	// replay queue.
	Duplicated []int64
}

// ConsumerState is one consumer in a Snapshot.
type ConsumerState struct {
	ID       uint64
	Name     string
	Priority int32
	// Permits may be negative after a batch entry; ParkedPermits arrived while
	// the consumer was blocked.
	Permits       int
	ParkedPermits int
	// Unacked counts the messages in Pending (Shared/Key_Shared).
	Unacked int
	Blocked bool
	Active  bool
	Epoch   int64
	// Pending lists the entries delivered to the consumer and not yet
	// acknowledged, in position order: its pending acks on Shared/Key_Shared,
	// the entries sent since the last rewind on Exclusive/Failover (active
	// consumer only).
	Pending []PendingEntry
}

// PendingEntry is one entry held by a consumer.
type PendingEntry struct {
	Entry           int64
	Messages        int32
	RedeliveryCount int32
}

// Snapshot returns a copy of the current state.
func (d *Dispatcher) Snapshot() Snapshot {
	s := Snapshot{
		Type:          d.opts.Type,
		KeySharedMode: d.ksMode,
		Replay:        d.replay.entries(),
		Switching:     d.switching,
		SwitchAt:      d.switchAt,
		MarkDelete:    d.cur.MarkDelete(),
		ReadPosition:  d.cur.ReadPosition(),
		Acked:         d.cur.Acked(),
		AckSets:       d.cur.AckSets(),
		Redeliveries:  d.cur.Redeliveries(),
		Duplicated:    d.Duplicated(),

		SubscriptionBlocked: d.subBlocked,

		KeySharedAllowOutOfOrder: d.ksOutOfOrder,
	}
	if len(d.delayed) > 0 {
		s.Delayed = sortedKeys(d.delayed)
	}
	if d.active != nil {
		s.Active, s.HasActive = d.active.spec.ID, true
	}
	for _, c := range d.consumers {
		cs := ConsumerState{
			ID:            c.spec.ID,
			Name:          c.spec.Name,
			Priority:      c.spec.Priority,
			Permits:       c.permits,
			ParkedPermits: c.parked,
			Unacked:       c.unacked,
			Blocked:       c.blocked,
			Active:        c == d.active,
			Epoch:         c.epoch,
		}
		for _, e := range sortedKeys(c.pending) {
			pe := c.pending[e]
			cs.Pending = append(cs.Pending, PendingEntry{e, pe.msgs, d.cur.RedeliveryCount(e)})
		}
		if c == d.active {
			for _, se := range d.inflight {
				if !d.cur.IsAcked(se.entry) {
					left := min(se.msgs, int32(d.cur.Remaining(se.entry, int(se.msgs))))
					cs.Pending = append(cs.Pending, PendingEntry{se.entry, left, 0})
				}
			}
		}
		s.Consumers = append(s.Consumers, cs)
	}
	slices.SortFunc(s.Consumers, func(a, b ConsumerState) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return s
}

// PendingOf returns the entries in consumer id's pending acks (Shared and
// Key_Shared), in position order.
func (d *Dispatcher) PendingOf(id uint64) []int64 {
	if c, ok := d.byID[id]; ok {
		return sortedKeys(c.pending)
	}
	return nil
}
