package store_test

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/store"
)

// A log closes a block every maxEntries entries, and freeing moves its base
// past the freed entries while its counters keep what was freed.
func TestLogClosesBlocksAndFreesWhatIsAcknowledged(t *testing.T) {
	var l store.Log
	now := int64(100)
	clock := func() int64 { now++; return now }
	for i := range 5 {
		if id := l.Append(&store.Entry{Data: make([]byte, 10), Messages: 2}, 2, 1<<20, clock); id != int64(i) {
			t.Fatalf("entry %d got id %d", i, id)
		}
	}
	if end, at, ok := l.BlockOf(1); !ok || end != 2 || at != 101 {
		t.Fatalf("block of entry 1: end %d closed at %d ok %v, want 2, 101, true", end, at, ok)
	}
	if _, _, ok := l.BlockOf(4); ok {
		t.Fatal("entry 4 is in the open block")
	}
	l.FreeThrough(1)
	if l.Base != 2 || l.End() != 5 || l.Get(1) != nil || l.Get(2) == nil {
		t.Fatalf("after freeing through 1: base %d end %d", l.Base, l.End())
	}
	if l.FreedMessages != 4 || l.FreedBytes != 20 || l.TotalBytes != 50 {
		t.Fatalf("counters: freed %d messages %d bytes, total %d bytes", l.FreedMessages, l.FreedBytes, l.TotalBytes)
	}
}
