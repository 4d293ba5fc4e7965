package dispatch

import (
	"errors"
	"slices"
	"testing"
)

func TestExclusiveSecondConsumerIsBusy(t *testing.T) {
	d, _ := newTest(t, Exclusive)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	if err := d.AddConsumer(ConsumerSpec{ID: 2, Name: "b"}); !errors.Is(err, ErrConsumerBusy) {
		t.Fatalf("err = %v, want ErrConsumerBusy", err)
	}
	if id, ok := d.Active(); !ok || id != 1 {
		t.Fatal("active changed")
	}
	d.RemoveConsumer(1)
	mustAdd(t, d, ConsumerSpec{ID: 2})
}

func TestDuplicateConsumerIDIsRefused(t *testing.T) {
	d, _ := newTest(t, Shared)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	if err := d.AddConsumer(ConsumerSpec{ID: 1}); !errors.Is(err, ErrDuplicateConsumer) {
		t.Fatalf("err = %v", err)
	}
}

func TestExclusiveDeliversInOrderWithCountZeroAndEpoch(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1, Epoch: 3})
	d.Flow(1, 3)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0, 1, 2}) {
		t.Fatalf("got %v", allEntries(got))
	}
	for _, dl := range got {
		if dl.RedeliveryCount != 0 || dl.Epoch != 3 || dl.Consumer != 1 {
			t.Fatalf("delivery %+v", dl)
		}
	}
	if more := d.Dispatch(log); more != nil {
		t.Fatalf("sent without permits: %v", allEntries(more))
	}
}

func TestExclusiveBatchEntryDrivesPermitsNegative(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(3, 10, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 1)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0}) || got[0].Messages != 10 {
		t.Fatalf("got %+v", got)
	}
	if p := d.Snapshot().Consumers[0].Permits; p != -9 {
		t.Fatalf("permits = %d, want -9", p)
	}
	d.Flow(1, 9)
	if got := d.Dispatch(log); got != nil {
		t.Fatal("sent with permits at 0")
	}
	d.Flow(1, 1)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{1}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestExclusiveReadSendsMinOfPermitsAndReadBatchEntries(t *testing.T) {
	// Pulsar reads min(permits, dispatcherMaxReadBatchSize) entries and sends
	// them all, however many messages they hold.
	d, log := newTest(t, Exclusive, func(o *Options) { o.MaxReadBatch = 2 })
	log.add(6, 5, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0, 1}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestExclusiveNackRedeliversEverythingUnackedWithCountZero(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log)
	d.Ack(1)
	d.Redeliver(1, []int64{3})
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0, 2, 3, 4}) {
		t.Fatalf("got %v", allEntries(got))
	}
	for _, dl := range got {
		if dl.RedeliveryCount != 0 {
			t.Fatalf("count %d on Exclusive", dl.RedeliveryCount)
		}
	}
	if d.Snapshot().Redeliveries != nil {
		t.Fatal("Exclusive keeps counters")
	}
}

func TestFailoverRedeliverIgnoresIdsAndRewinds(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 0 })
	log.add(4, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(1, 100)
	d.Flow(2, 100)
	d.SetTime(DefaultFailoverDelay)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 1), []int64{0, 1, 2, 3}) {
		t.Fatalf("got %v", got)
	}
	// The standby's request is ignored.
	d.Redeliver(2, []int64{0})
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("standby redeliver resent %v", allEntries(got))
	}
	d.Ack(0)
	d.RedeliverAll(1)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 1), []int64{1, 2, 3}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestFailoverActiveIsByPriorityThenNameOnPartitions(t *testing.T) {
	for _, c := range []struct {
		partition int
		want      uint64
	}{{0, 1}, {1, 2}, {2, 3}, {4, 2}} {
		d, _ := newTest(t, Failover, func(o *Options) { o.PartitionIndex = c.partition })
		// Arrival order differs from name order.
		mustAdd(t, d, ConsumerSpec{ID: 3, Name: "c"})
		mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
		mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
		mustAdd(t, d, ConsumerSpec{ID: 4, Name: "0-low", Priority: 1})
		if id, _ := d.Active(); id != c.want {
			t.Errorf("partition %d: active %d, want %d", c.partition, id, c.want)
		}
	}
	d, _ := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 1 })
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a", Priority: 2})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "z", Priority: 1})
	if id, _ := d.Active(); id != 2 {
		t.Fatalf("active %d: the only highest-priority consumer must win", id)
	}
}

func TestFailoverNonPartitionedPicksByTopicHashRing(t *testing.T) {
	pick := func(order []string) uint64 {
		d, _ := newTest(t, Failover, func(o *Options) { o.Topic = "persistent://public/default/t" })
		for i, n := range order {
			_ = i
			mustAdd(t, d, ConsumerSpec{ID: uint64(n[0]), Name: n})
		}
		id, _ := d.Active()
		return id
	}
	a := pick([]string{"x", "y", "z"})
	b := pick([]string{"z", "x", "y"})
	if a != b {
		t.Fatalf("active depends on arrival order: %d vs %d", a, b)
	}
	// Independent computation of the ring lookup.
	names := []string{"x", "y", "z"}
	target := Murmur31([]byte("persistent://public/default/t"))
	bestH, bestI, firstH, firstI := int32(-1), 0, int32(-1), 0
	owner := map[int32]int{}
	for i, n := range names {
		for j := 0; j < 100; j++ {
			owner[Murmur31([]byte(n+itoa(j)))] = i
		}
	}
	for h, i := range owner {
		if firstH < 0 || h < firstH {
			firstH, firstI = h, i
		}
		if h >= target && (bestH < 0 || h < bestH) {
			bestH, bestI = h, i
		}
	}
	want := firstI
	if bestH >= 0 {
		want = bestI
	}
	if a != uint64(names[want][0]) {
		t.Fatalf("active %c, want %s", rune(a), names[want])
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestFailoverNewActiveGetsEverythingUnacked(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 0 })
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(1, 100)
	d.Flow(2, 100)
	d.SetTime(DefaultFailoverDelay)
	d.Dispatch(log)
	d.Ack(0)
	d.Ack(3)
	d.RemoveConsumer(1)
	if id, _ := d.Active(); id != 2 {
		t.Fatalf("active %d", id)
	}
	d.SetTime(2 * DefaultFailoverDelay)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{1, 2, 4}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestCumulativeAckOnExclusiveMovesCursorPastEarlierEntries(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	d.Dispatch(log)
	d.AckCumulative(1, 2)
	s := d.Snapshot()
	if s.MarkDelete != 2 || d.Cursor().Backlog(log.End()) != 2 {
		t.Fatalf("md=%d", s.MarkDelete)
	}
	var pend []int64
	for _, p := range s.Consumers[0].Pending {
		pend = append(pend, p.Entry)
	}
	if !slices.Equal(pend, []int64{3, 4}) {
		t.Fatalf("in flight %v", pend)
	}
}

func TestCumulativeAckIsIgnoredOnShared(t *testing.T) {
	for _, typ := range []SubType{Shared, KeyShared} {
		d, log := newTest(t, typ)
		log.add(5, 1, "")
		mustAdd(t, d, ConsumerSpec{ID: 1})
		d.Flow(1, 100)
		d.Dispatch(log)
		d.AckCumulative(1, 3)
		if s := d.Snapshot(); s.MarkDelete != -1 || len(s.Consumers[0].Pending) != 5 {
			t.Fatalf("%v: cumulative ack applied: %+v", typ, s)
		}
	}
}

func TestFailoverNewActiveWaitsForTheSwitchDelay(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 0 })
	log.add(3, 1, "")
	d.SetTime(10_000)
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	if at, ok := d.Switching(); !ok || at != 11_000 {
		t.Fatalf("switching %d %v, want until 11000", at, ok)
	}
	if at, ok := d.NextTimer(); !ok || at != 11_000 {
		t.Fatalf("next timer %d %v", at, ok)
	}
	// FLOW keeps its permits but sends nothing; a redeliver request is
	// ignored.
	d.Flow(1, 100)
	d.RedeliverAll(1)
	d.SetTime(10_999)
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("sent %v during the delay", allEntries(got))
	}
	if d.Switches() != 0 {
		t.Fatal("switch counted before the delay")
	}
	d.SetTime(11_000)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 1), []int64{0, 1, 2}) {
		t.Fatalf("after the delay sent %v", allEntries(got))
	}
	if _, ok := d.Switching(); ok || d.Switches() != 1 {
		t.Fatalf("switching still, or %d switches", d.Switches())
	}
}

func TestFailoverSwitchWaitingKeepsItsDeadline(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 1 })
	log.add(2, 1, "")
	d.SetTime(0)
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"}) // active: a
	d.SetTime(600)
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"}) // partition 1 of 2: b
	if id, _ := d.Active(); id != 2 {
		t.Fatalf("active %d, want 2", id)
	}
	if at, _ := d.Switching(); at != DefaultFailoverDelay {
		t.Fatalf("switch until %d, want the first deadline %d", at, DefaultFailoverDelay)
	}
	d.Flow(2, 10)
	d.SetTime(DefaultFailoverDelay)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{0, 1}) {
		t.Fatalf("sent %v", allEntries(got))
	}
}

func TestExclusiveHasNoSwitchDelay(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(1, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	if _, ok := d.Switching(); ok {
		t.Fatal("Exclusive waits")
	}
	if got := d.Dispatch(log); len(got) != 1 {
		t.Fatalf("sent %v", allEntries(got))
	}
}

func TestFailoverResetLeavesStandbysIdleUntilTheNextConsumerJoins(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.PartitionIndex = 0 })
	log.add(2, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(1, 10)
	d.Flow(2, 10)
	d.SetTime(DefaultFailoverDelay)
	d.Dispatch(log)
	// A seek disconnects the active consumer only; nobody takes over.
	d.RemoveForReset(1)
	d.ResetTo(0)
	if _, ok := d.Active(); ok {
		t.Fatal("a standby was made active during the reset")
	}
	d.SetTime(10 * DefaultFailoverDelay)
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("the standby got %v", allEntries(got))
	}
	// The seeking consumer comes back: picked again, after the delay.
	mustAdd(t, d, ConsumerSpec{ID: 3, Name: "a"})
	d.Flow(3, 10)
	if id, _ := d.Active(); id != 3 {
		t.Fatalf("active %d, want 3", id)
	}
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("sent %v before the delay", allEntries(got))
	}
	d.SetTime(11 * DefaultFailoverDelay)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 3), []int64{0, 1}) {
		t.Fatalf("sent %v", allEntries(got))
	}
}
