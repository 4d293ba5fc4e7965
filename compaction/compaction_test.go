package compaction

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genEntries draws a log: entries at increasing positions (with gaps),
// single messages and batches, keys from a small set so that they repeat,
// tombstones, keyless messages and markers.
func genEntries(t *rapid.T, from int64, label string) []Entry {
	n := rapid.IntRange(0, 30).Draw(t, label+"-n")
	pos := from
	var out []Entry
	for i := 0; i < n; i++ {
		pos += int64(rapid.IntRange(1, 3).Draw(t, label+"-gap"))
		e := Entry{Pos: pos}
		switch rapid.IntRange(0, 9).Draw(t, label+"-kind") {
		case 0:
			e.Marker = true
		case 1, 2, 3:
			e.Batched = true
			for j := rapid.IntRange(1, 5).Draw(t, label+"-batch"); j > 0; j-- {
				e.Messages = append(e.Messages, genMessage(t, label))
			}
		default:
			e.Messages = []Message{genMessage(t, label)}
		}
		out = append(out, e)
	}
	return out
}

func genMessage(t *rapid.T, label string) Message {
	m := Message{Size: rapid.IntRange(0, 2).Draw(t, label+"-size")}
	if rapid.IntRange(0, 4).Draw(t, label+"-keyless") > 0 {
		m.HasKey, m.Key = true, fmt.Sprint("k", rapid.IntRange(0, 4).Draw(t, label+"-key"))
	}
	return m
}

// survivors is the reference: the declarative definition of the view, as a
// set of messages. Walking every message in log order, a key's value is its
// latest message; the view holds, for every key whose latest message is not
// empty, that message, plus the keyless messages when they are retained.
func survivors(entries []Entry, opts Options) []msgRef {
	last := map[string]msgRef{}
	empty := map[string]bool{}
	var keyless []msgRef
	for _, e := range entries {
		if e.Marker {
			continue
		}
		for i, m := range e.Messages {
			ref := msgRef{e.Pos, i}
			if !e.Batched {
				ref.idx = -1
			}
			switch {
			case m.Out:
			case !m.HasKey:
				keyless = append(keyless, ref)
			default:
				last[m.Key], empty[m.Key] = ref, m.Size == 0
			}
		}
	}
	var out []msgRef
	for k, ref := range last {
		if !empty[k] {
			out = append(out, ref)
		}
	}
	if opts.RetainNullKey {
		out = append(out, keyless...)
	}
	sortRefs(out)
	return out
}

func sortRefs(refs []msgRef) {
	slices.SortFunc(refs, func(a, b msgRef) int {
		if a.pos != b.pos {
			return int(a.pos - b.pos)
		}
		return a.idx - b.idx
	})
}

// flatten lists the messages a view keeps.
func flatten(view []Kept) []msgRef {
	var out []msgRef
	for _, k := range view {
		if k.Keep == nil {
			out = append(out, msgRef{k.Pos, -1})
			continue
		}
		for i, ok := range k.Keep {
			if ok {
				out = append(out, msgRef{k.Pos, i})
			}
		}
	}
	return out
}

// reread turns a view back into the entries a later compaction reads: the
// kept entries, their dropped batch slots marked compacted out.
func reread(entries []Entry, view []Kept) []Entry {
	byPos := map[int64]Entry{}
	for _, e := range entries {
		byPos[e.Pos] = e
	}
	var out []Entry
	for _, k := range view {
		e := byPos[k.Pos]
		e.Messages = slices.Clone(e.Messages)
		for i := range e.Messages {
			if k.Keep != nil && !k.Keep[i] {
				e.Messages[i] = Message{Out: true}
			}
		}
		out = append(out, e)
	}
	return out
}

func TestCompactKeepsTheLatestNonEmptyMessagePerKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := Options{RetainNullKey: rapid.Bool().Draw(t, "retain")}
		entries := genEntries(t, -1, "log")
		view := Compact(entries, opts)
		got, want := flatten(view), survivors(entries, opts)
		if !slices.Equal(got, want) {
			t.Fatalf("view keeps %v, want %v", got, want)
		}
		for i, k := range view {
			if i > 0 && view[i-1].Pos >= k.Pos {
				t.Fatalf("view out of order at %d: %v", i, view)
			}
			if k.Keep != nil && !slices.Contains(k.Keep, true) {
				t.Fatalf("view keeps entry %d with no message", k.Pos)
			}
		}
	})
}

func TestCompactingAViewWithNewEntriesEqualsCompactingEverything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := Options{RetainNullKey: rapid.Bool().Draw(t, "retain")}
		first := genEntries(t, -1, "first")
		horizon := int64(-1)
		if len(first) > 0 {
			horizon = first[len(first)-1].Pos
		}
		more := genEntries(t, horizon, "more")
		again := Compact(append(reread(first, Compact(first, opts)), more...), opts)
		whole := Compact(append(slices.Clone(first), more...), opts)
		if got, want := flatten(again), flatten(whole); !slices.Equal(got, want) {
			t.Fatalf("incremental view keeps %v, a full compaction %v", got, want)
		}
	})
}

func TestNextFindsTheFirstViewEntryAtOrAfterAPosition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		entries := genEntries(t, -1, "log")
		view := Compact(entries, Options{})
		pos := rapid.Int64Range(-2, 100).Draw(t, "pos")
		want := int64(-1)
		for _, k := range view {
			if k.Pos >= pos {
				want = k.Pos
				break
			}
		}
		if got := Next(view, pos); got != want {
			t.Fatalf("Next(%d) = %d, want %d in %v", pos, got, want, view)
		}
	})
}

func TestATombstoneInABatchRemovesTheKeyAndTheBatchSlot(t *testing.T) {
	entries := []Entry{
		{Pos: 0, Messages: []Message{{Key: "a", HasKey: true, Size: 1}}},
		{Pos: 1, Batched: true, Messages: []Message{
			{Key: "b", HasKey: true, Size: 2}, {Key: "a", HasKey: true, Size: 0}, {Size: 3}}},
		{Pos: 2, Messages: []Message{{Size: 1}}},
	}
	view := Compact(entries, Options{})
	want := []Kept{{Pos: 1, Keep: []bool{true, false, false}}}
	if len(view) != 1 || view[0].Pos != 1 || !slices.Equal(view[0].Keep, want[0].Keep) {
		t.Fatalf("view %+v, want %+v", view, want)
	}
}
