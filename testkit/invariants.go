package testkit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// WithInvariants makes the test's cleanup run CheckInvariants, after the
// test's clients closed and before the broker does, and fail the test with
// the violations it finds.
func WithInvariants() Option {
	return func(s *settings) { s.invariants = true }
}

// InvariantError is CheckInvariants' error: every violation found.
type InvariantError struct {
	Violations []Violation
}

// maxListed bounds the violations an InvariantError's message lists.
const maxListed = 20

// Error lists the violations, one a line (the first 20 of them).
func (e *InvariantError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "settlement invariants violated (%d):", len(e.Violations))
	for i, v := range e.Violations {
		if i == maxListed {
			fmt.Fprintf(&sb, "\n  … and %d more", len(e.Violations)-maxListed)
			break
		}
		sb.WriteString("\n  ")
		sb.WriteString(v.String())
	}
	return sb.String()
}

// CheckInvariants checks the broker's settlement invariants and returns an
// *InvariantError listing every violation, or nil. It may be called at any
// time, while clients run. It checks
//   - the state of every subscription, each topic as one consistent state
//     (broker.Broker.CheckSettlement): every entry is exactly one of
//     acknowledged, pending on exactly one consumer, waiting in the replay
//     queue, held for its delivery time, or not yet dispatched; redelivery
//     counts only on Shared and Key_Shared subscriptions that have
//     consumers; the backlog equals what is not acknowledged;
//   - the history since Start (Events): a redelivery count never went down
//     while any consumer of the subscription remained (Pulsar forgets the
//     counts when the last one leaves, and an entry's count when the entry
//     is acknowledged, even in part);
//   - every stored message carrying REAL_TOPIC and ORIGIN_MESSAGE_ID (a
//     dead-letter or retry copy) names a message published on that topic.
//     ORIGIN_MESSAGE_ID may be "ledger:entry:partition[:batch]" (Go, Java,
//     Rust) or "(ledger,entry,partition,batch)" (C++, Python), and
//     REAL_TOPIC a partition or its partitioned topic.
func (b *Broker) CheckInvariants() error {
	return invariantError(b.violations(func() []Event { return b.Events() }))
}

// violations checks the invariants of this broker, the dead-letter copies
// it stores against the messages published in the events others returns
// (this broker's alone, or every broker's of a cluster, whose copies and
// originals may be served by different brokers).
func (b *Broker) violations(others func() []Event) []Violation {
	// The copies are read before the events: a copy is produced after its
	// original was published, so once the pending events are delivered the
	// history holds every original of the copies read.
	events := b.Events()
	copies := b.deadLetterCopies(events)
	vs := b.srv.CheckSettlement()
	vs = append(vs, countHistory(events)...)
	return append(vs, b.checkOrigins(copies, others())...)
}

// invariantError is the InvariantError of vs, nil when there is none.
func invariantError(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	slices.SortFunc(vs, broker.CompareViolations)
	return &InvariantError{Violations: slices.CompactFunc(vs, func(a, b Violation) bool { return a == b })}
}

// subKey names a subscription across events.
type subKey struct{ topic, sub string }

// countHistory checks RuleCountNeverDown over a broker's events: a
// delivery's count is never below the entry's last delivered count while
// the subscription kept a consumer. The subscription's counts are forgotten
// when its last consumer leaves and on a seek; an entry's when it is
// acknowledged (in part, too) or expired.
func countHistory(events []Event) []Violation {
	members := map[subKey]int{}
	counts := map[subKey]map[int64]Event{} // the last delivery of each entry
	var out []Violation
	forget := func(k subKey, through int64) {
		for n := range counts[k] {
			if n <= through {
				delete(counts[k], n)
			}
		}
	}
	for _, e := range events {
		k := subKey{e.Topic, e.Subscription}
		switch e.Kind {
		case EventConsumerOpened:
			members[k]++
		case EventConsumerClosed:
			if members[k]--; members[k] <= 0 {
				delete(members, k)
				delete(counts, k)
			}
		case EventSubscriptionSeek:
			delete(counts, k)
		case EventAcked:
			if e.Cumulative {
				forget(k, e.ID.Entry)
			} else {
				delete(counts[k], e.ID.Entry)
			}
		case EventExpired:
			forget(k, e.ID.Entry)
		case EventDelivered:
			last, seen := counts[k][e.ID.Entry]
			if seen && e.RedeliveryCount < last.RedeliveryCount {
				out = append(out, Violation{Rule: RuleCountNeverDown, Topic: e.Topic, Subscription: e.Subscription,
					Entry: e.ID.Entry, Detail: fmt.Sprintf("delivered to %s with count %d (event %d) after count %d to %s (event %d), "+
						"while the subscription kept a consumer", e.Consumer, e.RedeliveryCount, e.Seq, last.RedeliveryCount, last.Consumer, last.Seq)})
			}
			if counts[k] == nil {
				counts[k] = map[int64]Event{}
			}
			counts[k][e.ID.Entry] = e
		}
	}
	return out
}

// storedCopy is a stored message that carries REAL_TOPIC or
// ORIGIN_MESSAGE_ID, and the topic that stores it.
type storedCopy struct {
	topic string
	msg   Message
}

// deadLetterCopies returns the stored copies, from the topics whose
// published events show one (a batch's event shows its first message's
// properties). Entries that cannot be decoded are not checked.
func (b *Broker) deadLetterCopies(events []Event) []storedCopy {
	topics := map[string]bool{}
	for _, e := range events {
		if e.Kind == EventPublished && isCopy(e.Properties) {
			topics[e.Topic] = true
		}
	}
	var out []storedCopy
	for topic := range topics {
		ms, _ := b.srv.Messages(topic)
		for _, m := range ms {
			if isCopy(m.Properties) {
				out = append(out, storedCopy{topic, m})
			}
		}
	}
	return out
}

func isCopy(props map[string]string) bool {
	_, real := props["REAL_TOPIC"]
	_, origin := props["ORIGIN_MESSAGE_ID"]
	return real || origin
}

// entryKey identifies an entry of a topic.
type entryKey struct {
	topic         string
	ledger, entry int64
}

// checkOrigins checks RuleDeadLetterOrigin for each copy against
// the entries published since Start.
func (b *Broker) checkOrigins(copies []storedCopy, events []Event) []Violation {
	if len(copies) == 0 {
		return nil
	}
	published := map[entryKey]bool{}
	for _, e := range events {
		if e.Kind == EventPublished {
			published[entryKey{e.Topic, e.ID.Ledger, e.ID.Entry}] = true
		}
	}
	var out []Violation
	for _, c := range copies {
		if why := b.originProblem(c.msg.Properties, published); why != "" {
			where := "copy"
			if c.msg.ID.BatchIndex >= 0 {
				where = fmt.Sprintf("copy at batch index %d", c.msg.ID.BatchIndex)
			}
			out = append(out, Violation{Rule: RuleDeadLetterOrigin, Topic: c.topic, Entry: c.msg.ID.Entry,
				Detail: where + ": " + why})
		}
	}
	return out
}

// originProblem says what is wrong with a copy's REAL_TOPIC and
// ORIGIN_MESSAGE_ID, or returns "".
func (b *Broker) originProblem(props map[string]string, published map[entryKey]bool) string {
	real, origin := props["REAL_TOPIC"], props["ORIGIN_MESSAGE_ID"]
	tn, err := broker.ParseTopicName(real)
	if err != nil {
		return fmt.Sprintf("REAL_TOPIC %q is no topic name (ORIGIN_MESSAGE_ID %q)", real, origin)
	}
	id, ok := parseOrigin(origin)
	if !ok {
		return fmt.Sprintf("ORIGIN_MESSAGE_ID %q is no message id (REAL_TOPIC %s)", origin, real)
	}
	candidates := []broker.TopicName{tn}
	if tn.Partition < 0 && id.Partition >= 0 {
		candidates = append(candidates, tn.PartitionName(int(id.Partition)))
	}
	for _, c := range candidates {
		if !published[entryKey{c.String(), id.Ledger, id.Entry}] {
			continue
		}
		if size := b.batchSize(c.String(), id); id.BatchIndex >= 0 && size > 0 && id.BatchIndex >= size {
			return fmt.Sprintf("ORIGIN_MESSAGE_ID %q names batch index %d of an entry of %d messages on %s", origin, id.BatchIndex, size, c)
		}
		return ""
	}
	return fmt.Sprintf("REAL_TOPIC %s and ORIGIN_MESSAGE_ID %q name no message published there", real, origin)
}

// batchSize returns how many messages the entry of id holds on topic, or 0
// when the entry is not a stored batch.
func (b *Broker) batchSize(topic string, id MessageID) int32 {
	if id.BatchIndex < 0 {
		return 0
	}
	ms, _ := b.srv.Messages(topic)
	for _, m := range ms {
		if m.ID.Ledger == id.Ledger && m.ID.Entry == id.Entry {
			return m.BatchSize
		}
	}
	return 0
}

// parseOrigin reads a message id the way clients write ORIGIN_MESSAGE_ID:
// "ledger:entry:partition" with an optional ":batch" (Go, Java, Rust), or
// "(ledger,entry,partition,batch)" (C++, Python). A missing partition or
// batch index reads as -1.
func parseOrigin(s string) (MessageID, bool) {
	sep := ":"
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		s, sep = s[1:len(s)-1], ","
	}
	parts := strings.Split(s, sep)
	if len(parts) < 2 || len(parts) > 4 {
		return MessageID{}, false
	}
	nums := []int64{0, 0, -1, -1}
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return MessageID{}, false
		}
		nums[i] = n
	}
	return MessageID{Ledger: nums[0], Entry: nums[1], Partition: int32(nums[2]), BatchIndex: int32(nums[3])}, true
}
