package txn

import "slices"

// Buffer is a topic's transaction buffer: the transactions with messages
// stored on the topic that have not ended (in the order of their first
// message), the transactions aborted on it, and the coordinators' low water
// marks it has heard of. It decides how far consumers may read (MaxRead):
// never past the first message of the oldest open transaction, so an open
// transaction holds back every later message, transactional or not.
type Buffer struct {
	ongoing []ongoingTxn
	aborted map[ID]struct{}
	lwm     map[uint64]int64
	// taken is set once the topic stored a transactional message: Pulsar's
	// buffer then leaves its NoSnapshot state, after which an abort writes
	// a marker too (before, only a commit does).
	taken bool
}

type ongoingTxn struct {
	id    ID
	first int64 // the entry of its first message
}

// NewBuffer returns the buffer of a topic that never stored a
// transactional message.
func NewBuffer() *Buffer {
	return &Buffer{aborted: map[ID]struct{}{}, lwm: map[uint64]int64{}}
}

// CanAppend checks that a message of transaction id may be stored: a
// transaction at or below its coordinator's low water mark has ended
// (KindNotAllowed). The buffer does not ask the coordinator anything else.
func (b *Buffer) CanAppend(id ID) error {
	if m, ok := b.lwm[id.Most]; ok && m >= int64(id.Least) {
		return &Error{KindNotAllowed, "Transaction [" + id.String() + "] has been ended. " +
			"Please use a new transaction to send message."}
	}
	return nil
}

// Appended records that entry holds a message of transaction id. The first
// message of a transaction that is neither ongoing nor aborted makes it
// ongoing.
func (b *Buffer) Appended(id ID, entry int64) {
	b.taken = true
	if b.isOngoing(id) || b.IsAborted(id) {
		return
	}
	b.ongoing = append(b.ongoing, ongoingTxn{id: id, first: entry})
}

func (b *Buffer) isOngoing(id ID) bool {
	return slices.ContainsFunc(b.ongoing, func(o ongoingTxn) bool { return o.id == id })
}

// MaxRead returns the last entry consumers may read, given the topic's last
// entry: the entry before the first message of the oldest ongoing
// transaction, else last.
func (b *Buffer) MaxRead(last int64) int64 {
	if len(b.ongoing) == 0 {
		return last
	}
	return b.ongoing[0].first - 1
}

// Start returns the entry of the first message of an ongoing transaction.
func (b *Buffer) Start(id ID) (int64, bool) {
	for _, o := range b.ongoing {
		if o.id == id {
			return o.first, true
		}
	}
	return 0, false
}

// IsAborted reports whether transaction id was aborted on this topic: its
// messages are never delivered.
func (b *Buffer) IsAborted(id ID) bool {
	_, ok := b.aborted[id]
	return ok
}

// Ongoing returns the ongoing transactions, oldest first.
func (b *Buffer) Ongoing() []ID {
	out := make([]ID, len(b.ongoing))
	for i, o := range b.ongoing {
		out[i] = o.id
	}
	return out
}

// Aborted returns the transactions aborted on this topic, in id order.
func (b *Buffer) Aborted() []ID {
	out := make([]ID, 0, len(b.aborted))
	for id := range b.aborted {
		out = append(out, id)
	}
	slices.SortFunc(out, compareIDs)
	return out
}

func compareIDs(a, b ID) int {
	switch {
	case a.Most != b.Most:
		if a.Most < b.Most {
			return -1
		}
		return 1
	case a.Least < b.Least:
		return -1
	case a.Least > b.Least:
		return 1
	}
	return 0
}

// NeedsMarker reports whether ending a transaction writes a marker entry:
// a commit always does; an abort only once the topic has stored a
// transactional message (Pulsar skips the abort marker of a buffer that
// never took one).
func (b *Buffer) NeedsMarker(commit bool) bool { return commit || b.taken }

// End records that transaction id ended on this topic, after its marker
// was stored (call it only when NeedsMarker said so: an abort without a
// marker changes nothing): it is no longer ongoing, and an abort marks it aborted.
// lowWaterMark is its coordinator's mark at the time. When the oldest
// ongoing transaction is now at or below the mark, End returns it: it has
// ended at its coordinator without telling this topic, and the caller
// aborts it here (as Pulsar's handleLowWaterMark does, for that one
// transaction only).
func (b *Buffer) End(id ID, commit bool, lowWaterMark int64) (ID, bool) {
	if !commit {
		b.aborted[id] = struct{}{}
	}
	b.ongoing = slices.DeleteFunc(b.ongoing, func(o ongoingTxn) bool { return o.id == id })
	if old, ok := b.lwm[id.Most]; !ok || old < lowWaterMark {
		b.lwm[id.Most] = lowWaterMark
	}
	if len(b.ongoing) > 0 {
		first := b.ongoing[0].id
		if m, ok := b.lwm[first.Most]; ok && int64(first.Least) <= m {
			return first, true
		}
	}
	return ID{}, false
}
