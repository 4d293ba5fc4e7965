package cursor

import (
	"slices"
	"testing"
)

func TestNewCursorReadsAfterMarkDelete(t *testing.T) {
	c := New(-1)
	if c.MarkDelete() != -1 || c.ReadPosition() != 0 {
		t.Fatalf("got md=%d read=%d", c.MarkDelete(), c.ReadPosition())
	}
	c = New(9)
	if c.MarkDelete() != 9 || c.ReadPosition() != 10 {
		t.Fatalf("got md=%d read=%d", c.MarkDelete(), c.ReadPosition())
	}
}

func TestAckInOrderMovesMarkDelete(t *testing.T) {
	c := New(-1)
	for e := int64(0); e < 5; e++ {
		c.Ack(e)
		if c.MarkDelete() != e {
			t.Fatalf("after ack %d: md=%d", e, c.MarkDelete())
		}
	}
	if got := c.Acked(); got != nil {
		t.Fatalf("acked set not empty: %v", got)
	}
}

func TestAckOutOfOrderKeepsHolesThenAbsorbsPrefix(t *testing.T) {
	c := New(-1)
	c.Ack(2)
	c.Ack(4)
	c.Ack(1)
	if c.MarkDelete() != -1 {
		t.Fatalf("md moved without entry 0: %d", c.MarkDelete())
	}
	if got := c.Acked(); !slices.Equal(got, []int64{1, 2, 4}) {
		t.Fatalf("acked = %v", got)
	}
	c.Ack(0)
	if c.MarkDelete() != 2 {
		t.Fatalf("md = %d, want 2", c.MarkDelete())
	}
	if got := c.Acked(); !slices.Equal(got, []int64{4}) {
		t.Fatalf("acked = %v", got)
	}
	if c.ReadPosition() != 3 {
		t.Fatalf("read position not pulled past md: %d", c.ReadPosition())
	}
}

func TestAckOfNeverDeliveredEntryCounts(t *testing.T) {
	c := New(-1)
	c.Ack(7)
	if !c.IsAcked(7) || c.IsAcked(6) {
		t.Fatal("IsAcked wrong")
	}
	if got := c.Backlog(10); got != 9 {
		t.Fatalf("backlog = %d, want 9", got)
	}
}

func TestBacklogCountsUnackedEntriesBeforeEnd(t *testing.T) {
	c := New(-1)
	if c.Backlog(0) != 0 {
		t.Fatal("empty log has backlog")
	}
	c.Ack(0)
	c.Ack(3)
	c.Ack(20) // beyond end
	if got := c.Backlog(5); got != 3 {
		t.Fatalf("backlog = %d, want 3 (1,2,4)", got)
	}
	if got := c.Backlog(30); got != 27 {
		t.Fatalf("backlog = %d, want 27", got)
	}
}

func TestPartlyAckedBatchStillCountsAsBacklog(t *testing.T) {
	c := New(-1)
	if done := c.AckBatchIndexes(0, 4, []int64{0b1100}); done {
		t.Fatal("entry reported done with bits left")
	}
	if got := c.Backlog(1); got != 1 {
		t.Fatalf("backlog = %d, want 1", got)
	}
}

func TestBatchIndexAcksCombineUntilEntryDone(t *testing.T) {
	c := New(-1)
	c.IncrementRedelivery(0)
	if c.AckBatchIndexes(0, 4, []int64{0b1100}) {
		t.Fatal("done too early")
	}
	if got := c.AckSet(0); !slices.Equal(got, []int64{0b1100}) {
		t.Fatalf("ack set = %b", got)
	}
	if c.Remaining(0, 4) != 2 {
		t.Fatalf("remaining = %d", c.Remaining(0, 4))
	}
	// A later ack whose set still shows index 0 unacked (a stale view) must
	// not un-ack indexes 0 and 1: the sets are ANDed.
	if c.AckBatchIndexes(0, 4, []int64{0b0111}) {
		t.Fatal("done too early")
	}
	if got := c.AckSet(0); !slices.Equal(got, []int64{0b0100}) {
		t.Fatalf("ack set = %b", got)
	}
	if !c.AckBatchIndexes(0, 4, []int64{0}) {
		t.Fatal("entry not done")
	}
	if !c.IsAcked(0) || c.MarkDelete() != 0 || c.AckSet(0) != nil {
		t.Fatal("entry not acked like Ack")
	}
}

func TestBatchIndexAckMasksBitsBeyondBatchSize(t *testing.T) {
	c := New(-1)
	// Bits 3.. are outside a 3-message batch; only index 0 stays unacked.
	c.AckBatchIndexes(0, 3, []int64{-1 &^ 0b110})
	if got := c.AckSet(0); !slices.Equal(got, []int64{0b001}) {
		t.Fatalf("ack set = %b", got)
	}
	if !c.AckBatchIndexes(0, 3, []int64{0b110}) {
		t.Fatal("entry not done")
	}
}

func TestBatchIndexAckOfLargeBatchUsesSeveralWords(t *testing.T) {
	c := New(-1)
	set := []int64{0, 1} // only index 64 unacked
	c.AckBatchIndexes(0, 100, set)
	if c.Remaining(0, 100) != 1 {
		t.Fatalf("remaining = %d", c.Remaining(0, 100))
	}
	if !c.AckBatchIndexes(0, 100, []int64{0}) {
		t.Fatal("missing words must count as acknowledged")
	}
}

func TestPartialBatchAckRemovesRedeliveryCount(t *testing.T) {
	c := New(-1)
	c.IncrementRedelivery(3)
	c.IncrementRedelivery(3)
	c.AckBatchIndexes(3, 2, []int64{0b10})
	if got := c.RedeliveryCount(3); got != 0 {
		t.Fatalf("count = %d, want 0 after partial ack", got)
	}
}

func TestAckRemovesRedeliveryCount(t *testing.T) {
	c := New(-1)
	c.IncrementRedelivery(5)
	if c.IncrementRedelivery(5) != 2 {
		t.Fatal("increment")
	}
	c.Ack(5)
	if c.RedeliveryCount(5) != 0 || c.Redeliveries() != nil {
		t.Fatal("count kept after ack")
	}
}

func TestClearRedeliveriesForgetsAll(t *testing.T) {
	c := New(-1)
	c.IncrementRedelivery(1)
	c.IncrementRedelivery(2)
	c.ForgetRedelivery(1)
	if c.RedeliveryCount(1) != 0 || c.RedeliveryCount(2) != 1 {
		t.Fatal("forget")
	}
	c.ClearRedeliveries()
	if c.Redeliveries() != nil {
		t.Fatal("clear")
	}
}

func TestCumulativeAckAcksEverythingUpToEntry(t *testing.T) {
	c := New(-1)
	c.Ack(2)
	c.Ack(6)
	c.AckBatchIndexes(4, 2, []int64{1})
	c.AckCumulative(5)
	if c.MarkDelete() != 6 {
		t.Fatalf("md = %d, want 6 (absorbs acked 6)", c.MarkDelete())
	}
	if c.Acked() != nil || c.AckSets() != nil {
		t.Fatal("state kept below mark-delete")
	}
	if c.ReadPosition() != 7 {
		t.Fatalf("read = %d", c.ReadPosition())
	}
}

func TestCumulativeAckBackwardsIsIgnored(t *testing.T) {
	c := New(-1)
	c.AckCumulative(5)
	c.AckCumulative(3)
	if c.MarkDelete() != 5 {
		t.Fatalf("md = %d", c.MarkDelete())
	}
}

func TestRewindGoesToFirstEntryAfterMarkDelete(t *testing.T) {
	c := New(-1)
	c.Ack(0)
	c.Ack(2)
	c.SetReadPosition(10)
	c.Rewind()
	if c.ReadPosition() != 1 {
		t.Fatalf("read = %d", c.ReadPosition())
	}
	if c.NextUnacked(2) != 3 {
		t.Fatalf("NextUnacked(2) = %d", c.NextUnacked(2))
	}
}

func TestSetReadPositionNeverGoesBehindMarkDelete(t *testing.T) {
	c := New(4)
	c.SetReadPosition(2)
	if c.ReadPosition() != 5 {
		t.Fatalf("read = %d", c.ReadPosition())
	}
}

func TestResetToBackwardsUnacksEverythingAfterTarget(t *testing.T) {
	c := New(-1)
	for _, e := range []int64{0, 1, 2, 5, 7} {
		c.Ack(e)
	}
	c.AckBatchIndexes(8, 2, []int64{1})
	c.IncrementRedelivery(0) // no-op: already acked
	c.IncrementRedelivery(9)
	c.ResetTo(1)
	if c.MarkDelete() != 0 || c.ReadPosition() != 1 {
		t.Fatalf("md=%d read=%d", c.MarkDelete(), c.ReadPosition())
	}
	if c.Acked() != nil || c.AckSets() != nil || c.IsAcked(2) {
		t.Fatal("acks after target kept")
	}
	if c.RedeliveryCount(9) != 1 {
		t.Fatal("count after target dropped")
	}
}

func TestResetToForwardAcksEverythingBefore(t *testing.T) {
	c := New(-1)
	c.IncrementRedelivery(3)
	c.ResetTo(10)
	if c.MarkDelete() != 9 || !c.IsAcked(3) || c.Redeliveries() != nil {
		t.Fatal("forward reset")
	}
	if c.Backlog(12) != 2 {
		t.Fatalf("backlog = %d", c.Backlog(12))
	}
}

func TestExpireThroughPullsReadPositionForward(t *testing.T) {
	c := New(-1)
	c.Ack(3)
	c.Ack(9)
	c.ExpireThrough(5)
	if c.MarkDelete() != 5 || c.ReadPosition() != 6 {
		t.Fatalf("md=%d read=%d", c.MarkDelete(), c.ReadPosition())
	}
	if !slices.Equal(c.Acked(), []int64{9}) {
		t.Fatalf("acked = %v", c.Acked())
	}
	c.ExpireThrough(2) // older than md: nothing
	if c.MarkDelete() != 5 {
		t.Fatal("md moved back")
	}
}

func TestNoStateRetainedBelowMarkDelete(t *testing.T) {
	c := New(-1)
	for e := int64(0); e < 1000; e++ {
		c.IncrementRedelivery(e)
	}
	for e := int64(999); e >= 0; e-- {
		c.Ack(e)
	}
	if c.MarkDelete() != 999 || len(c.acked) != 0 || len(c.redeliveries) != 0 || len(c.ackSets) != 0 {
		t.Fatalf("retained: acked=%d counts=%d sets=%d", len(c.acked), len(c.redeliveries), len(c.ackSets))
	}
}

func BenchmarkCursorAck(b *testing.B) {
	c := New(-1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e := int64(i)
		// Ack pairs out of order so both the hole and the absorb paths run.
		if i%2 == 0 {
			c.Ack(e + 1)
		} else {
			c.Ack(e - 1)
		}
	}
}

func TestDurableCopyKeepsAcknowledgementsAndDropsReadPositionAndCounters(t *testing.T) {
	c := New(-1)
	c.Ack(0)
	c.Ack(2)
	c.AckBatchIndexes(4, 3, []int64{0b001})
	c.SetReadPosition(6)
	c.IncrementRedelivery(1)
	d := c.Durable()
	if d.MarkDelete() != 0 || !d.IsAcked(2) || d.IsAcked(1) || d.IsAcked(3) {
		t.Errorf("durable copy: mark-delete %d, acked %v", d.MarkDelete(), d.Acked())
	}
	if d.Remaining(4, 3) != 1 {
		t.Errorf("batch 4 has %d indexes left in the copy, want 1", d.Remaining(4, 3))
	}
	if d.ReadPosition() != 1 || d.RedeliveryCount(1) != 0 {
		t.Errorf("copy read position %d, count %d; want 1 and 0", d.ReadPosition(), d.RedeliveryCount(1))
	}
	c.Ack(1)
	if d.IsAcked(1) {
		t.Error("acknowledging the cursor changed its durable copy")
	}
}

func TestRestoreGivesBackWhatDurableKeeps(t *testing.T) {
	c := New(-1)
	c.Ack(0)
	c.Ack(2)
	c.Ack(5)
	c.AckBatchIndexes(3, 4, []int64{0b1010})
	c.IncrementRedelivery(4)
	r := Restore(c.MarkDelete(), c.Acked(), c.AckSets())
	if r.MarkDelete() != 0 || r.ReadPosition() != 1 {
		t.Fatalf("restored mark-delete %d read %d, want 0 and 1", r.MarkDelete(), r.ReadPosition())
	}
	if got := r.Acked(); !slices.Equal(got, []int64{2, 5}) {
		t.Fatalf("restored individually acked %v, want [2 5]", got)
	}
	if got := r.AckSet(3); !slices.Equal(got, []int64{0b1010}) {
		t.Fatalf("restored ack set of 3 %v, want [10]", got)
	}
	if r.RedeliveryCount(4) != 0 {
		t.Fatal("a restored cursor has redelivery counters")
	}
}

func TestRestoreAbsorbsAckedEntriesAfterTheMarkDelete(t *testing.T) {
	r := Restore(3, []int64{1, 4, 5, 7}, map[int64][]int64{2: {1}, 6: {0}, 9: {0b11}})
	if r.MarkDelete() != 5 || r.ReadPosition() != 6 {
		t.Fatalf("mark-delete %d read %d, want 5 and 6", r.MarkDelete(), r.ReadPosition())
	}
	if got := r.Acked(); !slices.Equal(got, []int64{7}) {
		t.Fatalf("individually acked %v, want [7]", got)
	}
	if len(r.AckSets()) != 1 || r.AckSet(9) == nil {
		t.Fatalf("ack sets %v, want only entry 9's", r.AckSets())
	}
}
