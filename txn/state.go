package txn

import (
	"container/heap"
	"maps"
	"slices"
)

// What a coordinator's transaction log and a subscription's pending-ack
// store keep, so that a broker started again on its data recovers them as
// Pulsar's do: the coordinator's open transactions with their timeouts, a
// subscription's acknowledgements held in transactions.

// Last returns the last sequence number the coordinator handed out, -1
// before the first: a recovered coordinator goes on after it.
func (c *Coordinator) Last() int64 { return c.last }

// RestoreCoordinator returns coordinator tc as its log left it: last is
// the last sequence number it handed out (Last), txns the transactions it
// had not forgotten (Active). An open one's timeout runs from when it was
// opened, as Pulsar's recovered timeout tracker counts it; one being
// committed or aborted stays so, for the caller to end it again.
func RestoreCoordinator(tc uint64, maxActive int, last int64, txns []Txn) *Coordinator {
	c := NewCoordinator(tc, maxActive)
	c.last = last
	for _, t := range txns {
		if t.ID.Most != tc || c.active[t.ID.Least] != nil {
			continue
		}
		cp := t.copy()
		c.active[t.ID.Least] = &cp
		c.order = append(c.order, t.ID.Least)
		c.last = max(c.last, int64(t.ID.Least))
		if t.Status == Open {
			heap.Push(&c.deadlines, deadline{at: dueAt(t.OpenedAt, t.Timeout), seq: t.ID.Least})
		}
	}
	slices.Sort(c.order)
	return c
}

// HeldEntry is an entry held in a transaction: its ack set (nil for the
// whole entry) and the batch size its acknowledgement gave.
type HeldEntry struct {
	Entry     int64
	AckSet    []int64 `json:",omitempty"`
	BatchSize int     `json:",omitempty"`
}

// PendingTxn is what one transaction acknowledged individually on a
// subscription.
type PendingTxn struct {
	ID      ID
	Entries []HeldEntry
}

// CumulativeHold is the cumulative acknowledgement a transaction holds.
type CumulativeHold struct {
	ID       ID
	Position Position
}

// PendingState is the whole of a subscription's pending acknowledgements,
// as its pending-ack store keeps them: the transactions with individual
// acknowledgements in order of their first, every entry held over all of
// them, the cumulative acknowledgement held and the low water marks heard.
type PendingState struct {
	Txns          []PendingTxn     `json:",omitempty"`
	Held          []HeldEntry      `json:",omitempty"`
	Cumulative    *CumulativeHold  `json:",omitempty"`
	LowWaterMarks map[uint64]int64 `json:",omitempty"`
}

// State returns a copy of p's whole state.
func (p *PendingAcks) State() PendingState {
	var s PendingState
	for _, id := range p.txns {
		s.Txns = append(s.Txns, PendingTxn{ID: id, Entries: heldEntries(p.byTxn[id])})
	}
	s.Held = heldEntries(p.entries)
	if p.cum != nil {
		s.Cumulative = &CumulativeHold{ID: p.cum.id, Position: Position{Entry: p.cum.pos.Entry, AckSet: slices.Clone(p.cum.pos.AckSet)}}
	}
	if len(p.lwm) > 0 {
		s.LowWaterMarks = maps.Clone(p.lwm)
	}
	return s
}

func heldEntries(m map[int64]*heldEntry) []HeldEntry {
	var out []HeldEntry
	for _, e := range sortedEntries(m) {
		out = append(out, HeldEntry{Entry: e, AckSet: slices.Clone(m[e].ackSet), BatchSize: m[e].batchSize})
	}
	return out
}

// RestorePendingAcks returns the pending acknowledgements of subscription
// sub of topic (whose entries live in ledger) as State left them.
func RestorePendingAcks(topic, sub string, ledger int64, s PendingState) *PendingAcks {
	p := NewPendingAcks(topic, sub, ledger)
	fill := func(dst map[int64]*heldEntry, es []HeldEntry) {
		for _, e := range es {
			dst[e.Entry] = &heldEntry{ackSet: slices.Clone(e.AckSet), batchSize: e.BatchSize}
		}
	}
	for _, t := range s.Txns {
		if p.byTxn[t.ID] != nil {
			continue
		}
		m := map[int64]*heldEntry{}
		fill(m, t.Entries)
		p.byTxn[t.ID] = m
		p.txns = append(p.txns, t.ID)
	}
	fill(p.entries, s.Held)
	if c := s.Cumulative; c != nil {
		p.cum = &cumulativeAck{id: c.ID, pos: Position{Entry: c.Position.Entry, AckSet: slices.Clone(c.Position.AckSet)}}
	}
	maps.Copy(p.lwm, s.LowWaterMarks)
	return p
}
