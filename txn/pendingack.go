package txn

import (
	"fmt"
	"maps"
	"slices"
)

// Cursor is what PendingAcks reads of its subscription's cursor
// (cursor.Cursor has these methods).
type Cursor interface {
	// MarkDelete is the mark-delete position: every entry at or below it
	// is acknowledged.
	MarkDelete() int64
	// IsAcked reports whether an entry is acknowledged whole.
	IsAcked(e int64) bool
	// AckSet is a partly acknowledged batch entry's ack set (1 bits
	// unacknowledged), nil when the entry has none.
	AckSet(e int64) []int64
}

// Position is an entry a transaction acknowledged, with the ack set of a
// batch-index acknowledgement (nil: the whole entry).
type Position struct {
	Entry  int64
	AckSet []int64
}

// Ack is one message id of a transactional individual acknowledgement: the
// entry, the ack set the client sent (nil when none) and the batch size it
// sent (MessageIdData.batch_size, 0 when absent; pulsar-client-go never
// sends it).
type Ack struct {
	Entry     int64
	AckSet    []int64
	BatchSize int
}

// PendingAcks is one subscription's pending acknowledgements: what open
// transactions acknowledged, individually (several transactions, each entry
// at most once) or cumulatively (one transaction at a time). Entries held
// individually are kept from the subscription's consumers (Held) until the
// transaction ends: a commit acknowledges them, an abort gives them back.
type PendingAcks struct {
	prefix string // "[topic][subscription]", for messages
	ledger int64  // the topic's ledger, for positions in messages

	txns    []ID                        // transactions with individual acks, in order of their first
	byTxn   map[ID]map[int64]*heldEntry // each one's entries
	entries map[int64]*heldEntry        // every entry held, with the ack set pending over all transactions
	cum     *cumulativeAck
	lwm     map[uint64]int64
}

// heldEntry is an entry acknowledged in a transaction. ackSet is nil for a
// whole entry.
type heldEntry struct {
	ackSet    []int64
	batchSize int
}

type cumulativeAck struct {
	id  ID
	pos Position
}

// NewPendingAcks returns the pending acknowledgements of subscription sub
// of topic, whose entries live in ledger.
func NewPendingAcks(topic, sub string, ledger int64) *PendingAcks {
	return &PendingAcks{
		prefix:  "[" + topic + "][" + sub + "]",
		ledger:  ledger,
		byTxn:   map[ID]map[int64]*heldEntry{},
		entries: map[int64]*heldEntry{},
		lwm:     map[uint64]int64{},
	}
}

// position formats an entry as Pulsar prints a position with an ack-set
// state, "ledger:entry (ackSet is null)".
func (p *PendingAcks) position(a Ack) string {
	s := "is null"
	if a.AckSet != nil {
		s = fmt.Sprintf("with long[] size of %d", len(a.AckSet))
	}
	return fmt.Sprintf("%d:%d (ackSet %s)", p.ledger, a.Entry, s)
}

func (p *PendingAcks) plain(e int64) string { return fmt.Sprintf("%d:%d", p.ledger, e) }

func (p *PendingAcks) conflict(format string, args ...any) *Error {
	return &Error{KindConflict, p.prefix + fmt.Sprintf(format, args...)}
}

// AckIndividual records an individual acknowledgement of acks in
// transaction id, as Pulsar's pending-ack handle checks and records it. It
// fails with KindConflict, recording nothing, when an entry is already
// acknowledged in the cursor, or already held by a transaction (this one
// too); for batch-index acks, when the indexes overlap those acknowledged in
// the cursor or held. The checks are Pulsar's, quirks included: with no
// batch size (as pulsar-client-go sends them) batch-index acks never
// conflict.
func (p *PendingAcks) AckIndividual(id ID, acks []Ack, cur Cursor) error {
	for _, a := range acks {
		if cur.IsAcked(a.Entry) {
			return p.conflict(" Transaction:%s try to ack message:%s already acked before.", id, p.position(a))
		}
		held := p.entries[a.Entry]
		if a.AckSet == nil {
			if held != nil {
				return p.conflict(" Transaction:%s try to ack message:%s in pending ack status.", id, p.position(a))
			}
			continue
		}
		overlap := valueOf(a.AckSet)
		if a.BatchSize > overlap.size() {
			overlap.set(a.BatchSize)
		}
		overlap.setRange(a.BatchSize, overlap.size())
		mine := overlap.longs()
		if ackSetsOverlap(mine, cur.AckSet(a.Entry)) {
			return p.conflict(" Transaction:%s try to ack message:%s already acked before.", id, p.position(a))
		}
		if held != nil && ackSetsOverlap(held.ackSet, mine) {
			return p.conflict(" Transaction:%s try to ack batch message:%s in pending ack status.", id, p.position(a))
		}
	}
	for _, a := range acks {
		p.record(id, a)
	}
	return nil
}

// record adds one acknowledged entry to transaction id and to the held
// entries (Pulsar's handleIndividualAck).
func (p *PendingAcks) record(id ID, a Ack) {
	mine := p.byTxn[id]
	if mine == nil {
		mine = map[int64]*heldEntry{}
		p.byTxn[id] = mine
		p.txns = append(p.txns, id)
	}
	if a.AckSet == nil {
		mine[a.Entry] = &heldEntry{}
		if p.entries[a.Entry] == nil {
			p.entries[a.Entry] = &heldEntry{}
		}
		return
	}
	if old := mine[a.Entry]; old != nil && old.ackSet != nil {
		old.ackSet = andAckSets(old.ackSet, a.AckSet)
	} else if old == nil {
		mine[a.Entry] = &heldEntry{ackSet: slices.Clone(a.AckSet), batchSize: a.BatchSize}
	}
	switch held := p.entries[a.Entry]; {
	case held == nil:
		p.entries[a.Entry] = &heldEntry{ackSet: slices.Clone(a.AckSet), batchSize: a.BatchSize}
	default:
		held.batchSize = a.BatchSize
		if held.ackSet != nil {
			held.ackSet = andAckSets(held.ackSet, a.AckSet)
		}
	}
}

// AckCumulative records a cumulative acknowledgement up to pos in
// transaction id. It fails with KindConflict when pos is at or below the
// cursor's mark-delete position, or when another transaction holds a
// cumulative acknowledgement, or this one holds one at or past pos.
func (p *PendingAcks) AckCumulative(id ID, pos Position, cur Cursor) error {
	str := p.plain(pos.Entry)
	if pos.AckSet != nil {
		str = p.position(Ack{Entry: pos.Entry, AckSet: pos.AckSet})
	}
	if md := cur.MarkDelete(); pos.Entry <= md {
		return p.conflict(" Transaction:%s try to cumulative ack position: %s within range of cursor's "+
			"markDeletePosition: %s", id, str, p.plain(md))
	}
	if c := p.cum; c != nil && (c.id != id || comparePositions(pos, c.pos) <= 0) {
		held := p.plain(c.pos.Entry)
		if c.pos.AckSet != nil {
			held = p.position(Ack{Entry: c.pos.Entry, AckSet: c.pos.AckSet})
		}
		return p.conflict(" Transaction:%s try to cumulative batch ack position: %s within range of current "+
			"currentPosition: %s", id, str, held)
	}
	p.cum = &cumulativeAck{id: id, pos: Position{Entry: pos.Entry, AckSet: slices.Clone(pos.AckSet)}}
	return nil
}

func comparePositions(a, b Position) int {
	switch {
	case a.Entry < b.Entry:
		return -1
	case a.Entry > b.Entry:
		return 1
	}
	return compareWithAckSet(a.AckSet, b.AckSet)
}

// Outcome is what ending a transaction on a subscription asks of it.
type Outcome struct {
	// Acknowledge lists the entries a commit acknowledges individually,
	// in entry order (with the ack sets of batch-index acks).
	Acknowledge []Position
	// Cumulative, when set, is the position a commit acknowledges
	// cumulatively.
	Cumulative *Position
	// Redeliver lists the entries an abort gives back to the
	// subscription, in entry order.
	Redeliver []Position
	// Ended is set when the transaction had acknowledgements here that
	// the end settled; the caller then applies the low water mark
	// (LowWaterMark).
	Ended bool
}

// Commit ends transaction id with a commit, as Pulsar's pending-ack handle
// does: while a cumulative acknowledgement is held, only that one counts
// (it is acknowledged if it is id's; id's individual acks, if any, stay
// held); else id's individual acks are acknowledged. The caller
// acknowledges what Outcome lists, then calls Forget for every entry the
// cursor now holds acknowledged.
func (p *PendingAcks) Commit(id ID) Outcome {
	if p.cum != nil {
		if p.cum.id != id {
			return Outcome{}
		}
		pos := p.cum.pos
		p.cum = nil
		return Outcome{Cumulative: &pos}
	}
	mine, ok := p.byTxn[id]
	if !ok {
		return Outcome{}
	}
	out := Outcome{Ended: true}
	for _, e := range sortedEntries(mine) {
		out.Acknowledge = append(out.Acknowledge, Position{Entry: e, AckSet: slices.Clone(mine[e].ackSet)})
	}
	p.dropTxn(id)
	return out
}

// Abort ends transaction id with an abort, as Pulsar's pending-ack handle
// does: while a cumulative acknowledgement is held, only that one counts
// (it is dropped if it is id's, and nothing is given back); else id's
// individual acks are released and listed for redelivery.
func (p *PendingAcks) Abort(id ID) Outcome {
	if p.cum != nil {
		if p.cum.id == id {
			p.cum = nil
		}
		return Outcome{}
	}
	mine, ok := p.byTxn[id]
	if !ok {
		return Outcome{}
	}
	out := Outcome{Ended: true}
	for _, e := range sortedEntries(mine) {
		h := mine[e]
		out.Redeliver = append(out.Redeliver, Position{Entry: e, AckSet: slices.Clone(h.ackSet)})
		held := p.entries[e]
		if held == nil {
			continue
		}
		if h.ackSet == nil || held.ackSet == nil {
			delete(p.entries, e)
			continue
		}
		// Give the indexes this transaction held back to the others'.
		mineSet := valueOf(h.ackSet)
		mineSet.flip(0, held.batchSize)
		merged := valueOf(held.ackSet).or(mineSet)
		if merged.cardinality() == held.batchSize {
			delete(p.entries, e)
		} else {
			held.ackSet = merged.longs()
		}
	}
	p.dropTxn(id)
	return out
}

func (p *PendingAcks) dropTxn(id ID) {
	delete(p.byTxn, id)
	p.txns = slices.DeleteFunc(p.txns, func(o ID) bool { return o == id })
}

// LowWaterMark records a coordinator's low water mark heard when id ended
// here, and returns the oldest transaction with individual acks held if it
// is at or below the mark: it ended without this subscription hearing of
// it, and the caller aborts it here (Pulsar's handleLowWaterMark).
func (p *PendingAcks) LowWaterMark(id ID, mark int64) (ID, bool) {
	if old, ok := p.lwm[id.Most]; !ok || old < mark {
		p.lwm[id.Most] = mark
	}
	if len(p.txns) == 0 {
		return ID{}, false
	}
	first := p.txns[0]
	if m, ok := p.lwm[first.Most]; ok && int64(first.Least) <= m {
		return first, true
	}
	return ID{}, false
}

// Forget drops entry e from the held entries once the cursor acknowledged
// it, with every held entry now below the mark-delete position (Pulsar's
// clearIndividualPosition).
func (p *PendingAcks) Forget(e, markDelete int64) {
	delete(p.entries, e)
	for k := range p.entries {
		if k < markDelete {
			delete(p.entries, k)
		}
	}
}

// Held reports whether entry e is held by a transaction, and for a batch
// entry held by index, the indexes still free (1 bits; nil for a whole
// entry). A consumer gets a held entry only with those indexes, and not at
// all when none is left.
func (p *PendingAcks) Held(e int64) (free []int64, held bool) {
	h := p.entries[e]
	if h == nil {
		return nil, false
	}
	return slices.Clone(h.ackSet), true
}

// Cumulative returns the cumulative acknowledgement transaction id holds.
func (p *PendingAcks) Cumulative(id ID) (Position, bool) {
	if p.cum == nil || p.cum.id != id {
		return Position{}, false
	}
	return Position{Entry: p.cum.pos.Entry, AckSet: slices.Clone(p.cum.pos.AckSet)}, true
}

// Empty reports whether nothing is held.
func (p *PendingAcks) Empty() bool { return len(p.entries) == 0 && p.cum == nil && len(p.byTxn) == 0 }

// TxnState is what one transaction holds on a subscription.
type TxnState struct {
	ID ID
	// Entries are the entries it acknowledged individually, in order.
	Entries []Position
	// Cumulative is its cumulative acknowledgement, if it holds one.
	Cumulative *Position
}

// Transactions returns what each transaction holds, in the order they
// first acknowledged (a cumulative holder last if it holds nothing else).
func (p *PendingAcks) Transactions() []TxnState {
	var out []TxnState
	for _, id := range p.txns {
		st := TxnState{ID: id}
		for _, e := range sortedEntries(p.byTxn[id]) {
			st.Entries = append(st.Entries, Position{Entry: e, AckSet: slices.Clone(p.byTxn[id][e].ackSet)})
		}
		out = append(out, st)
	}
	if c := p.cum; c != nil {
		pos := Position{Entry: c.pos.Entry, AckSet: slices.Clone(c.pos.AckSet)}
		i := slices.IndexFunc(out, func(s TxnState) bool { return s.ID == c.id })
		if i < 0 {
			out = append(out, TxnState{ID: c.id})
			i = len(out) - 1
		}
		out[i].Cumulative = &pos
	}
	return out
}

func sortedEntries(m map[int64]*heldEntry) []int64 {
	out := make([]int64, 0, len(m))
	for e := range m {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Clone returns a copy of p that shares nothing with it: what a
// subscription's pending acknowledgements store keeps when its topic is
// unloaded, for the next broker to load.
func (p *PendingAcks) Clone() *PendingAcks {
	out := &PendingAcks{prefix: p.prefix, ledger: p.ledger, txns: slices.Clone(p.txns),
		byTxn: make(map[ID]map[int64]*heldEntry, len(p.byTxn)), entries: make(map[int64]*heldEntry, len(p.entries)),
		lwm: maps.Clone(p.lwm)}
	copies := map[*heldEntry]*heldEntry{}
	clone := func(h *heldEntry) *heldEntry {
		if c, ok := copies[h]; ok {
			return c
		}
		c := &heldEntry{ackSet: slices.Clone(h.ackSet), batchSize: h.batchSize}
		copies[h] = c
		return c
	}
	for e, h := range p.entries {
		out.entries[e] = clone(h)
	}
	for id, held := range p.byTxn {
		m := make(map[int64]*heldEntry, len(held))
		for e, h := range held {
			m[e] = clone(h)
		}
		out.byTxn[id] = m
	}
	if p.cum != nil {
		c := *p.cum
		c.pos.AckSet = slices.Clone(c.pos.AckSet)
		out.cum = &c
	}
	return out
}
