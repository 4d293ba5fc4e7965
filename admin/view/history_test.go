package view_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

func TestHistoryKeepsEveryEventWithoutALimit(t *testing.T) {
	h := view.NewHistory(0)
	for i := uint64(1); i <= 5000; i++ {
		h.Record(broker.Event{Seq: i})
	}
	evs := h.Events()
	if len(evs) != 5000 || evs[0].Seq != 1 || evs[4999].Seq != 5000 {
		t.Fatalf("held %d events, from %d", len(evs), evs[0].Seq)
	}
	if st := h.Stats(); st != (view.Stats{Held: 5000, Last: 5000}) {
		t.Fatalf("stats %+v", st)
	}
}

func TestHistoryForgetsTheOldestChunksBeyondItsLimit(t *testing.T) {
	h := view.NewHistory(2000) // rounded up to two chunks of 1024
	for i := uint64(1); i <= 5000; i++ {
		h.Record(broker.Event{Seq: i})
		if st := h.Stats(); st.Held > 2048 {
			t.Fatalf("after %d events the history holds %d, more than its limit", i, st.Held)
		}
	}
	evs := h.Events()
	st := h.Stats()
	if st.Held+st.Dropped != 5000 || st.Limit != 2048 || st.Last != 5000 {
		t.Fatalf("stats %+v", st)
	}
	for i, e := range evs {
		if e.Seq != uint64(st.Dropped+i+1) {
			t.Fatalf("event %d has seq %d, want the newest events in order", i, e.Seq)
		}
	}
	if len(evs) < 2000-1024 {
		t.Fatalf("kept only %d events", len(evs))
	}
}

func TestHistorySinceReturnsTheEventsAfterASequenceNumber(t *testing.T) {
	h := view.NewHistory(2048)
	for i := uint64(1); i <= 3000; i++ {
		h.Record(broker.Event{Seq: i})
	}
	for _, seq := range []uint64{0, 900, 1024, 1500, 2999, 3000} {
		evs, dropped := h.Since(seq)
		first := max(seq+1, uint64(dropped)+1)
		if dropped != 1024 || len(evs) != int(3000-first+1) || len(evs) > 0 && evs[0].Seq != first {
			t.Errorf("Since(%d): %d events from %v, dropped %d; want them from %d, 1024 dropped", seq, len(evs), evs[:min(1, len(evs))], dropped, first)
		}
	}
}

func TestAHistoryOfSeveralBrokersReturnsTheirEventsInTheOrderRecorded(t *testing.T) {
	h := view.NewHistory(0)
	var want []broker.Event
	for i := uint64(1); i <= 3000; i++ {
		e := broker.Event{Seq: i/2 + 1, Broker: int(i % 2)} // each broker numbers its own
		h.Record(e)
		want = append(want, e)
	}
	for _, n := range []uint64{0, 1, 1023, 1024, 2999, 3000, 4000} {
		evs, _ := h.Since(n)
		if diff := cmp.Diff(want[min(n, 3000):], evs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Since(%d) (-want +got):\n%s", n, diff)
		}
	}
	if st := h.Stats(); st.Last != 3000 {
		t.Errorf("Last %d, want 3000", st.Last)
	}
}
