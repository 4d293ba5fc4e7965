package dispatch

import (
	"slices"
	"testing"
)

// delayedLog returns a log whose entry i is due at deliverAt[i] (0: not
// delayed), all with key "k".
func delayedLog(deliverAt ...int64) *testLog {
	l := &testLog{}
	for _, at := range deliverAt {
		l.entries = append(l.entries, EntryInfo{Messages: 1, Key: []byte("k"), DeliverAt: at})
	}
	return l
}

func TestDelayedEntriesAreReleasedOneTickEarly(t *testing.T) {
	for _, typ := range []SubType{Shared, KeyShared} {
		t.Run(typ.String(), func(t *testing.T) {
			d, _ := newTest(t, typ)
			log := delayedLog(0, 10_000, 0, 5_500, 1_900)
			mustAdd(t, d, ConsumerSpec{ID: 1})
			d.Flow(1, 100)
			d.SetTime(1_000)
			// 1.9 s is within a tick of 1 s: sent at once.
			if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{0, 2, 4}) {
				t.Fatalf("first dispatch sent %v, want [0 2 4]", got)
			}
			if got := d.Delayed(); !slices.Equal(got, []int64{1, 3}) {
				t.Fatalf("delayed %v", got)
			}
			// The tracker's timer is set for the earliest time held.
			if at, ok := d.NextTimer(); !ok || at != 5_500 {
				t.Fatalf("next timer %d %v, want 5500", at, ok)
			}
			d.SetTime(4_499)
			if got := d.Dispatch(log); len(got) != 0 {
				t.Fatalf("sent %v more than a tick early", got)
			}
			// Any look at the time from deliverAt - tick on releases it.
			d.SetTime(4_500)
			got := d.Dispatch(log)
			if !slices.Equal(allEntries(got), []int64{3}) || got[0].RedeliveryCount != 0 {
				t.Fatalf("at 4.5 s sent %+v, want entry 3 with count 0", got)
			}
			if at, ok := d.NextTimer(); !ok || at != 10_000 {
				t.Fatalf("next timer %d %v, want 10000", at, ok)
			}
			d.SetTime(20_000)
			if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{1}) {
				t.Fatalf("at 20 s sent %v, want [1]", got)
			}
			if _, ok := d.NextTimer(); ok {
				t.Fatal("a timer with nothing held")
			}
		})
	}
}

func TestExclusiveIgnoresDeliverAt(t *testing.T) {
	d, _ := newTest(t, Exclusive)
	log := delayedLog(10_000, 0)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.SetTime(0)
	if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("sent %v", got)
	}
}

func TestDelayedIndexIsClearedWhenTheLastConsumerLeaves(t *testing.T) {
	d, _ := newTest(t, Shared)
	log := delayedLog(10_000)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.SetTime(0)
	d.Dispatch(log)
	d.RemoveConsumer(1)
	if n := len(d.Delayed()); n != 0 {
		t.Fatalf("%d entries still delayed", n)
	}
	// The next consumer re-reads the entry and holds it again.
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(2, 10)
	if got := d.Dispatch(log); len(got) != 0 {
		t.Fatalf("sent %v", got)
	}
	if got := d.Delayed(); !slices.Equal(got, []int64{0}) {
		t.Fatalf("delayed %v", got)
	}
}

func TestDelayedEntriesDueWithinATickOfTheFirstGoTogether(t *testing.T) {
	d, _ := newTest(t, Shared)
	log := delayedLog(5_000, 5_900, 6_200)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	d.SetTime(0)
	d.Dispatch(log)
	d.SetTime(5_000)
	if got := allEntries(d.Dispatch(log)); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("at 5 s sent %v, want [0 1]", got)
	}
}
