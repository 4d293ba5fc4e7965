package cursor

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// hugeBatch is the largest num_messages_in_batch a producer can claim.
const hugeBatch = math.MaxInt32

// allocatedBy returns the bytes the Go heap handed out while f ran. The
// cursor tests run sequentially, so nothing else allocates meanwhile.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestPartialAckOfBatchClaimingHugeSizeCostsOnlyItsAckSet(t *testing.T) {
	c := New(-1)
	// A one-word ack set for a batch that claims 2^31-1 messages: indexes
	// 0 and 1 acknowledged, the rest of the first word unacknowledged.
	var done bool
	got := allocatedBy(func() { done = c.AckBatchIndexes(0, hugeBatch, []int64{-4}) })
	if done {
		t.Fatal("entry done after a partial ack")
	}
	if got > 4<<10 {
		t.Fatalf("a partial ack of a batch claiming %d messages allocated %d bytes", hugeBatch, got)
	}
	// Missing words count as acknowledged, as on the wire.
	if got := c.AckSet(0); !slices.Equal(got, []int64{-4}) {
		t.Fatalf("ack set = %x", got)
	}
	if got := c.Remaining(0, hugeBatch); got != 62 {
		t.Fatalf("remaining = %d, want 62", got)
	}
	// The second ack combines in place.
	got = allocatedBy(func() { done = c.AckBatchIndexes(0, hugeBatch, []int64{1 << 5, -1, -1}) })
	if done || got > 4<<10 {
		t.Fatalf("second partial ack: done %v, %d bytes", done, got)
	}
	if got := c.AckSet(0); !slices.Equal(got, []int64{1 << 5}) {
		t.Fatalf("ack set = %x", got)
	}
	if !c.AckBatchIndexes(0, hugeBatch, nil) || !c.IsAcked(0) {
		t.Fatal("an empty ack set did not finish the entry")
	}
}

func TestBatchIndexAckDropsTrailingZeroWords(t *testing.T) {
	c := New(-1)
	c.AckBatchIndexes(0, 200, []int64{1, 0, 0})
	if got := c.AckSet(0); !slices.Equal(got, []int64{1}) {
		t.Fatalf("ack set = %x, want [1]", got)
	}
}

// refAckBatch is the plain definition of a batch-index ack: start from a set
// with the first batchSize bits set, AND each ack set in (missing words are
// zero), and the entry is done when no bit is left.
type refAckBatch struct{ bits []bool }

func (r *refAckBatch) ack(batchSize int, set []int64) (done bool) {
	if r.bits == nil {
		r.bits = make([]bool, batchSize)
		for i := range r.bits {
			r.bits[i] = true
		}
	}
	left := false
	for i := range r.bits {
		w := int64(0)
		if i/64 < len(set) {
			w = set[i/64]
		}
		r.bits[i] = r.bits[i] && w&(1<<uint(i%64)) != 0
		left = left || r.bits[i]
	}
	return !left
}

func (r *refAckBatch) remaining() int {
	n := 0
	for _, b := range r.bits {
		if b {
			n++
		}
	}
	return n
}

func TestBatchIndexAcksMatchTheBitSetDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 200).Draw(t, "size")
		c := New(-1)
		var ref refAckBatch
		for range rapid.IntRange(1, 6).Draw(t, "acks") {
			set := rapid.SliceOfN(rapid.Int64(), 0, 5).Draw(t, "set")
			want := ref.ack(size, set)
			if got := c.AckBatchIndexes(0, size, set); got != want {
				t.Fatalf("done = %v, want %v", got, want)
			}
			if want {
				if !c.IsAcked(0) || c.AckSet(0) != nil {
					t.Fatal("done entry not acknowledged")
				}
				return
			}
			if got := c.Remaining(0, size); got != ref.remaining() {
				t.Fatalf("remaining = %d, want %d", got, ref.remaining())
			}
			n := 0
			for _, w := range c.AckSet(0) {
				n += bits.OnesCount64(uint64(w))
			}
			if n != ref.remaining() {
				t.Fatalf("ack set holds %d bits, want %d", n, ref.remaining())
			}
		}
	})
}

// BenchmarkPartialAckOfHugeBatch measures a partial batch-index ack of an
// entry that claims 2^31-1 messages (before the fix it allocated a 268 MB
// all-ones set).
func BenchmarkPartialAckOfHugeBatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c := New(-1)
		c.AckBatchIndexes(0, hugeBatch, []int64{-4})
	}
}
