package store

import "github.com/pulsarsim/pulsarsim/txn"

// Entry is one stored entry: a SEND's bytes after its command, kept exactly
// as the producer sent them, with what dispatch needs to know about it.
type Entry struct {
	// Data is the SEND's bytes after its command: the broker entry
	// metadata if any, the checksum, the metadata and the payload.
	Data []byte
	// PublishTime is the entry's time in ms since the epoch: the broker
	// entry metadata's timestamp when the broker writes one, else the
	// metadata's publish time (Pulsar's entry timestamp).
	PublishTime uint64
	Messages    int32  // num_messages_in_batch, 1 when not batched
	Batched     bool   // the metadata says num_messages_in_batch
	Key         []byte // sticky key for Key_Shared
	DeliverAt   int64  // deliver_at_time in ms, 0 if none
	// Txn is the transaction of a transactional message (InTxn), from
	// its SEND or its metadata; TxnMeta says the metadata names it, which
	// is where Pulsar's dispatcher looks for aborted messages
	// (pulsar-client-go v0.19.0 puts it in the SEND only). Marker is set
	// for a transaction's commit or abort marker (which also carries its
	// Txn).
	Txn     txn.ID
	InTxn   bool
	TxnMeta bool
	Marker  bool
	// MetaLen is the length of the broker entry metadata that opens Data,
	// 0 for none (package broker, entrymetadata.go).
	MetaLen uint8
}

// Log is a topic's entries. Entry n has entryId n within the topic's
// ledger; entries below Base have been freed. It is not safe for
// concurrent use: the topic that has it loaded uses it under its lock.
type Log struct {
	Base    int64    // the entry id of Entries[0]
	Entries []*Entry // the entries not freed, from Base on

	FreedMessages int64 // messages in the freed entries
	FreedBytes    int64 // bytes of the freed entries
	TotalBytes    int64 // bytes of every entry appended, freed or not

	// Blocks: Closed lists the end (exclusive) of each closed block not yet
	// freed, oldest first, and ClosedAt when it closed (ms, broker clock);
	// the open block holds BlockEntries entries and BlockBytes bytes since
	// the last close.
	Closed       []int64
	ClosedAt     []int64
	BlockEntries int64
	BlockBytes   int64
}

// End is the entry id the next appended entry gets.
func (l *Log) End() int64 { return l.Base + int64(len(l.Entries)) }

// Get returns entry n, or nil when it is freed or not yet written.
func (l *Log) Get(n int64) *Entry {
	if n < l.Base || n >= l.End() {
		return nil
	}
	return l.Entries[n-l.Base]
}

// Append stores e, closing the open block at maxEntries or maxBytes (at
// the time now returns).
func (l *Log) Append(e *Entry, maxEntries, maxBytes int64, now func() int64) int64 {
	l.Entries = append(l.Entries, e)
	l.BlockEntries++
	l.BlockBytes += int64(len(e.Data))
	l.TotalBytes += int64(len(e.Data))
	if l.BlockEntries >= maxEntries || l.BlockBytes >= maxBytes {
		l.Closed = append(l.Closed, l.End())
		l.ClosedAt = append(l.ClosedAt, now())
		l.BlockEntries, l.BlockBytes = 0, 0
	}
	return l.End() - 1
}

// FreeThrough frees the entries up to and including n: Base moves past
// them and their bytes become garbage. The freed entries' messages and bytes
// are added to FreedMessages and FreedBytes, so counters of everything
// published stay right.
func (l *Log) FreeThrough(n int64) {
	k := min(n+1-l.Base, int64(len(l.Entries)))
	if k <= 0 {
		return
	}
	for _, e := range l.Entries[:k] {
		l.FreedMessages += int64(e.Messages)
		l.FreedBytes += int64(len(e.Data))
	}
	clear(l.Entries[:k])
	l.Entries = l.Entries[k:]
	l.Base += k
	if cap(l.Entries) > 64 && len(l.Entries) < cap(l.Entries)/4 {
		// Drop the freed front of the backing array too.
		l.Entries = append(make([]*Entry, 0, 2*len(l.Entries)), l.Entries...)
	}
}

// BlockOf returns the end (exclusive) and close time of the closed block
// holding entry n, or false when n lies in the open block.
func (l *Log) BlockOf(n int64) (end, closedAt int64, ok bool) {
	for i, e := range l.Closed {
		if n < e {
			return e, l.ClosedAt[i], true
		}
	}
	return 0, 0, false
}

// CloseTimeOf returns the close time of the closed block holding entry n.
func (l *Log) CloseTimeOf(n int64) (int64, bool) {
	_, at, ok := l.BlockOf(n)
	return at, ok
}
