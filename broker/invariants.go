package broker

import (
	"cmp"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/dispatch"
)

// Settlement invariants. CheckSettlement copies each topic's settlement state
// under the topic's lock (the log's bounds, every subscription's cursor and
// dispatcher, and the batch sizes the checks need) and checks the copy after
// the lock is released, so that every check sees one consistent state while
// clients keep running.

// Rule names a settlement invariant.
type Rule string

// The settlement invariants. CheckSettlement checks the first three on the
// broker's state; testkit checks the last two on the broker's history.
const (
	// RuleOneState: every entry of a subscription is exactly one of
	// acknowledged, pending on exactly one consumer, waiting in the replay
	// queue, held for its delivery time, or not yet dispatched (at or after
	// the read position); or else held by an open transaction's
	// acknowledgement. Partly acknowledged batch entries are not
	// acknowledged; entries freed from the log must be acknowledged.
	RuleOneState Rule = "one-state"
	// RuleCounts: redelivery counts exist only on Shared and Key_Shared
	// subscriptions, and only while they have consumers (Pulsar forgets them
	// when the last consumer leaves), except for the entries a transaction's
	// abort gave back since.
	RuleCounts Rule = "counts"
	// RuleBacklog: the backlog the broker reports equals the entries not
	// acknowledged, and each Shared or Key_Shared consumer's unacked messages
	// equal the messages it holds.
	RuleBacklog Rule = "backlog"
	// RuleCountNeverDown: a delivery's redelivery count is never lower than
	// the entry's previous one while any consumer of the subscription
	// remained in between (an acknowledgement of the entry, even of part of a
	// batch, forgets its count, as Pulsar does).
	RuleCountNeverDown Rule = "count-never-down"
	// RuleDeadLetterOrigin: every message carrying REAL_TOPIC and
	// ORIGIN_MESSAGE_ID names a message that was published on that topic.
	RuleDeadLetterOrigin Rule = "dead-letter-origin"
)

// Violation is one broken settlement invariant.
type Violation struct {
	Rule  Rule
	Topic string
	// Subscription is empty when the violation concerns the topic.
	Subscription string
	// Entry is the entry concerned, or -1.
	Entry  int64
	Detail string
}

// String describes the violation on one line.
func (v Violation) String() string {
	var sb strings.Builder
	sb.WriteString(v.Topic)
	if v.Subscription != "" {
		fmt.Fprintf(&sb, " subscription %s", v.Subscription)
	}
	if v.Entry >= 0 {
		fmt.Fprintf(&sb, " entry %d", v.Entry)
	}
	fmt.Fprintf(&sb, ": %s: %s", v.Rule, v.Detail)
	return sb.String()
}

// CompareViolations orders violations by topic, subscription, entry, rule
// and detail.
func CompareViolations(a, b Violation) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Subscription, b.Subscription),
		cmp.Compare(a.Entry, b.Entry), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Detail, b.Detail))
}

// CheckSettlement checks the settlement invariants RuleOneState, RuleCounts
// and RuleBacklog on every subscription of every topic, each topic as one
// consistent state, and returns every violation found, ordered by topic,
// subscription and entry; nil when all hold. It may be called at any time,
// while clients run.
func (b *Broker) CheckSettlement() []Violation {
	topics := b.topicsNow(false)
	var out []Violation
	for _, t := range topics {
		t.mu.Lock()
		st := t.settlementLocked()
		t.mu.Unlock()
		out = append(out, st.check()...)
	}
	slices.SortFunc(out, CompareViolations)
	return out
}

// topicSettlement is a copy of one topic's settlement state.
type topicSettlement struct {
	topic string
	// base and end bound the retained entries: entries below base are freed.
	base, end int64
	// sizes holds the batch sizes (messages per entry) of the retained
	// entries that the subscriptions' pending entries and ack sets name.
	sizes map[int64]int32
	subs  []subSettlement
}

// subSettlement is a copy of one subscription's settlement state.
type subSettlement struct {
	name    string
	backlog int64 // as the broker reports it
	state   dispatch.Snapshot
	// txnHeld maps the entries open transactions hold to the indexes
	// still free (nil: the whole entry); idleCounts are the entries an
	// abort gave back while no consumer was attached.
	txnHeld    map[int64][]int64
	idleCounts map[int64]bool
	// compactedAway are the entries a read-compacted consumer of the
	// subscription passes over: at or before the compaction horizon and
	// not in the compacted view (nil when it had no such consumer).
	compactedAway func(n int64) bool
}

func (t *Topic) settlementLocked() topicSettlement {
	ts := topicSettlement{topic: t.full, base: t.log.Base, end: t.log.End(), sizes: map[int64]int32{}}
	note := func(n int64) {
		if e := t.log.Get(n); e != nil {
			ts.sizes[n] = e.Messages
		}
	}
	for _, s := range t.subs {
		ss := subSettlement{name: s.name, backlog: s.cur.Backlog(ts.end), txnHeld: s.txnHeldLocked(),
			idleCounts: maps.Clone(s.returnedIdle)}
		if s.readCompacted && t.view.Has {
			horizon, inView := t.view.Horizon, slices.Clone(t.view.Pos)
			ss.compactedAway = func(n int64) bool {
				_, found := slices.BinarySearch(inView, n)
				return n <= horizon && !found
			}
		}
		if s.disp != nil {
			ss.state = s.disp.Snapshot()
		} else {
			ss.state = cursorState(s.typ, s.cur)
		}
		for _, c := range ss.state.Consumers {
			for _, p := range c.Pending {
				note(p.Entry)
			}
		}
		for n := range ss.state.AckSets {
			note(n)
		}
		ts.subs = append(ts.subs, ss)
	}
	return ts
}

// cursorState is the state of a subscription that never had a dispatcher.
func cursorState(typ dispatch.SubType, c *cursor.Cursor) dispatch.Snapshot {
	return dispatch.Snapshot{Type: typ, MarkDelete: c.MarkDelete(), ReadPosition: c.ReadPosition(),
		Acked: c.Acked(), AckSets: c.AckSets(), Redeliveries: c.Redeliveries()}
}

func (ts topicSettlement) check() []Violation {
	var out []Violation
	for _, ss := range ts.subs {
		c := &subCheck{ts: ts, ss: ss, st: ss.state, acked: map[int64]bool{}}
		for _, n := range ss.state.Acked {
			c.acked[n] = true
		}
		c.checkCursor()
		c.checkStates()
		c.checkCounts()
		c.checkBacklog()
		out = append(out, c.out...)
	}
	return out
}

// subCheck checks one subscription's state.
type subCheck struct {
	ts    topicSettlement
	ss    subSettlement
	st    dispatch.Snapshot
	acked map[int64]bool
	out   []Violation
}

func (c *subCheck) fail(rule Rule, entry int64, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: rule, Topic: c.ts.topic, Subscription: c.ss.name, Entry: entry,
		Detail: fmt.Sprintf(format, args...)})
}

func (c *subCheck) isAcked(n int64) bool { return n <= c.st.MarkDelete || c.acked[n] }

func (c *subCheck) singleActive() bool {
	return c.st.Type == dispatch.Exclusive || c.st.Type == dispatch.Failover
}

// checkCursor checks the cursor's own bounds: the read position after the
// mark-delete position, acknowledgements only of published entries, freed
// entries acknowledged, and partial batch acknowledgements only of entries
// not acknowledged, with indexes left inside the batch.
func (c *subCheck) checkCursor() {
	md, end := c.st.MarkDelete, c.ts.end
	if c.st.ReadPosition <= md {
		c.fail(RuleOneState, -1, "read position %d at or before the mark-delete position %d", c.st.ReadPosition, md)
	}
	if md >= end {
		c.fail(RuleOneState, md, "mark-delete position %d beyond the last entry %d", md, end-1)
	}
	if md < c.ts.base-1 {
		c.fail(RuleOneState, md+1, "entries %d to %d were freed from the log while not acknowledged (mark-delete %d)",
			md+1, c.ts.base-1, md)
	}
	for _, n := range c.st.Acked {
		if n <= md || n >= end {
			c.fail(RuleOneState, n, "individually acknowledged, outside (mark-delete %d, end %d)", md, end)
		}
	}
	for _, n := range sortedKeys(c.st.AckSets) {
		set, left := c.st.AckSets[n], 0
		for _, w := range set {
			left += bits.OnesCount64(uint64(w))
		}
		switch size, known := c.ts.sizes[n]; {
		case c.isAcked(n) || n >= end:
			c.fail(RuleOneState, n, "partly acknowledged batch entry is also acknowledged or not published")
		case left == 0:
			c.fail(RuleOneState, n, "partly acknowledged batch entry has no index left unacknowledged")
		case known && highestBit(set) >= int(size):
			c.fail(RuleOneState, n, "batch of %d messages has index %d left unacknowledged", size, highestBit(set))
		}
	}
}

// highestBit returns the highest set bit of an ack set, or -1.
func highestBit(set []int64) int {
	for i := len(set) - 1; i >= 0; i-- {
		if set[i] != 0 {
			return i*64 + 63 - bits.LeadingZeros64(uint64(set[i]))
		}
	}
	return -1
}

// effectiveRead returns the read position that will serve the next read.
// Without a consumer to read for (no active consumer on Exclusive and
// Failover, no consumer on Shared and Key_Shared) the next consumer rewinds
// the cursor, and so does the end of a Failover switch delay, so every entry
// after the mark-delete position is not yet dispatched.
func (c *subCheck) effectiveRead() int64 {
	if (c.singleActive() && (!c.st.HasActive || c.st.Switching)) || len(c.st.Consumers) == 0 {
		return c.st.MarkDelete + 1
	}
	return c.st.ReadPosition
}

// holders returns, for each entry not acknowledged, the states that hold it
// (pending on a consumer, in the replay queue, delayed), and reports
// acknowledged entries that are still held where that is never right.
func (c *subCheck) holders() map[int64][]string {
	md := c.st.MarkDelete
	held := map[int64][]string{}
	for _, cons := range c.st.Consumers {
		if c.singleActive() && !cons.Active && len(cons.Pending) > 0 {
			c.fail(RuleOneState, cons.Pending[0].Entry, "%d entries pending on %s, which is not the active consumer",
				len(cons.Pending), cons.Name)
		}
		for _, p := range cons.Pending {
			switch {
			case p.Entry > md && c.acked[p.Entry]:
				c.fail(RuleOneState, p.Entry, "acknowledged, and still pending on %s", cons.Name)
			case p.Entry > md:
				held[p.Entry] = append(held[p.Entry], fmt.Sprintf("pending on %s (consumer %d)", cons.Name, cons.ID))
			}
			// At or below the mark-delete position, a pending entry was
			// expired by message TTL while its consumer held it: Pulsar
			// leaves it with the consumer, and it is acknowledged.
		}
	}
	if c.singleActive() && (len(c.st.Replay) > 0 || len(c.st.Delayed) > 0) {
		c.fail(RuleOneState, -1, "%s subscription has a replay queue %v or delayed entries %v", c.st.Type, c.st.Replay, c.st.Delayed)
	}
	for _, n := range c.st.Replay {
		if c.isAcked(n) {
			c.fail(RuleOneState, n, "acknowledged, and still waiting in the replay queue")
			continue
		}
		held[n] = append(held[n], "in the replay queue")
	}
	for _, n := range c.st.Delayed {
		// An acknowledged entry may stay in the delayed index: it is skipped
		// when released, as Pulsar's delayed-delivery tracker skips it.
		if !c.isAcked(n) {
			held[n] = append(held[n], "held for its delivery time")
		}
	}
	return held
}

// checkStates checks RuleOneState over every entry after the mark-delete
// position.
func (c *subCheck) checkStates() {
	held := c.holders()
	read := c.effectiveRead()
	for _, n := range sortedKeys(held) {
		switch hs := held[n]; {
		case n >= c.ts.end:
			c.fail(RuleOneState, n, "not published yet, and %s", strings.Join(hs, ", "))
		case n >= read:
			c.fail(RuleOneState, n, "not yet dispatched (at or after the read position %d), and %s", read, strings.Join(hs, ", "))
		case len(hs) > 1 && !slices.Contains(c.st.Duplicated, n):
			// (A duplicate dispatch asked of the broker leaves an entry
			// with two holders, as Pulsar's race does.)
			c.fail(RuleOneState, n, "in %d states at once: %s", len(hs), strings.Join(hs, ", "))
		}
	}
	for n := c.st.MarkDelete + 1; n < min(read, c.ts.end); n++ {
		away := c.ss.compactedAway != nil && c.ss.compactedAway(n)
		if _, inTxn := c.ss.txnHeld[n]; !c.acked[n] && len(held[n]) == 0 && !inTxn && !away {
			c.fail(RuleOneState, n, "in no state: not acknowledged, not pending, not waiting for a replay or its delivery time, "+
				"and before the read position %d, so it would never be delivered again", read)
		}
	}
}

// checkCounts checks RuleCounts.
func (c *subCheck) checkCounts() {
	for _, n := range sortedKeys(c.st.Redeliveries) {
		count := c.st.Redeliveries[n]
		switch {
		case c.singleActive():
			c.fail(RuleCounts, n, "redelivery count %d, but %s subscriptions keep none", count, c.st.Type)
		case len(c.st.Consumers) == 0 && !c.ss.idleCounts[n]:
			c.fail(RuleCounts, n, "redelivery count %d kept after the last consumer left", count)
		case count <= 0:
			c.fail(RuleCounts, n, "redelivery count %d", count)
		}
	}
}

// checkBacklog checks RuleBacklog.
func (c *subCheck) checkBacklog() {
	md, end := c.st.MarkDelete, c.ts.end
	unacked := max(end-1-md, 0)
	for _, n := range c.st.Acked {
		if n > md && n < end {
			unacked--
		}
	}
	if c.ss.backlog != unacked {
		c.fail(RuleBacklog, -1, "backlog %d, but %d entries are not acknowledged", c.ss.backlog, unacked)
	}
	if c.singleActive() {
		return
	}
	for _, cons := range c.st.Consumers {
		held := 0
		for _, p := range cons.Pending {
			held += int(p.Messages)
			if want, ok := c.remaining(p.Entry); ok && int(p.Messages) != want {
				c.fail(RuleBacklog, p.Entry, "pending on %s as %d messages, but %d are not acknowledged", cons.Name, p.Messages, want)
			}
		}
		if cons.Unacked != held {
			c.fail(RuleBacklog, -1, "consumer %s counts %d unacked messages, but holds %d", cons.Name, cons.Unacked, held)
		}
	}
}

// remaining returns how many messages of entry n are not acknowledged, when
// n is neither acknowledged nor freed.
func (c *subCheck) remaining(n int64) (int, bool) {
	size, ok := c.ts.sizes[n]
	if !ok || c.isAcked(n) {
		return 0, false
	}
	set, partial := c.st.AckSets[n]
	free := c.ss.txnHeld[n]
	if !partial && free == nil {
		return int(max(size, 1)), true
	}
	left := 0
	for i := range max(len(set), len(free)) {
		w := int64(-1)
		if partial {
			w = 0
			if i < len(set) {
				w = set[i]
			}
		} else if i*64+64 > int(size) {
			w = int64(uint64(1)<<uint(max(int(size)-i*64, 0)) - 1)
		}
		if free != nil {
			if i >= len(free) {
				w = 0
			} else {
				w &= free[i]
			}
		}
		left += bits.OnesCount64(uint64(w))
	}
	return left, true
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// txnHeldLocked returns the entries open transactions hold on the
// subscription, with the indexes still free of a partly held batch.
func (s *Subscription) txnHeldLocked() map[int64][]int64 {
	if s.pending == nil {
		return nil
	}
	out := map[int64][]int64{}
	for _, st := range s.pending.Transactions() {
		for _, p := range st.Entries {
			free, _ := s.pending.Held(p.Entry)
			out[p.Entry] = free
		}
	}
	return out
}
