package txn

import "math/bits"

// bitSet is a batch's ack set as Pulsar's brokers handle it (a copy of
// java.util.BitSet): 64-bit words, bit i standing for batch index i, a 1 bit
// meaning "not acknowledged" (the wire convention of MessageIdData.ack_set).
// Its size is its words' width, which the pending-ack checks depend on: a
// set made from a slice drops trailing zero words, and writing past the end
// grows it to at least twice its words.
type bitSet []uint64

// valueOf is BitSet.valueOf: the words, trailing zero words dropped.
func valueOf(words []int64) bitSet {
	n := len(words)
	for n > 0 && words[n-1] == 0 {
		n--
	}
	b := make(bitSet, n)
	for i := range b {
		b[i] = uint64(words[i])
	}
	return b
}

func (b bitSet) size() int { return 64 * len(b) }

// grow makes room for word w as BitSet.ensureCapacity does.
func (b *bitSet) grow(w int) {
	if w < len(*b) {
		return
	}
	n := max(2*len(*b), w+1)
	*b = append(*b, make(bitSet, n-len(*b))...)
}

func (b *bitSet) set(i int) {
	b.grow(i / 64)
	(*b)[i/64] |= 1 << (i % 64)
}

// setRange sets bits [from, to).
func (b *bitSet) setRange(from, to int) {
	if from >= to {
		return
	}
	b.grow((to - 1) / 64)
	for i := from; i < to; i++ {
		(*b)[i/64] |= 1 << (i % 64)
	}
}

// flip flips bits [from, to).
func (b *bitSet) flip(from, to int) {
	if from >= to {
		return
	}
	b.grow((to - 1) / 64)
	for i := from; i < to; i++ {
		(*b)[i/64] ^= 1 << (i % 64)
	}
}

func (b bitSet) and(o bitSet) bitSet {
	out := make(bitSet, min(len(b), len(o)))
	for i := range out {
		out[i] = b[i] & o[i]
	}
	return out
}

func (b bitSet) or(o bitSet) bitSet {
	out := make(bitSet, max(len(b), len(o)))
	copy(out, b)
	for i, w := range o {
		out[i] |= w
	}
	return out
}

func (b bitSet) cardinality() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func (b bitSet) isEmpty() bool { return b.cardinality() == 0 }

// nextSetBit returns the lowest set bit, -1 when none.
func (b bitSet) nextSetBit() int {
	for i, w := range b {
		if w != 0 {
			return 64*i + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// longs is BitSet.toLongArray: the words, trailing zero words dropped.
func (b bitSet) longs() []int64 {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(b[i])
	}
	return out
}

// ackSetsOverlap is Pulsar's isAckSetOverlap: whether some batch index is
// acknowledged (a 0 bit, within each set's size) in both sets. A nil set
// overlaps nothing.
func ackSetsOverlap(a, b []int64) bool {
	if a == nil || b == nil {
		return false
	}
	x, y := valueOf(a), valueOf(b)
	x.flip(0, x.size())
	y.flip(0, y.size())
	return !x.and(y).isEmpty()
}

// andAckSets intersects two ack sets (what neither acknowledged stays).
func andAckSets(a, b []int64) []int64 { return valueOf(a).and(valueOf(b)).longs() }

// compareWithAckSet orders two positions of the same entry by their ack
// sets as Pulsar's compareToWithAckSet does: by the first index still
// unacknowledged, a set without one (nil or empty) counting as past the end.
func compareWithAckSet(a, b []int64) int {
	x, y := valueOf(a), valueOf(b)
	if x.isEmpty() || y.isEmpty() {
		return -(x.nextSetBit() - y.nextSetBit())
	}
	return x.nextSetBit() - y.nextSetBit()
}
