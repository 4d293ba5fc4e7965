package dispatch

import (
	"maps"
	"slices"
	"testing"
)

func TestSharedRoundRobinPrefersHighestPriorityWithPermits(t *testing.T) {
	// The javadoc example of getNextConsumer, one entry per turn:
	// C1(p0,2) C2(p0,1) C3(p0,1) C4(p1,2) C5(p1,1) -> C1,C2,C3,C1,C4,C5,C4.
	d, log := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	log.add(10, 1, "")
	for _, c := range []struct {
		id      uint64
		prio    int32
		permits int
	}{{1, 0, 2}, {2, 0, 1}, {3, 0, 1}, {4, 1, 2}, {5, 1, 1}} {
		mustAdd(t, d, ConsumerSpec{ID: c.id, Priority: c.prio})
		d.Flow(c.id, c.permits)
	}
	var order []uint64
	for _, dl := range d.Dispatch(log) {
		order = append(order, dl.Consumer)
	}
	if want := []uint64{1, 2, 3, 1, 4, 5, 4}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestSharedLowerPriorityConsumerJoiningFirstIsSortedBehind(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1, Priority: 5})
	mustAdd(t, d, ConsumerSpec{ID: 2, Priority: 0})
	d.Flow(1, 10)
	d.Flow(2, 10)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{0, 1, 2}) {
		t.Fatalf("got %+v", got)
	}
}

func TestSharedGivesAtMostRoundRobinBatchPerTurn(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(60, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 100)
	d.Flow(2, 100)
	got := d.Dispatch(log)
	var c1, c2 []int64
	for e := int64(0); e < 60; e++ {
		if (e/20)%2 == 0 {
			c1 = append(c1, e)
		} else {
			c2 = append(c2, e)
		}
	}
	if !slices.Equal(entriesOf(got, 1), c1) || !slices.Equal(entriesOf(got, 2), c2) {
		t.Fatalf("c1=%v c2=%v", entriesOf(got, 1), entriesOf(got, 2))
	}
}

func TestSharedBatchCostsMessagesAndPermitsGoNegative(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 5, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 7)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0, 1}) {
		t.Fatalf("got %v", allEntries(got))
	}
	c := d.Snapshot().Consumers[0]
	if c.Permits != -3 || c.Unacked != 10 {
		t.Fatalf("permits %d unacked %d", c.Permits, c.Unacked)
	}
}

func TestSharedNackRedeliversWithCountPlusOne(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(1, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log)
	for want := int32(1); want <= 3; want++ {
		d.Redeliver(1, []int64{0})
		got := d.Dispatch(log)
		if len(got) != 1 || got[0].RedeliveryCount != want {
			t.Fatalf("round %d: %+v", want, got)
		}
	}
	d.Ack(0)
	if d.Snapshot().Redeliveries != nil {
		t.Fatal("count kept after ack")
	}
}

func TestSharedRedeliverCountsOnlyOwnPendingEntries(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	log.add(4, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 2)
	d.Flow(2, 2)
	got := d.Dispatch(log) // 0,2 -> c1 ; 1,3 -> c2
	if !slices.Equal(entriesOf(got, 1), []int64{0, 2}) {
		t.Fatalf("got %v", entriesOf(got, 1))
	}
	d.Ack(2)
	// 1 and 3 are c2's, 2 is acked, 9 was never delivered: only 0 counts.
	d.Redeliver(1, []int64{0, 1, 2, 3, 9})
	s := d.Snapshot()
	if !maps.Equal(s.Redeliveries, map[int64]int32{0: 1}) || !slices.Equal(s.Replay, []int64{0}) {
		t.Fatalf("counts %v replay %v", s.Redeliveries, s.Replay)
	}
	if len(s.Consumers[1].Pending) != 2 {
		t.Fatal("c2 lost pending entries")
	}
}

func TestSharedRedeliverTwiceBeforeResendCountsOnce(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(1, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 1)
	d.Dispatch(log)
	d.Redeliver(1, []int64{0, 0})
	d.Redeliver(1, []int64{0})
	if c := d.Cursor().RedeliveryCount(0); c != 1 {
		t.Fatalf("count %d, want 1", c)
	}
}

func TestSharedRedeliverAllCountsEveryPendingEntry(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	d.Dispatch(log)
	d.Ack(1)
	d.RedeliverAll(1)
	d.Flow(1, 10)
	got := d.Dispatch(log)
	if !maps.Equal(countsOf(got), map[int64]int32{0: 1, 2: 1}) {
		t.Fatalf("got %v", countsOf(got))
	}
}

func TestSharedClosedConsumerEntriesMoveWithCountsUnchanged(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(2, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 2)
	d.Dispatch(log)
	d.Redeliver(1, []int64{1})
	d.Dispatch(log) // 1 resent to c1 with count 1
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(2, 10)
	d.RemoveConsumer(1)
	got := d.Dispatch(log)
	if !maps.Equal(countsOf(got), map[int64]int32{0: 0, 1: 1}) || !slices.Equal(entriesOf(got, 2), []int64{0, 1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestLastConsumerLeavingClearsCounts(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	d.Dispatch(log)
	d.RedeliverAll(1)
	d.RemoveConsumer(1)
	s := d.Snapshot()
	if s.Redeliveries != nil || s.Replay != nil {
		t.Fatalf("counts %v replay %v kept", s.Redeliveries, s.Replay)
	}
	d.Ack(1) // acked while nobody is attached
	mustAdd(t, d, ConsumerSpec{ID: 2})
	if rp := d.Snapshot().ReadPosition; rp != 0 {
		t.Fatalf("read position %d not rewound", rp)
	}
	d.Flow(2, 10)
	got := d.Dispatch(log)
	if !maps.Equal(countsOf(got), map[int64]int32{0: 0, 2: 0}) {
		t.Fatalf("got %v", countsOf(got))
	}
}

func TestSharedAckFromAnotherConsumerRemovesPending(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(1, 3, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 10)
	d.Dispatch(log)
	d.Ack(0) // the ack carries no consumer: any consumer's ack counts
	c := d.Snapshot().Consumers[0]
	if len(c.Pending) != 0 || c.Unacked != 0 {
		t.Fatalf("%+v", c)
	}
}

func TestSharedMaxUnackedBlocksAndUnblocksAtHalf(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = 4 })
	log.add(10, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	if got := d.Dispatch(log); len(got) != 4 {
		t.Fatalf("sent %d, want 4", len(got))
	}
	d.Flow(1, 5) // parked
	if s := d.Snapshot().Consumers[0]; !s.Blocked || s.ParkedPermits != 5 {
		t.Fatalf("%+v", s)
	}
	d.Ack(0)
	if got := d.Dispatch(log); got != nil {
		t.Fatal("unblocked above half")
	}
	d.Ack(1) // unacked 2 = max/2
	s := d.Snapshot().Consumers[0]
	if s.Blocked || s.Permits != 96+5 {
		t.Fatalf("%+v", s)
	}
	if got := d.Dispatch(log); len(got) != 2 {
		t.Fatalf("sent %d after unblock, want 2", len(got))
	}
}

func TestRedeliverUnblocksConsumer(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = 2 })
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.Dispatch(log)
	d.Redeliver(1, []int64{0})
	if d.Snapshot().Consumers[0].Blocked {
		t.Fatal("still blocked")
	}
}

func TestNegativeMaxUnackedMeansUnlimited(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = -1 })
	log.add(300, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 1000)
	if got := d.Dispatch(log); len(got) != 300 {
		t.Fatalf("sent %d", len(got))
	}
}

func TestReplayDropsAckedEntries(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	d.Dispatch(log)
	d.RedeliverAll(1)
	d.Ack(1)
	d.Flow(1, 10)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{0, 2}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestReplayIsServedBeforeNewReadsInPositionOrder(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(4, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	d.Dispatch(log)
	d.Redeliver(1, []int64{2, 0})
	d.Flow(1, 10)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{0, 2, 3}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestRedeliveredPartialBatchCarriesAckSetAndCostsRemaining(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(1, 4, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 4)
	d.Dispatch(log)
	d.AckBatchIndexes(0, 4, []int64{0b1100}) // indexes 0,1 acked
	if c := d.Snapshot().Consumers[0]; c.Unacked != 2 || c.Pending[0].Messages != 2 {
		t.Fatalf("%+v", c)
	}
	d.RedeliverAll(1)
	d.Flow(1, 10)
	got := d.Dispatch(log)
	if len(got) != 1 || !slices.Equal(got[0].AckSet, []int64{0b1100}) || got[0].Messages != 2 || got[0].RedeliveryCount != 1 {
		t.Fatalf("got %+v", got)
	}
	d.AckBatchIndexes(0, 4, []int64{0})
	s := d.Snapshot()
	if s.MarkDelete != 0 || len(s.Consumers[0].Pending) != 0 || s.Consumers[0].Unacked != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestPartialBatchAckWipesCountOfWholeEntry(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(1, 4, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log)
	d.RedeliverAll(1)
	d.Dispatch(log)
	d.AckBatchIndexes(0, 4, []int64{0b1110})
	d.RedeliverAll(1)
	if got := d.Dispatch(log); len(got) != 1 || got[0].RedeliveryCount != 1 {
		t.Fatalf("got %+v, want count restarted at 1", got)
	}
}

func TestExpiredPendingEntryRedeliverIsNotCounted(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.Dispatch(log)
	d.Expire(1)
	d.RedeliverAll(1)
	s := d.Snapshot()
	if !maps.Equal(s.Redeliveries, map[int64]int32{2: 1}) || !slices.Equal(s.Replay, []int64{2}) {
		t.Fatalf("counts %v replay %v", s.Redeliveries, s.Replay)
	}
}

func TestResetToRestartsDeliveryAtTarget(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log)
	d.Ack(3)
	d.RemoveConsumer(1) // the broker disconnects consumers first
	d.ResetTo(2)
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(2, 100)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{2, 3, 4}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestNoDeliveryWithoutPermits(t *testing.T) {
	d, log := newTest(t, Shared)
	log.add(3, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	if got := d.Dispatch(log); got != nil {
		t.Fatal("sent without permits")
	}
	d.Flow(1, 0)
	d.Flow(1, -5)
	if got := d.Dispatch(log); got != nil {
		t.Fatal("non-positive flow added permits")
	}
}

// sizedLog returns a log of unkeyed entries holding the given numbers of
// messages.
func sizedLog(sizes ...int32) *testLog {
	l := &testLog{}
	for _, n := range sizes {
		l.add(1, n, "")
	}
	return l
}

func TestSharedTurnIsMessagesOverTheReadsAverageBatchSize(t *testing.T) {
	// 20 batches of 10 messages, then 10 single messages: 210 messages in
	// 30 entries, 7 per entry on average.
	var sizes []int32
	for i := 0; i < 30; i++ {
		sizes = append(sizes, map[bool]int32{true: 10, false: 1}[i < 20])
	}
	log := sizedLog(sizes...)
	d, _ := newTest(t, Shared)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 1000)
	d.Flow(2, 1000)
	got := d.Dispatch(log)
	// First turn: min(20, ceil(210/7)) = 20 entries. Then 10 messages are
	// left: ceil(10/7) = 2 entries, ceil(8/7) = 2, then one a turn.
	want1 := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 22, 23, 25, 27, 29}
	want2 := []int64{20, 21, 24, 26, 28}
	if !slices.Equal(entriesOf(got, 1), want1) || !slices.Equal(entriesOf(got, 2), want2) {
		t.Fatalf("consumer 1 got %v, consumer 2 got %v", entriesOf(got, 1), entriesOf(got, 2))
	}
}

func TestSharedTurnIsBoundedByPermitsInMessages(t *testing.T) {
	// 13 messages in 4 entries: 3 per entry on average (integer division).
	log := sizedLog(1, 1, 1, 10)
	d, _ := newTest(t, Shared)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 5)
	d.Flow(2, 5)
	got := d.Dispatch(log)
	// ceil(5/3) = 2 entries each; the second consumer's turn takes the
	// 10-message batch whole and goes to -6 permits.
	if !slices.Equal(entriesOf(got, 1), []int64{0, 1}) || !slices.Equal(entriesOf(got, 2), []int64{2, 3}) {
		t.Fatalf("consumer 1 got %v, consumer 2 got %v", entriesOf(got, 1), entriesOf(got, 2))
	}
	s := d.Snapshot()
	if s.Consumers[0].Permits != 3 || s.Consumers[1].Permits != -6 {
		t.Fatalf("permits %d and %d, want 3 and -6", s.Consumers[0].Permits, s.Consumers[1].Permits)
	}
}

func TestSharedTurnIsBoundedByUnackedRoom(t *testing.T) {
	log := sizedLog(2, 2, 2, 2)
	d, _ := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = 4 })
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 100)
	d.Flow(2, 100)
	got := d.Dispatch(log)
	if !slices.Equal(entriesOf(got, 1), []int64{0, 1}) || !slices.Equal(entriesOf(got, 2), []int64{2, 3}) {
		t.Fatalf("consumer 1 got %v, consumer 2 got %v", entriesOf(got, 1), entriesOf(got, 2))
	}
}

func TestSharedReadTakesAtMostThePermitsInEntriesAndReplaysTheRest(t *testing.T) {
	log := sizedLog(5, 5, 5, 5, 5, 5)
	d, _ := newTest(t, Shared)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	// One read of min(3 permits, 100) = 3 entries; the turn is
	// ceil(3/5) = 1 entry, which drives the permits to -2; the other two
	// entries read wait in the replay queue, uncounted.
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0}) {
		t.Fatalf("sent %v, want [0]", allEntries(got))
	}
	s := d.Snapshot()
	if !slices.Equal(s.Replay, []int64{1, 2}) || s.ReadPosition != 3 || s.Redeliveries != nil {
		t.Fatalf("replay %v, read position %d, counts %v", s.Replay, s.ReadPosition, s.Redeliveries)
	}
	d.Flow(1, 10) // 8 permits: the replay first, both in one turn
	got = d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{1, 2}) || countsOf(got)[1] != 0 {
		t.Fatalf("sent %+v, want entries 1 and 2 with count 0", got)
	}
}

func TestSharedDelayedEntryTakesItsPlaceInATurn(t *testing.T) {
	log := delayedLog(60_000, 0, 0, 0)
	d, _ := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 2 })
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 10)
	d.Flow(2, 10)
	d.SetTime(0)
	got := d.Dispatch(log)
	// The first turn is entries 0 and 1; 0 is held for later.
	if !slices.Equal(entriesOf(got, 1), []int64{1}) || !slices.Equal(entriesOf(got, 2), []int64{2, 3}) {
		t.Fatalf("consumer 1 got %v, consumer 2 got %v", entriesOf(got, 1), entriesOf(got, 2))
	}
	if !slices.Equal(d.Delayed(), []int64{0}) {
		t.Fatalf("delayed %v", d.Delayed())
	}
}

func TestSharedLowerPriorityGetsTheTurnOnlyWhenHigherOnesAreFull(t *testing.T) {
	log := sizedLog(1, 1, 1, 1, 1, 1)
	d, _ := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	mustAdd(t, d, ConsumerSpec{ID: 1, Priority: 0})
	mustAdd(t, d, ConsumerSpec{ID: 2, Priority: 0})
	mustAdd(t, d, ConsumerSpec{ID: 3, Priority: 1})
	d.Flow(1, 2)
	d.Flow(2, 1)
	d.Flow(3, 10)
	got := d.Dispatch(log)
	if !slices.Equal(entriesOf(got, 1), []int64{0, 2}) || !slices.Equal(entriesOf(got, 2), []int64{1}) ||
		!slices.Equal(entriesOf(got, 3), []int64{3, 4, 5}) {
		t.Fatalf("got 1:%v 2:%v 3:%v", entriesOf(got, 1), entriesOf(got, 2), entriesOf(got, 3))
	}
}

func TestSharedFlowBlocksAgainAtTheUnackedLimit(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = 4 })
	log.add(10, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log) // 4 unacked: blocked
	// A redeliver request naming nothing it holds unblocks it anyway, with
	// its 4 messages still unacknowledged...
	d.Redeliver(1, []int64{9})
	if s := d.Snapshot().Consumers[0]; s.Blocked {
		t.Fatalf("still blocked after redeliver: %+v", s)
	}
	// ...and the next FLOW finds it at the limit and blocks it again.
	d.Flow(1, 5)
	if s := d.Snapshot().Consumers[0]; !s.Blocked || s.ParkedPermits != 5 {
		t.Fatalf("after FLOW at the limit: %+v", s)
	}
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("a blocked consumer got %v", allEntries(got))
	}
}

func TestPartialBatchAckDoesNotUnblock(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerConsumer = 4 })
	log.add(1, 4, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log) // entry 0: 4 messages, blocked
	log.add(1, 1, "")
	d.AckBatchIndexes(0, 4, []int64{0b1000})
	if s := d.Snapshot().Consumers[0]; !s.Blocked || s.Unacked != 1 {
		t.Fatalf("after acking 3 of 4 indexes: %+v", s)
	}
	// Completing the batch by index does not unblock it either.
	d.AckBatchIndexes(0, 4, []int64{0})
	if s := d.Snapshot().Consumers[0]; !s.Blocked || s.Unacked != 0 {
		t.Fatalf("after acking the last index: %+v", s)
	}
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("a blocked consumer got %v", allEntries(got))
	}
}

func TestReplayTwiceSendsARedeliveredEntryToTwoConsumersWithOneCount(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	log.add(1, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 10)
	d.Dispatch(log) // entry 0 to consumer 1
	d.Redeliver(1, []int64{0})
	d.ReplayTwice([]int64{0})
	d.Flow(2, 10)
	got := d.Dispatch(log)
	if len(got) != 2 || got[0].Consumer == got[1].Consumer || countsOf(got)[0] != 1 ||
		got[0].RedeliveryCount != got[1].RedeliveryCount {
		t.Fatalf("sent %+v, want entry 0 to both consumers with count 1", got)
	}
	if dup := d.Snapshot().Duplicated; !slices.Equal(dup, []int64{0}) {
		t.Fatalf("duplicated %v", dup)
	}
	// A nack from each holder counts, as in Pulsar: 1 + 2 = 3.
	d.Redeliver(1, []int64{0})
	d.Redeliver(2, []int64{0})
	if c := d.Snapshot().Redeliveries[0]; c != 3 {
		t.Fatalf("count %d after both holders nacked, want 3", c)
	}
	got = d.Dispatch(log)
	if len(got) != 1 || got[0].RedeliveryCount != 3 {
		t.Fatalf("sent %+v, want one copy with count 3", got)
	}
	d.Ack(0)
	s := d.Snapshot()
	if s.Duplicated != nil || len(s.Consumers[0].Pending)+len(s.Consumers[1].Pending) != 0 {
		t.Fatalf("after the ack: %+v", s)
	}
}

func TestAckReleasesEveryCopyOfADuplicatedEntry(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	log.add(1, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 10)
	d.Dispatch(log)
	d.Redeliver(1, []int64{0})
	d.ReplayTwice([]int64{0})
	d.Flow(2, 10)
	d.Dispatch(log)
	d.Ack(0)
	for _, c := range d.Snapshot().Consumers {
		if c.Unacked != 0 || len(c.Pending) != 0 {
			t.Fatalf("consumer %d still holds %+v", c.ID, c)
		}
	}
	// A consumer leaving with its copy sends it back; once acked, it is
	// not sent again.
	d.RemoveConsumer(1)
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("sent %+v after the ack", got)
	}
}

func TestReplayTwiceIsOnlyForShared(t *testing.T) {
	d, log := newTest(t, KeyShared)
	log.add(1, 1, "k")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.Dispatch(log)
	d.Redeliver(1, []int64{0})
	d.ReplayTwice([]int64{0})
	if got := d.Dispatch(log); len(got) != 1 {
		t.Fatalf("Key_Shared sent %+v, want one copy", got)
	}
}
