package txn

import (
	"errors"
	"testing"
)

// The buffer's answers follow what Pulsar 4.0.8 did in the same sequence
// (entries as the real broker numbered them).
func TestBufferHoldsReadsBehindTheOldestOpenTransaction(t *testing.T) {
	b := NewBuffer()
	a := ID{0, 2}
	if got := b.MaxRead(0); got != 0 {
		t.Fatalf("no transaction: MaxRead = %d", got)
	}
	b.Appended(a, 1) // a's first message at entry 1, a plain one at 2
	if got := b.MaxRead(2); got != 0 {
		t.Fatalf("a open: MaxRead = %d, want 0", got)
	}
	if !b.NeedsMarker(true) || !b.NeedsMarker(false) {
		t.Fatal("a buffer that took a message writes both markers")
	}
	if _, ok := b.End(a, true, 1); ok {
		t.Fatal("nothing left to abort")
	}
	if got := b.MaxRead(3); got != 3 {
		t.Fatalf("after commit (marker at 3): MaxRead = %d, want 3", got)
	}
}

func TestAbortMarksTheTransactionAborted(t *testing.T) {
	b := NewBuffer()
	x := ID{0, 3}
	b.Appended(x, 5)
	b.End(x, false, 2)
	if !b.IsAborted(x) {
		t.Fatal("not aborted")
	}
	b.Appended(x, 8) // a late message of the aborted transaction
	if got := b.Ongoing(); len(got) != 0 {
		t.Fatalf("a late message of an aborted transaction made it ongoing: %v", got)
	}
}

func TestAFreshTopicWritesNoAbortMarker(t *testing.T) {
	b := NewBuffer()
	if b.NeedsMarker(false) {
		t.Fatal("abort marker on a topic that never took a transactional message")
	}
	if !b.NeedsMarker(true) {
		t.Fatal("no commit marker")
	}
}

func TestLowWaterMarkRefusesMessagesOfEndedTransactions(t *testing.T) {
	b := NewBuffer()
	b.Appended(ID{0, 7}, 0)
	b.End(ID{0, 7}, true, 9)
	err := b.CanAppend(ID{0, 9})
	want := "Transaction [(0,9)] has been ended. Please use a new transaction to send message."
	if !errors.Is(err, ErrNotAllowed) || err.Error() != want {
		t.Fatalf("CanAppend below the mark: %v", err)
	}
	if err := b.CanAppend(ID{0, 10}); err != nil {
		t.Fatalf("above the mark: %v", err)
	}
	if err := b.CanAppend(ID{1, 3}); err != nil {
		t.Fatalf("another coordinator: %v", err)
	}
}

func TestLowWaterMarkAbortsAForgottenTransaction(t *testing.T) {
	b := NewBuffer()
	ghost := ID{0, 4} // ended at its coordinator, never here
	b.Appended(ghost, 0)
	b.Appended(ID{0, 6}, 1)
	if _, ok := b.End(ID{0, 6}, true, 3); ok {
		t.Fatal("mark 3 is below the ghost")
	}
	b.Appended(ID{0, 8}, 3)
	next, ok := b.End(ID{0, 8}, true, 5)
	if !ok || next != ghost {
		t.Fatalf("End with mark 5 = %v %v, want the ghost", next, ok)
	}
}
