package bundles

import (
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestASplitReplacesTheBundleByItsHalvesOwnedByItsOwner(t *testing.T) {
	tb := NewTable()
	for range 2 {
		n := tb.AddNode()
		tb.Update(n, func(nd *Node) { nd.Alive = true })
	}
	tb.Split("t/ns", 2)
	bs := tb.Bundles("t/ns")
	tb.Assign(bs[0], 1)
	got, err := tb.SplitBundle(bs[0], []uint32{Middle(bs[0])})
	if err != nil {
		t.Fatal(err)
	}
	want := []Bundle{{"t/ns", 0, 0x40000000}, {"t/ns", 0x40000000, 0x80000000}}
	if !slices.Equal(got, want) {
		t.Fatalf("halves %v, want %v", got, want)
	}
	if all := tb.Bundles("t/ns"); !slices.Equal(all, append(want, bs[1])) {
		t.Fatalf("the namespace's bundles %v", all)
	}
	for _, h := range want {
		if !tb.Owns(1, h) {
			t.Errorf("%s is not owned by the split bundle's owner", h)
		}
	}
	if tb.Owns(1, bs[0]) {
		t.Error("the split bundle is still owned")
	}
	if _, owned := tb.Current(bs[1], time.Time{}); owned {
		t.Error("the other bundle got an owner")
	}
}

func TestASplitAtSeveralPositionsMakesABundleBetweenEach(t *testing.T) {
	tb := NewTable()
	tb.Split("t/ns", 1)
	full := tb.Bundles("t/ns")[0]
	got, err := tb.SplitBundle(full, []uint32{0x60000000, 0x20000000, 0x60000000})
	if err != nil {
		t.Fatal(err)
	}
	want := []Bundle{{"t/ns", 0, 0x20000000}, {"t/ns", 0x20000000, 0x60000000}, {"t/ns", 0x60000000, 0xffffffff}}
	if !slices.Equal(got, want) || !slices.Equal(tb.Bundles("t/ns"), want) {
		t.Fatalf("split at three positions (one repeated): %v, bundles %v", got, tb.Bundles("t/ns"))
	}
	if got := tb.Of("t/ns", "persistent://t/ns/x"); !slices.Contains(want, got) {
		t.Errorf("a topic's bundle %s is not one of the new ones", got)
	}
}

func TestASplitRefusesWhatPulsarRefusesInItsWords(t *testing.T) {
	tb := NewTable()
	tb.Split("t/ns", 2)
	bs := tb.Bundles("t/ns")
	for _, c := range []struct {
		bd   Bundle
		at   []uint32
		want string
	}{
		{Bundle{"t/ns", 1, 0x80000000}, []uint32{5}, "Cannot find bundle t/ns/0x00000001_0x80000000 in the bundles list"},
		{Bundle{"t/ns", 0, 0x40000000}, []uint32{5}, "Invalid upper boundary for bundle t/ns/0x00000000_0x40000000. " +
			"Expected upper boundary of t/ns/0x00000000_0x80000000"},
		{bs[0], []uint32{0}, "The given fixed keys must between the key range of the t/ns/0x00000000_0x80000000 bundle"},
		{bs[0], []uint32{0x80000000}, "The given fixed keys must between the key range of the t/ns/0x00000000_0x80000000 bundle"},
		{bs[0], nil, "The given fixed keys must between the key range of the t/ns/0x00000000_0x80000000 bundle"},
	} {
		_, err := tb.SplitBundle(c.bd, c.at)
		if !errors.Is(err, ErrInvalidSplit) || err.Error() != c.want {
			t.Errorf("split %s at %x: %v, want %q", c.bd, c.at, err, c.want)
		}
	}
	// A bundle of range 1 cannot be split, whatever the position.
	narrow, err := tb.SplitBundle(bs[0], []uint32{1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tb.SplitBundle(narrow[0], []uint32{Middle(narrow[0])})
	if !errors.Is(err, ErrInvalidSplit) || err.Error() != "t/ns/0x00000000_0x00000001 bundle can't be split further since range not larger than 1" {
		t.Errorf("split of a range of 1: %v", err)
	}
	if !slices.Equal(tb.Bundles("t/ns"), []Bundle{narrow[0], narrow[1], bs[1]}) {
		t.Errorf("a refused split changed the bundles: %v", tb.Bundles("t/ns"))
	}
}

func TestEverySplitKeepsTheBundlesCoveringTheWholeRangeWithEveryTopicInOne(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb := NewTable()
		tb.Split("t/ns", rapid.IntRange(1, 8).Draw(rt, "bundles"))
		names := rapid.SliceOfN(rapid.StringMatching(`[a-z0-9]{1,12}`), 1, 20).Draw(rt, "topics")
		for range rapid.IntRange(1, 10).Draw(rt, "splits") {
			bs := tb.Bundles("t/ns")
			bd := bs[rapid.IntRange(0, len(bs)-1).Draw(rt, "which")]
			var hashes []uint32
			for _, n := range names {
				if b := tb.Of("t/ns", "persistent://t/ns/"+n); b == bd {
					hashes = append(hashes, Hash("persistent://t/ns/"+n))
				}
			}
			at := []uint32{Middle(bd)}
			if mid, ok := TopicCountMiddle(hashes); ok && rapid.Bool().Draw(rt, "by topic count") {
				at = []uint32{mid}
			}
			before := map[string]Bundle{}
			for _, n := range names {
				before[n] = tb.Of("t/ns", "persistent://t/ns/"+n)
			}
			if _, err := tb.SplitBundle(bd, at); err != nil {
				continue // refused: nothing changed, checked below all the same
			}
			for _, n := range names {
				if b := tb.Of("t/ns", "persistent://t/ns/"+n); b != before[n] && before[n] != bd {
					rt.Fatalf("%s moved from %s to %s, though %s was split", n, before[n], b, bd)
				}
			}
		}
		bs := tb.Bundles("t/ns")
		if bs[0].Lower != 0 || bs[len(bs)-1].Upper != 0xffffffff {
			rt.Fatalf("the bundles %v do not cover the hash range", bs)
		}
		for k := 1; k < len(bs); k++ {
			if bs[k].Lower != bs[k-1].Upper || bs[k].Lower >= bs[k].Upper {
				rt.Fatalf("bundles %v are not contiguous", bs)
			}
		}
		for _, n := range names {
			full := "persistent://t/ns/" + n
			bd, h := tb.Of("t/ns", full), Hash(full)
			if h < bd.Lower || h > bd.Upper || h == bd.Upper && bd.Upper != 0xffffffff {
				rt.Fatalf("%s (hash %x) is placed in %s", full, h, bd)
			}
		}
	})
}

func TestTheSplitAlgorithmsPickPulsarsPositions(t *testing.T) {
	if got := Middle(Bundle{Lower: 0, Upper: 0xffffffff}); got != 0x7fffffff {
		t.Errorf("middle of the whole range %x, want 0x7fffffff", got)
	}
	if got := Middle(Bundle{Lower: 0x40000000, Upper: 0x80000000}); got != 0x60000000 {
		t.Errorf("middle %x", got)
	}
	// Seen on a real 4.0.8 cluster: two topics hashing to 0x7c243546 and
	// 0x7b49f15f split 0x40000000_0x80000000 at 0x7bb71352.
	if got, ok := TopicCountMiddle([]uint32{0x7c243546, 0x7b49f15f}); !ok || got != 0x7bb71352 {
		t.Errorf("topic count middle of two %x %v", got, ok)
	}
	if got, ok := TopicCountMiddle([]uint32{9, 1, 5}); !ok || got != 3 {
		t.Errorf("of three, between the first and the second: %d %v", got, ok)
	}
	if _, ok := TopicCountMiddle([]uint32{7}); ok {
		t.Error("one topic gave a position")
	}
	bd := Bundle{Lower: 0x40000000, Upper: 0x7bb71352}
	if got := Positions(bd, []int64{0x60000000, 5, 0x50000000, 99999999999, 0x40000000}); !slices.Equal(got, []uint32{0x50000000, 0x60000000}) {
		t.Errorf("positions inside %x", got)
	}
}

func TestForgettingANamespaceDropsItsSplitsAndOwners(t *testing.T) {
	tb := NewTable()
	n := tb.AddNode()
	tb.Update(n, func(nd *Node) { nd.Alive = true })
	bs := tb.Bundles("t/ns")
	tb.Assign(bs[0], n)
	if _, err := tb.SplitBundle(bs[0], []uint32{Middle(bs[0])}); err != nil {
		t.Fatal(err)
	}
	tb.Forget("t/ns")
	if got := tb.Bundles("t/ns"); !slices.Equal(got, bs) || len(tb.OwnedBy(n)) != 0 {
		t.Errorf("after Forget: bundles %v, owned %v", got, tb.OwnedBy(n))
	}
	tb.SetBoundaries("t/ns", []uint32{0, 0x10000000, 0xffffffff})
	if got := tb.Bundles("t/ns"); len(got) != 2 || got[0].Upper != 0x10000000 {
		t.Errorf("set boundaries: %v", got)
	}
}

func TestAllBoundariesGiveBackEveryNamespacesBundles(t *testing.T) {
	tb := NewTable()
	tb.Split("a/x", 4)
	if _, err := tb.SplitBundle(tb.Bundles("a/x")[0], []uint32{0x20000000}); err != nil {
		t.Fatal(err)
	}
	all := tb.AllBoundaries()
	again := NewTable()
	for ns, bs := range all {
		again.SetBoundaries(ns, bs)
	}
	if got, want := len(again.Bundles("a/x")), 5; got != want {
		t.Fatalf("%d bundles given back, want %d", got, want)
	}
	all["a/x"][1] = 7 // a copy
	if tb.Bundles("a/x")[0].Upper == 7 {
		t.Fatal("AllBoundaries returned the table's own slice")
	}
}
