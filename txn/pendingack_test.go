package txn

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// fakeCursor is a cursor of whole entries.
type fakeCursor struct {
	md    int64
	acked map[int64]bool
	sets  map[int64][]int64
}

func newFakeCursor() *fakeCursor {
	return &fakeCursor{md: -1, acked: map[int64]bool{}, sets: map[int64][]int64{}}
}

func (c *fakeCursor) MarkDelete() int64      { return c.md }
func (c *fakeCursor) IsAcked(e int64) bool   { return e <= c.md || c.acked[e] }
func (c *fakeCursor) AckSet(e int64) []int64 { return c.sets[e] }

const prefix = "[persistent://public/default/t][s]"

// The messages are those Pulsar 4.0.8 sent for the same acknowledgements.
func TestTwoTransactionsCannotAckTheSameMessage(t *testing.T) {
	p := NewPendingAcks("persistent://public/default/t", "s", 16)
	cur := newFakeCursor()
	a, b := ID{0, 6}, ID{0, 7}
	if err := p.AckIndividual(a, []Ack{{Entry: 0}}, cur); err != nil {
		t.Fatal(err)
	}
	err := p.AckIndividual(b, []Ack{{Entry: 0}}, cur)
	if !errors.Is(err, ErrConflict) || err.Error() != prefix+" Transaction:(0,7) try to ack message:16:0 (ackSet is null) in pending ack status." {
		t.Fatalf("b: %v", err)
	}
	if err := p.AckIndividual(a, []Ack{{Entry: 0}}, cur); !errors.Is(err, ErrConflict) {
		t.Fatalf("a again: %v (Pulsar refuses the same transaction too)", err)
	}
	cur.acked[1] = true
	err = p.AckIndividual(b, []Ack{{Entry: 1}}, cur)
	if err == nil || err.Error() != prefix+" Transaction:(0,7) try to ack message:16:1 (ackSet is null) already acked before." {
		t.Fatalf("acked entry: %v", err)
	}
	if err := p.AckIndividual(b, []Ack{{Entry: 2}, {Entry: 3}}, cur); err != nil {
		t.Fatal(err)
	}
	if out := p.Abort(a); !slices.Equal(entriesOf(out.Redeliver), []int64{0}) || !out.Ended {
		t.Fatalf("abort a: %+v", out)
	}
	if out := p.Commit(b); !slices.Equal(entriesOf(out.Acknowledge), []int64{2, 3}) {
		t.Fatalf("commit b: %+v", out)
	}
	p.Forget(2, -1) // the cursor acknowledged them
	p.Forget(3, -1)
	if !p.Empty() {
		t.Fatalf("left: %+v", p.Transactions())
	}
}

func TestACumulativeAckShadowsIndividualOnesAsInPulsar(t *testing.T) {
	p := NewPendingAcks("persistent://public/default/t", "s", 19)
	cur := newFakeCursor()
	a, b := ID{0, 8}, ID{0, 9}
	if err := p.AckCumulative(a, Position{Entry: 1}, cur); err != nil {
		t.Fatal(err)
	}
	err := p.AckCumulative(b, Position{Entry: 2}, cur)
	if err == nil || err.Error() != prefix+" Transaction:(0,9) try to cumulative batch ack position: 19:2 within range of current currentPosition: 19:1" {
		t.Fatalf("b: %v", err)
	}
	if err := p.AckCumulative(a, Position{Entry: 0}, cur); !errors.Is(err, ErrConflict) {
		t.Fatalf("a backwards: %v", err)
	}
	if err := p.AckIndividual(b, []Ack{{Entry: 3}}, cur); err != nil {
		t.Fatal(err)
	}
	if out := p.Commit(b); len(out.Acknowledge) != 0 || out.Cumulative != nil {
		t.Fatalf("commit of b while a holds a cumulative ack: %+v (Pulsar commits nothing of b)", out)
	}
	if _, held := p.Held(3); !held {
		t.Fatal("b's ack was dropped")
	}
	if out := p.Abort(a); len(out.Redeliver) != 0 || out.Ended {
		t.Fatalf("abort a gives nothing back: %+v", out)
	}
	if out := p.Commit(b); !slices.Equal(entriesOf(out.Acknowledge), []int64{3}) {
		t.Fatalf("commit b again, a's cumulative ack gone: %+v", out)
	}
	cur.md = 1
	err = p.AckCumulative(ID{0, 11}, Position{Entry: 1}, cur)
	if err == nil || err.Error() != prefix+" Transaction:(0,11) try to cumulative ack position: 19:1 within range of cursor's markDeletePosition: 19:1" {
		t.Fatalf("at mark-delete: %v", err)
	}
}

func TestHeldEntriesAreKeptFromConsumers(t *testing.T) {
	p := NewPendingAcks("t", "s", 1)
	cur := newFakeCursor()
	p.AckIndividual(ID{0, 1}, []Ack{{Entry: 4}}, cur)
	if free, held := p.Held(4); !held || free != nil {
		t.Fatalf("Held(4) = %v %v", free, held)
	}
	if _, held := p.Held(5); held {
		t.Fatal("5 is not held")
	}
	p.Commit(ID{0, 1})
	p.Forget(4, -1)
	if _, held := p.Held(4); held {
		t.Fatal("still held after commit and Forget")
	}
}

func TestBatchIndexAcksHoldOnlyTheirIndexes(t *testing.T) {
	p := NewPendingAcks("t", "s", 1)
	cur := newFakeCursor()
	// A batch of 4: the transaction acknowledges index 0 (bit 0 cleared).
	if err := p.AckIndividual(ID{0, 1}, []Ack{{Entry: 2, AckSet: []int64{0b1110}, BatchSize: 4}}, cur); err != nil {
		t.Fatal(err)
	}
	if free, held := p.Held(2); !held || !slices.Equal(free, []int64{0b1110}) {
		t.Fatalf("Held(2) = %b %v", free, held)
	}
	err := p.AckIndividual(ID{0, 2}, []Ack{{Entry: 2, AckSet: []int64{0b1110}, BatchSize: 4}}, cur)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("the same index in another transaction: %v", err)
	}
	if err := p.AckIndividual(ID{0, 2}, []Ack{{Entry: 2, AckSet: []int64{0b1101}, BatchSize: 4}}, cur); err != nil {
		t.Fatalf("another index: %v", err)
	}
	if free, _ := p.Held(2); !slices.Equal(free, []int64{0b1100}) {
		t.Fatalf("both held: free %b", free)
	}
	p.Abort(ID{0, 1})
	if free, _ := p.Held(2); !slices.Equal(free, []int64{0b1101}) {
		t.Fatalf("after aborting the first: free %b", free)
	}
	// Without a batch size (as pulsar-client-go sends), Pulsar never finds
	// an overlap.
	if err := p.AckIndividual(ID{0, 3}, []Ack{{Entry: 2, AckSet: []int64{0b1101}}}, cur); err != nil {
		t.Fatalf("no batch size: %v", err)
	}
}

func entriesOf(ps []Position) []int64 {
	var out []int64
	for _, p := range ps {
		out = append(out, p.Entry)
	}
	return out
}

// TestPendingAcksOfWholeEntriesMatchTheirModel checks individual
// acknowledgements of whole entries against a model: an entry is held by at
// most one transaction, a commit acknowledges what its transaction held, an
// abort gives it back.
func TestPendingAcksOfWholeEntriesMatchTheirModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := NewPendingAcks("t", "s", 1)
		cur := newFakeCursor()
		holder := map[int64]ID{}
		for range rapid.IntRange(1, 80).Draw(rt, "steps") {
			id := ID{0, rapid.Uint64Range(0, 3).Draw(rt, "txn")}
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				e := rapid.Int64Range(0, 9).Draw(rt, "entry")
				err := p.AckIndividual(id, []Ack{{Entry: e}}, cur)
				_, held := holder[e]
				if conflict := held || cur.IsAcked(e); conflict != (err != nil) {
					rt.Fatalf("ack %d in %v: %v, held %v acked %v", e, id, err, held, cur.IsAcked(e))
				}
				if err == nil {
					holder[e] = id
				}
			case 2:
				out := p.Commit(id)
				want := mine(holder, id)
				if !slices.Equal(entriesOf(out.Acknowledge), want) {
					rt.Fatalf("commit %v = %v, want %v", id, entriesOf(out.Acknowledge), want)
				}
				for _, e := range want {
					cur.acked[e] = true
					delete(holder, e)
					p.Forget(e, cur.md)
				}
			case 3:
				out := p.Abort(id)
				want := mine(holder, id)
				if !slices.Equal(entriesOf(out.Redeliver), want) {
					rt.Fatalf("abort %v = %v, want %v", id, entriesOf(out.Redeliver), want)
				}
				for _, e := range want {
					delete(holder, e)
				}
			}
			for e := range int64(10) {
				_, want := holder[e]
				if _, held := p.Held(e); held != want {
					rt.Fatalf("Held(%d) = %v, want %v", e, held, want)
				}
			}
		}
	})
}

func mine(holder map[int64]ID, id ID) []int64 {
	var out []int64
	for e, h := range holder {
		if h == id {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// A clone holds what the original held, and the two go on apart: what the
// original commits the clone still holds, and the other way round.
func TestAClonedPendingAckStoreGoesOnApart(t *testing.T) {
	p := NewPendingAcks("t", "s", 1)
	cur := newFakeCursor()
	p.AckIndividual(ID{0, 1}, []Ack{{Entry: 4}, {Entry: 6, AckSet: []int64{0b10}, BatchSize: 2}}, cur)
	c := p.Clone()
	p.Commit(ID{0, 1})
	p.Forget(4, -1)
	if _, held := p.Held(4); held {
		t.Fatal("the original still holds 4 after its commit")
	}
	if free, held := c.Held(4); !held || free != nil {
		t.Fatalf("the clone's Held(4) = %v %v, want held whole", free, held)
	}
	if free, held := c.Held(6); !held || !slices.Equal(free, []int64{0b10}) {
		t.Fatalf("the clone's Held(6) = %b %v", free, held)
	}
	if out := c.Abort(ID{0, 1}); !out.Ended {
		t.Fatalf("the clone's abort: %+v", out)
	}
}
