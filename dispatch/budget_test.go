package dispatch

import (
	"slices"
	"testing"
)

// tokens is a Budget of msgs message tokens and bytes byte tokens, spent as
// reads deliver, as Pulsar's dispatch buckets are; noMsgs and noBytes lift
// a limit.
type tokens struct {
	msgs, bytes     int64
	noMsgs, noBytes bool
}

func (tk *tokens) Allowance() (int, int64) {
	n, b := int(max(tk.msgs, 0)), max(tk.bytes, 0)
	if tk.noMsgs {
		n = -1
	}
	if tk.noBytes {
		b = -1
	}
	return n, b
}

func (tk *tokens) Spend(msgs int, bytes int64) {
	tk.msgs -= int64(msgs)
	tk.bytes -= bytes
}

// sized adds n entries of size bytes, msgs messages each.
func sized(l *testLog, n int, msgs int32, size int) {
	for range n {
		l.entries = append(l.entries, EntryInfo{Messages: msgs, Key: []byte("k"), Size: size})
	}
}

func TestSharedReadsNoMoreThanTheMessageBudget(t *testing.T) {
	d, log := newTest(t, Shared)
	sized(log, 10, 1, 10)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	b := &tokens{msgs: 3, noBytes: true}
	if got := d.DispatchWith(log, nil, b); !slices.Equal(allEntries(got), []int64{0, 1, 2}) || b.msgs != 0 {
		t.Fatalf("sent %v, %d tokens left; want [0 1 2] and none", allEntries(got), b.msgs)
	}
	if got := d.DispatchWith(log, nil, b); len(got) != 0 {
		t.Fatalf("sent %v without tokens", allEntries(got))
	}
	b.msgs = 3 // the next period
	if got := d.DispatchWith(log, nil, b); !slices.Equal(allEntries(got), []int64{3, 4, 5}) {
		t.Fatalf("next period sent %v", allEntries(got))
	}
	// Without a budget, the rest goes at once.
	if got := d.Dispatch(log); len(got) != 4 {
		t.Fatalf("unlimited sent %v", allEntries(got))
	}
}

func TestAReadStopsAtTheEntryThatReachesTheByteBudget(t *testing.T) {
	d, log := newTest(t, Shared)
	sized(log, 10, 1, 100)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	b := &tokens{bytes: 250, noMsgs: true}
	if got := d.DispatchWith(log, nil, b); len(got) != 3 || b.bytes != -50 {
		t.Fatalf("sent %v, %d bytes left; want 3 entries and -50", allEntries(got), b.bytes)
	}
}

func TestBatchesOverspendTheMessageBudget(t *testing.T) {
	// The budget caps the entries read; the messages they carry are
	// charged after, so batches leave the budget owing, as in Pulsar.
	d, log := newTest(t, Exclusive)
	sized(log, 10, 10, 50)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 1000)
	b := &tokens{msgs: 5, noBytes: true}
	if got := d.DispatchWith(log, nil, b); len(got) != 5 || b.msgs != -45 {
		t.Fatalf("sent %d entries, %d tokens left; want 5 and -45", len(got), b.msgs)
	}
}

func TestKeySharedReadsCountAgainstTheBudget(t *testing.T) {
	d, log := newTest(t, KeyShared)
	sized(log, 8, 1, 10)
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	b := &tokens{msgs: 4, noBytes: true}
	if got := d.DispatchWith(log, nil, b); !slices.Equal(allEntries(got), []int64{0, 1, 2, 3}) {
		t.Fatalf("sent %v", allEntries(got))
	}
	if got := d.DispatchWith(log, nil, b); len(got) != 0 {
		t.Fatalf("sent %v without tokens", allEntries(got))
	}
}
