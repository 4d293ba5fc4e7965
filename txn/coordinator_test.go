package txn

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func TestCommitTwiceFindsNothingTheSecondTime(t *testing.T) {
	c := NewCoordinator(0, 0)
	id, err := c.Begin(1000, 60_000, "")
	if err != nil || id != (ID{0, 0}) {
		t.Fatalf("Begin: %v %v, want (0,0)", id, err)
	}
	if _, err := c.StartEnd(id, true, false); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.FinishEnd(id); !ok || got.Status != Committed {
		t.Fatalf("FinishEnd: %+v %v", got, ok)
	}
	_, err = c.StartEnd(id, true, false)
	if !errors.Is(err, ErrNotFound) || err.Error() != "The transaction with this txdID `(0,0)`not found " {
		t.Fatalf("second commit: %v", err)
	}
}

func TestAbortWhileCommittingIsInvalidStatus(t *testing.T) {
	c := NewCoordinator(3, 0)
	id, _ := c.Begin(0, 60_000, "")
	if _, err := c.StartEnd(id, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartEnd(id, true, false); err != nil {
		t.Fatalf("a repeated commit while committing: %v", err)
	}
	_, err := c.StartEnd(id, false, false)
	want := "Expect Txn `(3,0)` to be in ABORTING status but it is in COMMITTING status"
	if !errors.Is(err, ErrInvalidStatus) || err.Error() != want {
		t.Fatalf("abort while committing: %v", err)
	}
	if err := c.AddProduced(id, []string{"t"}); !errors.Is(err, ErrInvalidStatus) {
		t.Fatalf("AddProduced while committing: %v", err)
	}
}

func TestTimeoutIsDueOnceItsDeadlineHasPassed(t *testing.T) {
	c := NewCoordinator(0, 0)
	a, _ := c.Begin(1000, 500, "")
	b, _ := c.Begin(1000, 50, "") // below the tracker's tick: due at once
	if at, ok := c.NextDue(); !ok || at != 1000 {
		t.Fatalf("NextDue = %d %v, want 1000", at, ok)
	}
	if got := c.Due(1000); len(got) != 1 || got[0] != b {
		t.Fatalf("Due(1000) = %v, want [%v]", got, b)
	}
	if got := c.Due(1500); len(got) != 0 {
		t.Fatalf("Due at the deadline = %v, want nothing (Pulsar aborts once it has passed)", got)
	}
	if got := c.Due(1501); len(got) != 1 || got[0] != a {
		t.Fatalf("Due(1501) = %v, want [%v]", got, a)
	}
}

func TestLowWaterMarkIsBelowTheOldestTransaction(t *testing.T) {
	c := NewCoordinator(0, 0)
	if m := c.LowWaterMark(); m != 0 {
		t.Fatalf("empty: %d", m)
	}
	a, _ := c.Begin(0, 60_000, "")
	b, _ := c.Begin(0, 60_000, "")
	if m := c.LowWaterMark(); m != -1 {
		t.Fatalf("with (0,0) open: %d, want -1", m)
	}
	c.StartEnd(a, false, false)
	c.FinishEnd(a)
	if m := c.LowWaterMark(); m != int64(b.Least)-1 {
		t.Fatalf("after ending (0,0): %d", m)
	}
}

func TestOnlyTheOwnerOrASuperUserUsesATransaction(t *testing.T) {
	c := NewCoordinator(0, 0)
	id, _ := c.Begin(0, 60_000, "alice")
	if err := c.CheckOwner(id, "alice", false); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckOwner(id, "root", true); err != nil {
		t.Fatal(err)
	}
	err := c.CheckOwner(id, "bob", false)
	want := "Client (bob) is neither the owner of the transaction (0,0) nor a super user"
	if !errors.Is(err, ErrNotFound) || err.Error() != want {
		t.Fatalf("bob: %v", err)
	}
}

func TestMaxActiveRefusesNewTransactions(t *testing.T) {
	c := NewCoordinator(0, 1)
	id, _ := c.Begin(0, 60_000, "")
	if _, err := c.Begin(0, 60_000, ""); !errors.Is(err, ErrMaxActive) {
		t.Fatalf("second Begin: %v", err)
	}
	c.StartEnd(id, true, false)
	c.FinishEnd(id)
	if _, err := c.Begin(0, 60_000, ""); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

// coordModel is the model of a coordinator: each transaction's status and
// the time after which its timeout aborts it.
type coordModel struct {
	c    *Coordinator
	txns map[uint64]*modelTxn
	next uint64
	now  int64
}

type modelTxn struct {
	status   Status
	deadline int64 // aborted by its timeout once now > deadline
}

func (m *coordModel) begin(rt *rapid.T) {
	timeout := rapid.Int64Range(0, 2000).Draw(rt, "timeout")
	id, err := m.c.Begin(m.now, timeout, "")
	if err != nil || id.Least != m.next {
		rt.Fatalf("Begin = %v %v, want %d", id, err, m.next)
	}
	d := m.now + timeout
	if timeout < TimeoutTick {
		d = m.now - 1
	}
	m.txns[m.next] = &modelTxn{status: Open, deadline: d}
	m.next++
}

func (m *coordModel) addProduced(rt *rapid.T, id ID) {
	err := m.c.AddProduced(id, []string{"t"})
	switch t := m.txns[id.Least]; {
	case t == nil && !errors.Is(err, ErrNotFound):
		rt.Fatalf("AddProduced(%v) = %v, want not found", id, err)
	case t != nil && t.status != Open && !errors.Is(err, ErrInvalidStatus):
		rt.Fatalf("AddProduced(%v) = %v, want invalid status", id, err)
	case t != nil && t.status == Open && err != nil:
		rt.Fatalf("AddProduced(%v) = %v", id, err)
	}
}

func (m *coordModel) startEnd(rt *rapid.T, id ID, commit bool) {
	_, err := m.c.StartEnd(id, commit, false)
	want := Aborting
	if commit {
		want = Committing
	}
	switch t := m.txns[id.Least]; {
	case t == nil:
		if !errors.Is(err, ErrNotFound) {
			rt.Fatalf("StartEnd(%v) = %v, want not found", id, err)
		}
	case t.status == Open || t.status == want:
		if err != nil {
			rt.Fatalf("StartEnd(%v) = %v", id, err)
		}
		t.status = want
	case !errors.Is(err, ErrInvalidStatus):
		rt.Fatalf("StartEnd(%v) from %v = %v, want invalid status", id, t.status, err)
	}
}

func (m *coordModel) finishEnd(rt *rapid.T, id ID) {
	_, ok := m.c.FinishEnd(id)
	t := m.txns[id.Least]
	if ending := t != nil && (t.status == Committing || t.status == Aborting); ok != ending {
		rt.Fatalf("FinishEnd(%v) = %v, want %v", id, ok, ending)
	}
	if ok {
		delete(m.txns, id.Least)
	}
}

func (m *coordModel) advance(rt *rapid.T) {
	m.now += rapid.Int64Range(0, 1500).Draw(rt, "advance")
	due := map[uint64]bool{}
	for _, id := range m.c.Due(m.now) {
		due[id.Least] = true
	}
	for seq, t := range m.txns {
		if want := t.status == Open && m.now > t.deadline; due[seq] != want {
			rt.Fatalf("at %d txn %d (%v, deadline %d): due %v, want %v", m.now, seq, t.status, t.deadline, due[seq], want)
		}
		if due[seq] {
			m.c.StartEnd(ID{0, seq}, false, true)
			t.status = Aborting
		}
	}
}

func (m *coordModel) checkLowWaterMark(rt *rapid.T) {
	low, first := int64(0), true
	for seq := range m.txns {
		if first || int64(seq)-1 < low {
			low, first = int64(seq)-1, false
		}
	}
	if got := m.c.LowWaterMark(); got != low {
		rt.Fatalf("LowWaterMark = %d, want %d", got, low)
	}
}

// TestCoordinatorMatchesItsModel drives a coordinator through random
// begins, registrations, ends and clock moves, and checks each answer
// against a small model of Pulsar's rules.
func TestCoordinatorMatchesItsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &coordModel{c: NewCoordinator(0, 0), txns: map[uint64]*modelTxn{}}
		pick := func() ID { return ID{0, rapid.Uint64Range(0, m.next+1).Draw(rt, "txn")} }
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				m.begin(rt)
			case 1:
				m.addProduced(rt, pick())
			case 2:
				m.startEnd(rt, pick(), rapid.Bool().Draw(rt, "commit"))
			case 3:
				m.finishEnd(rt, pick())
			case 4:
				m.advance(rt)
			}
			m.checkLowWaterMark(rt)
		}
	})
}
