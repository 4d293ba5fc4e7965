package dispatch

import (
	"slices"
	"testing"
)

func TestSharedSubscriptionStopsReadingAtItsUnackedLimitAndResumesUnderHalf(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) {
		o.MaxUnackedPerSubscription = 6
		o.MaxUnackedPerConsumer = -1
	})
	log.add(20, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(1, 100)
	d.Flow(2, 100)
	// The read in progress goes out whole (Pulsar decides the block as it
	// sends), then no more reads.
	got := d.Dispatch(log)
	if len(got) < 6 || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v: want at least the limit sent, then blocked", allEntries(got), d.SubscriptionBlocked())
	}
	sent := len(got)
	log.add(5, 1, "")
	if more := d.Dispatch(log); len(more) != 0 {
		t.Fatalf("a blocked subscription read %v", allEntries(more))
	}
	// Acks down to exactly half of the limit keep it blocked (fewer than half
	// unblocks).
	for e := int64(0); e < int64(sent-3); e++ {
		d.Ack(e)
	}
	if !d.SubscriptionBlocked() {
		t.Fatalf("unblocked at 3 unacked of a limit of 6")
	}
	d.Ack(int64(sent - 3))
	if d.SubscriptionBlocked() {
		t.Fatalf("still blocked at 2 unacked of a limit of 6")
	}
	if more := d.Dispatch(log); len(more) == 0 {
		t.Fatalf("nothing sent after the unblock")
	}
}

func TestBlockedSubscriptionStillRedelivers(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerSubscription = 4 })
	log.add(10, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 4)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{0, 1, 2, 3}) || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v", allEntries(got), d.SubscriptionBlocked())
	}
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(2, 10)
	// The redelivered entry leaves consumer 1 (3 unacked: still blocked) and
	// goes to consumer 2 from the replay queue; nothing new is read.
	d.Redeliver(1, []int64{1})
	got := d.Dispatch(log)
	if !slices.Equal(allEntries(got), []int64{1}) || got[0].Consumer != 2 || got[0].RedeliveryCount != 1 {
		t.Fatalf("while blocked got %+v, want entry 1 redelivered to consumer 2", got)
	}
	if !d.SubscriptionBlocked() {
		t.Fatal("unblocked by a redelivery that kept 4 messages unacked")
	}
}

func TestKeySharedSubscriptionStopsReadingAtItsUnackedLimit(t *testing.T) {
	d, log := newTest(t, KeyShared, func(o *Options) { o.MaxUnackedPerSubscription = 4 })
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		log.add(1, 1, k)
	}
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	if got := d.Dispatch(log); len(got) != 4 || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v; want 4 and blocked", allEntries(got), d.SubscriptionBlocked())
	}
	d.Ack(0)
	d.Ack(1)
	if got := d.Dispatch(log); len(got) != 0 || !d.SubscriptionBlocked() {
		t.Fatalf("at 2 unacked of a limit of 4 got %v, blocked %v; want nothing, still blocked",
			allEntries(got), d.SubscriptionBlocked())
	}
	d.Ack(2)
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{4, 5}) {
		t.Fatalf("after the unblock got %v, want [4 5]", allEntries(got))
	}
}

func TestRaisedSubscriptionLimitUnblocksAtTheNextAck(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerSubscription = 2 })
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 2)
	d.Dispatch(log)
	d.Flow(1, 10)
	if got := d.Dispatch(log); len(got) != 0 || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v at the limit", allEntries(got), d.SubscriptionBlocked())
	}
	// Pulsar decides the block again only when the count changes.
	d.SetMaxUnacked(0, -1)
	if got := d.Dispatch(log); len(got) != 0 || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v with the limit lifted and nothing acked", allEntries(got), d.SubscriptionBlocked())
	}
	d.Ack(0)
	if d.SubscriptionBlocked() {
		t.Fatal("still blocked after an ack with the limit lifted")
	}
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{2, 3, 4}) {
		t.Fatalf("got %v, want the rest", allEntries(got))
	}
}

func TestLoweredSubscriptionLimitBlocksAfterTheNextDelivery(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerSubscription = 10 })
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 100)
	if got := d.Dispatch(log); len(got) != 5 || d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v under the limit", allEntries(got), d.SubscriptionBlocked())
	}
	d.SetMaxUnacked(0, 2)
	if d.SubscriptionBlocked() {
		t.Fatal("blocked by the limit change itself")
	}
	// The next read goes out, and its delivery blocks the subscription.
	log.add(3, 1, "")
	if got := d.Dispatch(log); !slices.Equal(allEntries(got), []int64{5, 6, 7}) || !d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v; want the read [5 6 7], then blocked", allEntries(got), d.SubscriptionBlocked())
	}
}

func TestRedeliveryRequestChangesTheSubscriptionCountInOneStep(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) { o.MaxUnackedPerSubscription = 10 })
	log.add(8, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 8)
	d.Dispatch(log)
	// Under a limit lowered to 6, 8 held: taking 3 back one at a time would
	// pass 7 and 6 and block; Pulsar subtracts the 3 at once and lands on 5,
	// under the limit.
	d.SetMaxUnacked(0, 6)
	d.Redeliver(1, []int64{0, 1, 2})
	if d.SubscriptionBlocked() {
		t.Fatal("blocked by a redelivery request that left 5 of a limit of 6")
	}
}

func TestLeavingConsumerChangesTheSubscriptionCountInOneStep(t *testing.T) {
	d, log := newTest(t, Shared, func(o *Options) {
		o.MaxUnackedPerSubscription = 10
		o.MaxUnackedPerConsumer = -1
	})
	log.add(8, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 3)
	d.Dispatch(log)
	mustAdd(t, d, ConsumerSpec{ID: 2})
	d.Flow(2, 5)
	d.Dispatch(log)
	d.SetMaxUnacked(0, 6)
	d.RemoveConsumer(1)
	if d.SubscriptionBlocked() {
		t.Fatal("blocked by a consumer leaving with 3 of 8, which left 5 of a limit of 6")
	}
}

func TestExclusiveHasNoSubscriptionLimit(t *testing.T) {
	d, log := newTest(t, Exclusive, func(o *Options) { o.MaxUnackedPerSubscription = 2 })
	log.add(5, 1, "")
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	if got := d.Dispatch(log); len(got) != 5 || d.SubscriptionBlocked() {
		t.Fatalf("sent %v, blocked %v", allEntries(got), d.SubscriptionBlocked())
	}
}
