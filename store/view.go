package store

import "slices"

// CompactedView is a topic's compacted view (Pulsar's compacted ledger):
// for each key, its latest message up to the horizon, as entries at their
// original positions. A batch entry some of whose messages are gone is
// rewritten with those messages compacted out.
type CompactedView struct {
	Ran     bool     // a compaction ran: the status is SUCCESS
	Has     bool     // a compaction stored a view: Horizon is set
	Horizon int64    // the last entry the view covers
	Pos     []int64  // the entry ids of Entries, ascending
	Entries []*Entry // the view's entries
}

// Entry returns the view's entry at position n, or nil.
func (v *CompactedView) Entry(n int64) *Entry {
	i, ok := slices.BinarySearch(v.Pos, n)
	if !ok {
		return nil
	}
	return v.Entries[i]
}
