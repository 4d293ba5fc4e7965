package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestKeySharedSameKeyGoesToOneConsumer(t *testing.T) {
	d, log := newTest(t, KeyShared)
	for i := 0; i < 200; i++ {
		log.add(1, 1, fmt.Sprintf("key-%d", i%20))
	}
	for id := uint64(1); id <= 3; id++ {
		mustAdd(t, d, ConsumerSpec{ID: id, Name: fmt.Sprintf("consumer-%d", id)})
		d.Flow(id, 1000)
	}
	got := d.Dispatch(log)
	if len(got) != 200 {
		t.Fatalf("sent %d", len(got))
	}
	owner := map[string]uint64{}
	per := map[uint64]int{}
	for _, dl := range got {
		k := string(log.Info(dl.Entry).Key)
		if o, ok := owner[k]; ok && o != dl.Consumer {
			t.Fatalf("key %s went to %d and %d", k, o, dl.Consumer)
		}
		owner[k] = dl.Consumer
		per[dl.Consumer]++
	}
	if len(per) < 2 {
		t.Fatalf("all keys on one consumer: %v", per)
	}
}

func TestKeySharedClosedConsumerKeysMoveOn(t *testing.T) {
	d, log := newTest(t, KeyShared)
	log.add(5, 1, "k")
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(1, 100)
	d.Flow(2, 100)
	got := d.Dispatch(log)
	first := got[0].Consumer
	other := uint64(3) - first
	d.Ack(0)
	d.RemoveConsumer(first)
	got = d.Dispatch(log)
	if !slices.Equal(entriesOf(got, other), []int64{1, 2, 3, 4}) {
		t.Fatalf("got %+v", got)
	}
}

func TestKeySharedNewReadWaitsBehindReplayOfSameHash(t *testing.T) {
	d, log := newTest(t, KeyShared)
	log.add(2, 1, "k")
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	d.Flow(1, 2)
	d.Dispatch(log)
	d.Redeliver(1, []int64{0})
	log.add(1, 1, "k") // entry 2
	// c1 has 1 permit: replay of 0 first; 2 must not overtake it.
	d.Flow(1, 1)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0}) {
		t.Fatalf("got %v", allEntries(got))
	}
	d.Redeliver(1, []int64{0})
	s := d.Snapshot()
	if !slices.Equal(s.Replay, []int64{0}) {
		t.Fatalf("replay %v", s.Replay)
	}
	// Entry 2 is read but parked behind the replay of its hash.
	d.Flow(1, 0)
	d.Flow(1, 1)
	got = d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{0}) {
		t.Fatalf("got %v", allEntries(got))
	}
	d.Flow(1, 5)
	got = d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{2}) {
		t.Fatalf("got %v", allEntries(got))
	}
}

func TestKeySharedOrderPerKeyHoldsWhenOwnerLacksPermits(t *testing.T) {
	d, log := newTest(t, KeyShared)
	// Find two keys owned by different consumers.
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	var ka, kb string
	for i := 0; ka == "" || kb == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		switch d.sel.selectHash(d.sel.hash([]byte(k))).spec.ID {
		case 1:
			ka = k
		case 2:
			kb = k
		}
	}
	log.add(1, 1, ka)
	log.add(1, 1, kb)
	log.add(1, 1, ka)
	d.Flow(2, 10)
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{1}) {
		t.Fatalf("got %v", allEntries(got))
	}
	if s := d.Snapshot(); !slices.Equal(s.Replay, []int64{0, 2}) {
		t.Fatalf("replay %v", s.Replay)
	}
	d.Flow(1, 10)
	got = d.Dispatch(log)
	if !slices.Equal(entriesOf(got, 1), []int64{0, 2}) {
		t.Fatalf("got %v", allEntries(got))
	}
	for _, dl := range got {
		if dl.RedeliveryCount != 0 {
			t.Fatal("entries parked for lack of permits were counted")
		}
	}
}

func TestKeySharedNewConsumerWaitsForDrainingHash(t *testing.T) {
	d, log := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	d.Flow(1, 100)
	// Find a key that moves to "b" when it joins.
	probe := New(DefaultOptions(KeyShared), d.Cursor())
	mustAdd(t, probe, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, probe, ConsumerSpec{ID: 2, Name: "b"})
	var key string
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if probe.sel.selectHash(probe.sel.hash([]byte(k))).spec.ID == 2 {
			key = k
		}
	}
	log.add(1, 1, key)
	d.Dispatch(log) // entry 0 pending at a
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(2, 100)
	log.add(1, 1, key)
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("hash still held by a, but sent %+v", got)
	}
	d.Ack(0)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestKeySharedModeMismatchIsBusy(t *testing.T) {
	d, _ := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	err := d.AddConsumer(ConsumerSpec{ID: 2, Name: "x", KeySharedMode: Sticky, Ranges: []Range{{0, 10}}})
	if !errors.Is(err, ErrKeySharedModeMismatch) || !errors.Is(err, ErrConsumerBusy) {
		t.Fatalf("err = %v", err)
	}
}

func TestKeySharedOutOfOrderMismatchIsBusy(t *testing.T) {
	for _, first := range []bool{false, true} {
		d, _ := newTest(t, KeyShared)
		mustAdd(t, d, ConsumerSpec{ID: 1, AllowOutOfOrder: first})
		err := d.AddConsumer(ConsumerSpec{ID: 2, Name: "x", AllowOutOfOrder: !first})
		if !errors.Is(err, ErrOutOfOrderMismatch) || !errors.Is(err, ErrConsumerBusy) {
			t.Fatalf("first %v: err = %v", first, err)
		}
		// Once every consumer left, the next one sets the policy again.
		d.RemoveConsumer(1)
		mustAdd(t, d, ConsumerSpec{ID: 3, AllowOutOfOrder: !first})
		if d.Snapshot().KeySharedAllowOutOfOrder != !first {
			t.Fatalf("first %v: policy not replaced", first)
		}
	}
}

func TestKeySharedOutOfOrderNewConsumerGetsAMovedHashAtOnce(t *testing.T) {
	d, log := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a", AllowOutOfOrder: true})
	d.Flow(1, 100)
	probe := New(DefaultOptions(KeyShared), d.Cursor())
	mustAdd(t, probe, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, probe, ConsumerSpec{ID: 2, Name: "b"})
	var key string
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if probe.sel.selectHash(probe.sel.hash([]byte(k))).spec.ID == 2 {
			key = k
		}
	}
	log.add(1, 1, key)
	d.Dispatch(log) // entry 0 pending at a
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b", AllowOutOfOrder: true})
	d.Flow(2, 100)
	log.add(1, 1, key)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{1}) {
		t.Fatalf("got %+v, want entry 1 at b while a still holds entry 0", got)
	}
}

func TestKeySharedStickyRejectsOverlapAndBadRanges(t *testing.T) {
	d, _ := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, KeySharedMode: Sticky, Ranges: []Range{{0, 100}, {200, 300}}})
	for i, rs := range [][]Range{
		nil,
		{{50, 150}},
		{{300, 400}},
		{{10, 5}},
		{{-1, 5}},
		{{60000, 65536}},
		{{400, 500}, {450, 600}},
	} {
		err := d.AddConsumer(ConsumerSpec{ID: uint64(10 + i), Name: "x", KeySharedMode: Sticky, Ranges: rs})
		if !errors.Is(err, ErrConsumerAssign) {
			t.Errorf("ranges %v: err = %v", rs, err)
		}
	}
	mustAdd(t, d, ConsumerSpec{ID: 2, KeySharedMode: Sticky, Ranges: []Range{{101, 199}, {301, 65535}}})
	if d.NumConsumers() != 2 {
		t.Fatal("failed adds left consumers behind")
	}
}

func TestKeySharedStickyRoutesByRangeAndParksUncoveredHashes(t *testing.T) {
	d, log := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, KeySharedMode: Sticky, Ranges: []Range{{0, 32767}}})
	d.Flow(1, 1000)
	for i := 0; i < 50; i++ {
		log.add(1, 1, fmt.Sprintf("k%d", i))
	}
	got := d.Dispatch(log)
	for _, dl := range got {
		if h := StickyKeyHash(Sticky, log.Info(dl.Entry).Key); h > 32767 {
			t.Fatalf("entry %d hash %d sent outside the range", dl.Entry, h)
		}
	}
	parked := d.Snapshot().Replay
	if len(parked)+len(got) != 50 || len(parked) == 0 {
		t.Fatalf("sent %d parked %d", len(got), len(parked))
	}
	mustAdd(t, d, ConsumerSpec{ID: 2, KeySharedMode: Sticky, Ranges: []Range{{32768, 65535}}})
	d.Flow(2, 1000)
	got = d.Dispatch(log)
	if !slices.Equal(entriesOf(got, 2), parked) {
		t.Fatalf("parked %v, sent %v", parked, entriesOf(got, 2))
	}
}

func TestKeySharedLookAheadLimitStopsNewReads(t *testing.T) {
	d, log := newTest(t, KeyShared, func(o *Options) { o.LookAheadPerConsumer = 3 })
	mustAdd(t, d, ConsumerSpec{ID: 1, KeySharedMode: Sticky, Ranges: []Range{{0, 0}}})
	d.Flow(1, 10)
	log.add(10, 1, "k") // hash of "k" is not 0: nobody owns it
	d.Dispatch(log)
	if s := d.Snapshot(); len(s.Replay) != 3 || s.ReadPosition != 3 {
		t.Fatalf("replay %v read %d", s.Replay, s.ReadPosition)
	}
}

func TestConsistentHashRingSharesPointsByNameIndex(t *testing.T) {
	r := newHashRing(100)
	a := &consumer{spec: ConsumerSpec{ID: 1, Name: "same"}}
	b := &consumer{spec: ConsumerSpec{ID: 2, Name: "same"}}
	r.add(a)
	r.add(b)
	if r.nameIndex[a] != 0 || r.nameIndex[b] != 1 {
		t.Fatalf("name indexes %d %d", r.nameIndex[a], r.nameIndex[b])
	}
	seen := map[uint64]bool{}
	for h := int32(1); h <= 65535; h += 97 {
		seen[r.selectHash(h).spec.ID] = true
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("same-name consumers not both on the ring: %v", seen)
	}
	r.remove(a)
	c := &consumer{spec: ConsumerSpec{ID: 3, Name: "same"}}
	r.add(c)
	if r.nameIndex[c] != 0 {
		t.Fatal("freed name index not reused")
	}
	r.remove(b)
	r.remove(c)
	if len(r.ring) != 0 || len(r.byHash) != 0 || len(r.namesInUse) != 0 {
		t.Fatal("ring not empty after removing everyone")
	}
}

func TestConsistentHashRingPointCollisionKeepsFirstConsumer(t *testing.T) {
	r := newHashRing(1)
	a := &consumer{spec: ConsumerSpec{ID: 1, Name: "a"}}
	r.add(a)
	// Force a collision: a second consumer whose point equals a's.
	h := r.pointHash("a", 0, 0)
	b := &consumer{spec: ConsumerSpec{ID: 2, Name: "b"}}
	p := r.byHash[h]
	p.colliding = append(p.colliding, b)
	if r.selectHash(h).spec.ID != 1 {
		t.Fatal("first consumer lost the point")
	}
	r.remove(a)
	if r.selectHash(h).spec.ID != 2 {
		t.Fatal("colliding consumer did not take over")
	}
}

func TestKeySharedReplayWaitsForDrainingHash(t *testing.T) {
	d, log := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, Name: "a"})
	d.Flow(1, 1)
	probe := New(DefaultOptions(KeyShared), d.Cursor())
	mustAdd(t, probe, ConsumerSpec{ID: 1, Name: "a"})
	mustAdd(t, probe, ConsumerSpec{ID: 2, Name: "b"})
	var key string
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if probe.sel.selectHash(probe.sel.hash([]byte(k))).spec.ID == 2 {
			key = k
		}
	}
	log.add(2, 1, key)
	d.Dispatch(log) // 0 -> a; a has no permits left
	mustAdd(t, d, ConsumerSpec{ID: 2, Name: "b"})
	d.Flow(2, 10)
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("new read overtook a's pending entry: %+v", got)
	}
	if s := d.Snapshot(); !slices.Equal(s.Replay, []int64{1}) {
		t.Fatalf("replay %v", s.Replay)
	}
	if got := d.Dispatch(log); got != nil {
		t.Fatalf("replayed entry overtook a's pending entry: %+v", got)
	}
	d.Ack(0)
	if got := d.Dispatch(log); !slices.Equal(entriesOf(got, 2), []int64{1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestAutoSplitSelectorHalvesTheLargestRange(t *testing.T) {
	s := &autoSplitSelector{}
	c1, c2, c3 := &consumer{}, &consumer{}, &consumer{}
	for _, c := range []*consumer{c1, c2, c3} {
		if err := s.add(c); err != nil {
			t.Fatal(err)
		}
	}
	// c2 takes the lower half of c1's whole range, [0, 32768]; c3 the lower
	// half of the first of the two equal ranges, c2's: [0, 16384].
	for _, tc := range []struct {
		h    int32
		want *consumer
	}{{0, c3}, {16384, c3}, {16385, c2}, {32768, c2}, {32769, c1}, {65535, c1}} {
		if got := s.selectHash(tc.h); got != tc.want {
			t.Errorf("hash %d went to the wrong consumer", tc.h)
		}
	}
	s.remove(c1) // the last range goes to the consumer of the previous one
	if s.selectHash(65535) != c2 || s.selectHash(16384) != c3 {
		t.Fatal("wrong owners after the last range's consumer left")
	}
	s.remove(c3)
	if s.selectHash(0) != c2 || len(s.ranges) != 1 {
		t.Fatalf("ranges %+v", s.ranges)
	}
}
