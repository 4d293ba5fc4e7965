// Package compaction computes a topic's compacted view as Pulsar 4.0.8's
// publishing-order compactor (the default two-phase compactor) does: for
// every key, the latest message with that key up to the compaction
// horizon; a key whose latest message is empty (a tombstone) is gone;
// messages without a key are dropped unless topicCompactionRetainNullKey
// is set. Batches are compacted message by message: a batch entry that
// keeps some of its messages is kept with the others marked compacted
// out, in their places.
//
// The package is pure: it sees entries as plain values and returns which
// of them, and which of their messages, the view keeps. The broker reads
// and rewrites the entries' bytes.
package compaction

// Message is one message of an entry, as the compactor sees it.
type Message struct {
	// Key is the message's partition key, when HasKey.
	Key    string
	HasKey bool
	// Size is the payload's size in bytes (uncompressed); an empty payload
	// with a key is a tombstone.
	Size int
	// Out marks a message already compacted out of a batch that an
	// earlier compaction rewrote: it is neither a value nor a tombstone.
	Out bool
}

// Entry is one entry of the topic, in log order.
type Entry struct {
	// Pos is the entry's position in the log.
	Pos int64
	// Batched says the entry is a batch the compactor can read (it has
	// num_messages_in_batch and is not encrypted): its messages are
	// compacted one by one. An entry that is not is one message, Messages[0].
	Batched bool
	// Marker is a server-only marker (a transaction marker): never kept.
	Marker bool
	// Messages are the entry's messages, by batch index.
	Messages []Message
}

// Kept is one entry of the compacted view.
type Kept struct {
	// Pos is the position of the original entry.
	Pos int64
	// Keep says, for a batched entry, which batch indexes survive; the
	// others are compacted out. It is nil for an entry kept whole.
	Keep []bool
}

// Options are the compactor's settings.
type Options struct {
	// RetainNullKey is topicCompactionRetainNullKey (false in Pulsar 4.0.8):
	// messages without a key are kept instead of dropped.
	RetainNullKey bool
}

// msgRef names one message: an entry position and a batch index (-1 for a
// message that is a whole entry).
type msgRef struct {
	pos int64
	idx int
}

// Compact returns the compacted view of entries, which must be in log
// order, in log order. It works in two phases as Pulsar's compactor does:
// the first finds the latest message of every key (a tombstone removes the
// key), the second keeps those messages.
func Compact(entries []Entry, opts Options) []Kept {
	latest := latestByKey(entries)
	var view []Kept
	for _, e := range entries {
		if k, ok := keep(e, latest, opts); ok {
			view = append(view, k)
		}
	}
	return view
}

// latestByKey is the first phase: the latest message of every key whose
// latest message is not a tombstone.
func latestByKey(entries []Entry) map[string]msgRef {
	latest := map[string]msgRef{}
	note := func(m Message, ref msgRef) {
		switch {
		case m.Out || !m.HasKey:
		case m.Size > 0:
			latest[m.Key] = ref
		default:
			delete(latest, m.Key)
		}
	}
	for _, e := range entries {
		switch {
		case e.Marker || len(e.Messages) == 0:
		case e.Batched:
			for i, m := range e.Messages {
				note(m, msgRef{e.Pos, i})
			}
		default:
			note(e.Messages[0], msgRef{e.Pos, -1})
		}
	}
	return latest
}

// keep is the second phase for one entry: whether the view keeps it, and
// which of its messages.
func keep(e Entry, latest map[string]msgRef, opts Options) (Kept, bool) {
	if e.Marker || len(e.Messages) == 0 {
		return Kept{}, false
	}
	survives := func(m Message, ref msgRef) bool {
		switch {
		case m.Out:
			return false
		case !m.HasKey:
			return opts.RetainNullKey
		}
		l, ok := latest[m.Key]
		return ok && m.Size > 0 && l == ref
	}
	if !e.Batched {
		return Kept{Pos: e.Pos}, survives(e.Messages[0], msgRef{e.Pos, -1})
	}
	k := Kept{Pos: e.Pos, Keep: make([]bool, len(e.Messages))}
	any := false
	for i, m := range e.Messages {
		k.Keep[i] = survives(m, msgRef{e.Pos, i})
		any = any || k.Keep[i]
	}
	return k, any
}

// Next returns the position of the first entry of view (in log order) at or
// after pos, or -1 when there is none.
func Next(view []Kept, pos int64) int64 {
	lo, hi := 0, len(view)
	for lo < hi {
		mid := (lo + hi) / 2
		if view[mid].Pos < pos {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(view) {
		return -1
	}
	return view[lo].Pos
}
