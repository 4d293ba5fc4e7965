package bundles

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestBoundariesSplitTheHashRangeEvenlyWithTheLastClosed(t *testing.T) {
	if got, want := Boundaries(4), []uint32{0, 0x40000000, 0x80000000, 0xc0000000, 0xffffffff}; !slices.Equal(got, want) {
		t.Errorf("4 bundles: %x, want %x", got, want)
	}
	if got := Boundaries(16); len(got) != 17 || got[1] != 0x10000000 || got[16] != 0xffffffff {
		t.Errorf("16 bundles: %x", got)
	}
	if got := (Bundle{Namespace: "public/default", Lower: 0x40000000, Upper: 0x80000000}).String(); got != "public/default/0x40000000_0x80000000" {
		t.Errorf("bundle name %q", got)
	}
}

func TestEveryTopicFallsInTheOneBundleHoldingItsHash(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb := NewTable()
		n := rapid.IntRange(1, 64).Draw(rt, "bundles")
		tb.Split("t/ns", n)
		name := "persistent://t/ns/" + rapid.StringMatching(`[a-z0-9-]{1,30}`).Draw(rt, "topic")
		bd := tb.Of("t/ns", name)
		h := Hash(name)
		last := bd.Upper == 0xffffffff
		if h < bd.Lower || h > bd.Upper || (h == bd.Upper && !last) {
			rt.Fatalf("hash %x of %s is not in %s", h, name, bd)
		}
		if !slices.Contains(tb.Bundles("t/ns"), bd) {
			rt.Fatalf("%s is not one of the namespace's bundles", bd)
		}
	})
}

func TestACrashedOwnerKeepsItsBundlesUntilTheOwnershipTimeout(t *testing.T) {
	tb := NewTable()
	a, b := tb.AddNode(), tb.AddNode()
	for _, n := range []int{a, b} {
		tb.Update(n, func(nd *Node) { nd.Alive = true })
	}
	bd := tb.Of("public/default", "persistent://public/default/x")
	tb.Assign(bd, b)
	start := time.Unix(1_700_000_000, 0)
	tb.Update(b, func(nd *Node) { nd.Alive, nd.GoneAt = false, start })
	if n, ok := tb.Current(bd, start.Add(DefaultOwnershipTimeout-time.Millisecond)); !ok || n != b {
		t.Fatalf("before the timeout the owner is %d (%v), want the crashed %d", n, ok, b)
	}
	if tb.Owns(b, bd) {
		t.Error("a crashed broker serves its bundle")
	}
	if n, ok := tb.Current(bd, start.Add(DefaultOwnershipTimeout)); ok {
		t.Fatalf("after the timeout the owner is still %d", n)
	}
	if got := tb.Choose(bd); got != a {
		t.Errorf("the bundle goes to %d, want the live %d", got, a)
	}
}

func TestAFreeBundleGoesToTheNamedBrokerElseTheLeastLoaded(t *testing.T) {
	tb := NewTable()
	for range 3 {
		n := tb.AddNode()
		tb.Update(n, func(nd *Node) { nd.Alive = true })
	}
	bs := tb.Bundles("t/ns")
	tb.Assign(bs[0], 0)
	tb.Assign(bs[1], 1)
	if got := tb.Choose(bs[2]); got != 2 {
		t.Errorf("least loaded: %d, want 2", got)
	}
	tb.Prefer(bs[2], 0)
	if got := tb.Choose(bs[2]); got != 0 {
		t.Errorf("with a named broker: %d, want 0", got)
	}
	tb.Assign(bs[2], 0) // uses the name up
	tb.Free(bs[2])
	if got := tb.Choose(bs[2]); got != 2 {
		t.Errorf("after the named broker took it once: %d, want the least loaded 2", got)
	}
	if got := tb.Leader(); got != 0 {
		t.Errorf("leader %d, want 0", got)
	}
	tb.Update(0, func(nd *Node) { nd.Alive = false })
	if got := tb.Leader(); got != 1 {
		t.Errorf("leader after broker 0 went %d, want 1", got)
	}
	if got := tb.OwnedBy(1); len(got) != 1 || got[0] != bs[1] {
		t.Errorf("broker 1 owns %v", got)
	}
}

func TestABrokersIDIsItsWebServicesHostAndPort(t *testing.T) {
	if got := (Node{URL: "pulsar://h:6650", WebURL: "http://h:8080"}).ID(); got != "h:8080" {
		t.Errorf("id %q", got)
	}
	if got := (Node{URL: "pulsar://h:6650"}).ID(); got != "h:6650" {
		t.Errorf("id without a web service %q", got)
	}
}
