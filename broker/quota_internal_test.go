package broker

import (
	"testing"
	"time"
)

// Without the precise check, the age of a backlog is the time since the
// block holding its oldest entry closed; eviction by age skips whole
// blocks that closed more than the limit ago, never the open one.
func TestAgeQuotaEvictsWholeClosedBlocks(t *testing.T) {
	clk := NewManualClock(time.Unix(1_000_000, 0))
	b := New(WithClock(clk))
	b.trimBlock = 4
	const topic = "persistent://public/default/blocks"
	if err := b.CreateSubscription(topic, "s", Earliest); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		for range n {
			if _, err := b.Publish(topic, ProducerMessage{Payload: []byte("m")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(4) // block [0,4) closes now
	clk.Advance(30 * time.Second)
	publish(6) // block [4,8) closes 30 s later; [8,10) stays open
	if err := b.UpdateTopicPolicies(topic, func(p *Policies) {
		p.MessageAgeBacklogQuota = &BacklogQuota{LimitBytes: -1, LimitSeconds: 60, Policy: ConsumerBacklogEviction}
	}); err != nil {
		t.Fatal(err)
	}
	backlog := func() int64 {
		s, _ := b.Subscription(topic, "s")
		return s.Backlog
	}
	clk.Advance(45 * time.Second) // 75 s and 45 s since the blocks closed
	b.RunBacklogQuotaCheck()
	if got := backlog(); got != 6 {
		t.Fatalf("backlog %d, want 6: only the first block is older than 60 s", got)
	}
	clk.Advance(time.Hour)
	b.RunBacklogQuotaCheck()
	if got := backlog(); got != 2 {
		t.Fatalf("backlog %d, want the open block's 2 entries", got)
	}
}
