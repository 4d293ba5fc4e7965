package cursor

import "math/bits"

// AckBatchIndexes acknowledges some messages of batch entry e, which holds
// batchSize messages. ackSet uses Pulsar's wire convention for
// MessageIdData.ack_set: 64-bit words, bit i of word i/64 stands for batch index
// i, and a 1 bit means that index is still UNACKNOWLEDGED; missing words count
// as all zero (acknowledged). The set is combined (AND) with any earlier partial
// acknowledgement of the entry, and bits at or beyond batchSize are dropped.
// When no bit remains set the entry is acknowledged as by Ack and entryDone is
// true.
//
// Like every individual acknowledgement, a partial one removes the entry's
// redelivery counter (Pulsar's removeBatch is keyed by entry). An entry that is
// already acknowledged reports entryDone. batchSize should be ≥ 1; a smaller
// value is taken as the width of ackSet.
//
// The memory kept for the entry is bounded by ackSet, never by batchSize:
// batchSize comes from the producer's metadata and may claim 2^31 messages,
// while ackSet arrived in a frame the broker already holds. Trailing zero
// words are not kept (Pulsar's BitSet drops them too).
func (c *Cursor) AckBatchIndexes(e int64, batchSize int, ackSet []int64) (entryDone bool) {
	delete(c.redeliveries, e)
	if c.IsAcked(e) {
		return true
	}
	var next []int64
	if cur, partly := c.ackSets[e]; partly {
		// Earlier sets are already within the batch: AND in place.
		next = cur[:min(len(cur), len(ackSet))]
		for i := range next {
			next[i] &= ackSet[i]
		}
	} else {
		// Every index starts unacknowledged, so the first set is the
		// client's, cut to the batch's width.
		if batchSize < 1 {
			batchSize = 64 * len(ackSet)
		}
		words := (int64(batchSize) + 63) / 64
		next = make([]int64, min(int64(len(ackSet)), words))
		copy(next, ackSet)
		if r := batchSize % 64; r != 0 && int64(len(next)) == words {
			next[words-1] &= int64(uint64(1)<<uint(r) - 1)
		}
	}
	for len(next) > 0 && next[len(next)-1] == 0 {
		next = next[:len(next)-1]
	}
	if len(next) == 0 {
		c.Ack(e)
		return true
	}
	c.ackSets[e] = next
	return false
}

// AckSet returns the unacknowledged-bits set of a partly acknowledged batch
// entry (a copy, in the wire convention of AckBatchIndexes), or nil when the
// entry has no partial acknowledgement. The broker puts it in MESSAGE.ack_set
// when it delivers the entry again.
func (c *Cursor) AckSet(e int64) []int64 {
	s, ok := c.ackSets[e]
	if !ok {
		return nil
	}
	return append([]int64(nil), s...)
}

// Remaining returns how many messages of entry e are still unacknowledged,
// given that the entry holds batchSize messages: 0 when the entry is
// acknowledged, the number of set bits of its ack set when it is partly
// acknowledged, else batchSize (at least 1). Dispatchers charge permits and
// unacked counters with it.
func (c *Cursor) Remaining(e int64, batchSize int) int {
	if c.IsAcked(e) {
		return 0
	}
	if s, ok := c.ackSets[e]; ok {
		n := 0
		for _, w := range s {
			n += bits.OnesCount64(uint64(w))
		}
		return n
	}
	if batchSize < 1 {
		return 1
	}
	return batchSize
}

// AckSets returns copies of the ack sets of every partly acknowledged batch
// entry, keyed by entry, or nil when there are none.
func (c *Cursor) AckSets() map[int64][]int64 {
	if len(c.ackSets) == 0 {
		return nil
	}
	out := make(map[int64][]int64, len(c.ackSets))
	for e, s := range c.ackSets {
		out[e] = append([]int64(nil), s...)
	}
	return out
}
