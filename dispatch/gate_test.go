package dispatch

import (
	"slices"
	"testing"
)

// budgetGate lets each consumer take a fixed number of entries per call, as
// a connection's free space below the high-water mark would.
type budgetGate struct {
	left map[uint64]int
	sent []Delivery
}

func (g *budgetGate) Writable(id uint64) bool { return g.left[id] > 0 }
func (g *budgetGate) Sent(id uint64, e int64) {
	g.left[id]--
	g.sent = append(g.sent, Delivery{Consumer: id, Entry: e})
}

func TestGatedExclusiveConsumerStopsWhenNotWritableAndResumesInOrder(t *testing.T) {
	d, log := newTest(t, Exclusive)
	log.add(10, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 1000)
	g := &budgetGate{left: map[uint64]int{1: 3}}
	if got := allEntries(d.DispatchGated(log, g)); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("first call sent %v, want 0..2", got)
	}
	if got := d.DispatchGated(log, g); len(got) != 0 {
		t.Fatalf("sent %v to a consumer that is not writable", got)
	}
	g.left[1] = 100
	if got := allEntries(d.DispatchGated(log, g)); !slices.Equal(got, []int64{3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("after draining sent %v, want 3..9", got)
	}
	if len(g.sent) != 10 {
		t.Fatalf("the gate was told of %d deliveries, want 10", len(g.sent))
	}
}

func TestGatedSharedGivesASlowConsumersShareToTheOthers(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxRoundRobinBatch = 1 })
	log.add(10, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 1000)
	d.Flow(2, 1000)
	g := &budgetGate{left: map[uint64]int{1: 2, 2: 100}}
	got := d.DispatchGated(log, g)
	if e := entriesOf(got, 1); len(e) != 2 {
		t.Fatalf("slow consumer got %v, want 2 entries", e)
	}
	if e := entriesOf(got, 2); len(e) != 8 {
		t.Fatalf("other consumer got %v, want the other 8", e)
	}
	// The slow consumer kept its permits for when it drains.
	for _, c := range d.Snapshot().Consumers {
		if c.ID == 1 && c.Permits != 998 {
			t.Fatalf("slow consumer permits %d, want 998", c.Permits)
		}
	}
}

func TestGatedKeySharedKeepsASlowConsumersKeysForIt(t *testing.T) {
	d, log := newTest(t, KeyShared)
	mustAdd(t, d, ConsumerSpec{ID: 1, KeySharedMode: Sticky, Ranges: []Range{{0, 32767}}})
	mustAdd(t, d, ConsumerSpec{ID: 2, KeySharedMode: Sticky, Ranges: []Range{{32768, 65535}}})
	d.Flow(1, 1000)
	d.Flow(2, 1000)
	// Find one key for each consumer.
	var k1, k2 string
	for i := 0; k1 == "" || k2 == ""; i++ {
		k := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if StickyKeyHash(Sticky, []byte(k)) <= 32767 {
			k1 = k
		} else {
			k2 = k
		}
	}
	for range 5 {
		log.add(1, 1, k1)
		log.add(1, 1, k2)
	}
	g := &budgetGate{left: map[uint64]int{1: 1, 2: 100}}
	got := d.DispatchGated(log, g)
	if len(entriesOf(got, 1)) != 1 || len(entriesOf(got, 2)) != 5 {
		t.Fatalf("deliveries %v: want 1 to the slow consumer, 5 to the other", got)
	}
	g.left[1] = 100
	rest := d.DispatchGated(log, g)
	if e := entriesOf(rest, 1); !slices.Equal(e, []int64{2, 4, 6, 8}) {
		t.Fatalf("after draining the slow consumer got %v, want its keys in order 2,4,6,8", e)
	}
}
