package txn

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// restoreThroughJSON is what a data directory does to pending acks: their
// state encoded, then restored from the bytes.
func restoreThroughJSON(t *rapid.T, p *PendingAcks) *PendingAcks {
	b, err := json.Marshal(p.State())
	if err != nil {
		t.Fatal(err)
	}
	var s PendingState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return RestorePendingAcks("persistent://public/default/t", "s", 16, s)
}

// Pending acks restored from their state behave as the ones they were taken
// from, whatever came before and whatever comes after: the same conflicts,
// the same outcomes of commits and aborts, the same state.
func TestRestoredPendingAcksBehaveAsTheOriginal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := NewPendingAcks("persistent://public/default/t", "s", 16)
		cur := newFakeCursor()
		var q *PendingAcks
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		restoreAt := rapid.IntRange(0, steps-1).Draw(t, "restoreAt")
		for i := range steps {
			if i == restoreAt {
				q = restoreThroughJSON(t, p)
			}
			id := ID{Most: 0, Least: uint64(rapid.IntRange(0, 3).Draw(t, "txn"))}
			e := int64(rapid.IntRange(0, 5).Draw(t, "entry"))
			var set []int64
			if rapid.Bool().Draw(t, "batch") {
				set = []int64{int64(rapid.IntRange(1, 255).Draw(t, "set"))}
			}
			op := rapid.IntRange(0, 4).Draw(t, "op")
			var got []string
			for _, x := range []*PendingAcks{p, q} {
				if x == nil {
					continue
				}
				var r string
				switch op {
				case 0:
					r = fmt.Sprint(x.AckIndividual(id, []Ack{{Entry: e, AckSet: set, BatchSize: 8}}, cur))
				case 1:
					r = fmt.Sprint(x.AckCumulative(id, Position{Entry: e, AckSet: set}, cur))
				case 2:
					r = outcomeString(x.Commit(id))
				case 3:
					r = outcomeString(x.Abort(id))
				case 4:
					m, ok := x.LowWaterMark(id, int64(e)-3)
					r = fmt.Sprint(m, ok)
				}
				got = append(got, r)
			}
			if len(got) == 2 && got[0] != got[1] {
				t.Fatalf("step %d: the original gave %s, the restored %s", i, got[0], got[1])
			}
			if q != nil && !reflect.DeepEqual(p.State(), q.State()) {
				t.Fatalf("step %d: states differ:\n%+v\n%+v", i, p.State(), q.State())
			}
		}
	})
}

// A restored coordinator goes on numbering after its last transaction,
// keeps the open ones with their timeouts from when they were opened, and
// those being ended as they were.
func TestARestoredCoordinatorKeepsItsTransactionsAndTimeouts(t *testing.T) {
	c := NewCoordinator(3, 0)
	a, _ := c.Begin(1000, 5000, "alice")
	b, _ := c.Begin(1000, 60000, "")
	d, _ := c.Begin(2000, 60000, "")
	if err := c.AddProduced(a, []string{"persistent://public/default/t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartEnd(b, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartEnd(d, false, false); err != nil {
		t.Fatal(err)
	}
	c.FinishEnd(d)
	r := RestoreCoordinator(3, 0, c.Last(), c.Active())
	if !reflect.DeepEqual(r.Active(), c.Active()) {
		t.Fatalf("restored %+v, want %+v", r.Active(), c.Active())
	}
	if err := r.CheckOwner(a, "bob", false); err == nil {
		t.Fatal("the owner was not kept")
	}
	if at, ok := r.NextDue(); !ok || at != 6001 {
		t.Fatalf("next due %d %v, want 6001 (opened at 1000 with 5000 ms)", at, ok)
	}
	if due := r.Due(6001); len(due) != 1 || due[0] != a {
		t.Fatalf("due at 6001: %v, want only %v (the committing one has no timeout)", due, a)
	}
	if id, _ := r.Begin(7000, 1000, ""); id != (ID{Most: 3, Least: 3}) {
		t.Fatalf("the next transaction %v, want (3,3)", id)
	}
	if _, ok := r.FinishEnd(b); !ok {
		t.Fatal("the committing transaction could not finish")
	}
}

func outcomeString(o Outcome) string {
	b, _ := json.Marshal(o)
	return string(b)
}
