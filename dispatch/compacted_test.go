package dispatch

import (
	"slices"
	"testing"
)

// compactedLog is a testLog with a compacted view: the entries in view, up
// to horizon.
type compactedLog struct {
	testLog
	horizon int64
	view    []int64
}

func (l *compactedLog) CompactedHorizon() int64 { return l.horizon }

func (l *compactedLog) CompactedNext(e int64) int64 {
	for _, v := range l.view {
		if v >= e {
			return v
		}
	}
	return l.horizon + 1
}

func newCompactedLog(n int, horizon int64, view ...int64) *compactedLog {
	l := &compactedLog{horizon: horizon}
	l.add(n, 1, "")
	l.view = view
	return l
}

func TestReadCompactedConsumerGetsTheViewThenTheLogAfterTheHorizon(t *testing.T) {
	for _, typ := range []SubType{Exclusive, Failover} {
		d, _ := newTest(t, typ, func(o *Options) { o.FailoverDelay = -1 })
		log := newCompactedLog(8, 4, 1, 3)
		mustAdd(t, d, ConsumerSpec{ID: 1, ReadCompacted: true})
		d.Flow(1, 10)
		got := d.Dispatch(log)
		if want := []int64{1, 3, 5, 6, 7}; !slices.Equal(allEntries(got), want) {
			t.Fatalf("%s: got %v, want %v", typ, allEntries(got), want)
		}
		for _, dl := range got {
			if dl.Compacted != (dl.Entry <= 4) {
				t.Fatalf("%s: delivery %+v: compacted %v", typ, dl, dl.Compacted)
			}
		}
	}
}

func TestConsumerNotReadingCompactedGetsTheWholeLog(t *testing.T) {
	d, _ := newTest(t, Exclusive)
	log := newCompactedLog(5, 3, 2)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	got := d.Dispatch(log)
	if want := []int64{0, 1, 2, 3, 4}; !slices.Equal(allEntries(got), want) {
		t.Fatalf("got %v, want %v", allEntries(got), want)
	}
}

func TestReadCompactedRewindReadsTheViewAgainAcknowledgedEntriesToo(t *testing.T) {
	d, _ := newTest(t, Exclusive)
	log := newCompactedLog(6, 3, 0, 2, 3)
	mustAdd(t, d, ConsumerSpec{ID: 1, ReadCompacted: true})
	d.Flow(1, 10)
	if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{0, 2, 3, 4, 5}) {
		t.Fatalf("first read %v", got)
	}
	d.Ack(2)
	d.Ack(5)
	d.RedeliverAll(1)
	// Pulsar reads the view from the read position without looking at
	// individual acknowledgements; after the horizon it skips them.
	if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{0, 2, 3, 4}) {
		t.Fatalf("after the rewind %v", got)
	}
}

func TestReadCompactedWithAnEmptyViewStartsAfterTheHorizon(t *testing.T) {
	d, _ := newTest(t, Failover, func(o *Options) { o.FailoverDelay = -1 })
	log := newCompactedLog(4, 2)
	mustAdd(t, d, ConsumerSpec{ID: 1, ReadCompacted: true})
	d.Flow(1, 10)
	if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{3}) {
		t.Fatalf("got %v, want [3]", got)
	}
}
