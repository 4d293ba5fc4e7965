package dispatch

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/cursor"
)

// testLog is an in-memory Log.
type testLog struct{ entries []EntryInfo }

func (l *testLog) End() int64             { return int64(len(l.entries)) }
func (l *testLog) Info(e int64) EntryInfo { return l.entries[e] }

// add appends n entries of msgs messages with key.
func (l *testLog) add(n int, msgs int32, key string) {
	for i := 0; i < n; i++ {
		l.entries = append(l.entries, EntryInfo{Messages: msgs, Key: []byte(key), Size: int(msgs)})
	}
}

func newTest(t *testing.T, typ SubType, mutate ...func(*Options)) (*Dispatcher, *testLog) {
	t.Helper()
	o := DefaultOptions(typ)
	for _, m := range mutate {
		m(&o)
	}
	return New(o, cursor.New(-1)), &testLog{}
}

func mustAdd(t *testing.T, d *Dispatcher, spec ConsumerSpec) {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "c" + string(rune('0'+spec.ID))
	}
	if err := d.AddConsumer(spec); err != nil {
		t.Fatalf("AddConsumer(%d): %v", spec.ID, err)
	}
}

// entriesOf returns the entries delivered to consumer id.
func entriesOf(ds []Delivery, id uint64) []int64 {
	var out []int64
	for _, d := range ds {
		if d.Consumer == id {
			out = append(out, d.Entry)
		}
	}
	return out
}

func allEntries(ds []Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Entry
	}
	return out
}

func countsOf(ds []Delivery) map[int64]int32 {
	out := map[int64]int32{}
	for _, d := range ds {
		out[d.Entry] = d.RedeliveryCount
	}
	return out
}
