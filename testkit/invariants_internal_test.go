package testkit

import (
	"strings"
	"testing"
)

// history builds events of one subscription for countHistory.
type history []Event

func (h history) open(c string) history {
	return append(h, Event{Kind: EventConsumerOpened, Topic: "t", Subscription: "s", Consumer: c})
}

func (h history) close(c string) history {
	return append(h, Event{Kind: EventConsumerClosed, Topic: "t", Subscription: "s", Consumer: c})
}

func (h history) deliver(c string, entry int64, count int32) history {
	return append(h, Event{Kind: EventDelivered, Topic: "t", Subscription: "s", Consumer: c,
		ID: MessageID{Entry: entry, BatchIndex: -1}, RedeliveryCount: count, Seq: uint64(len(h) + 1)})
}

func (h history) ack(entry int64) history {
	return append(h, Event{Kind: EventAcked, Topic: "t", Subscription: "s", ID: MessageID{Entry: entry}})
}

func (h history) expire(through int64) history {
	return append(h, Event{Kind: EventExpired, Topic: "t", Subscription: "s", ID: MessageID{Entry: through}})
}

func TestCountHistoryReportsACountThatWentDownWhileAConsumerRemained(t *testing.T) {
	h := history{}.open("a").open("b").deliver("a", 3, 1).deliver("b", 3, 2).close("b").deliver("a", 3, 0)
	got := countHistory(h)
	if len(got) != 1 || got[0].Rule != RuleCountNeverDown || got[0].Entry != 3 ||
		!strings.Contains(got[0].Detail, "delivered to a with count 0 (event 6) after count 2 to b (event 4)") {
		t.Fatalf("got %v", got)
	}
}

func TestCountHistoryAcceptsWhatPulsarResets(t *testing.T) {
	cases := map[string]history{
		"the last consumer left":       history{}.open("a").deliver("a", 0, 2).close("a").open("b").deliver("b", 0, 0),
		"an ack, even of a batch part": history{}.open("a").deliver("a", 0, 2).ack(0).deliver("a", 0, 0),
		"an expiry":                    history{}.open("a").deliver("a", 1, 2).expire(4).deliver("a", 1, 0),
		"counts that only grow":        history{}.open("a").open("b").deliver("a", 0, 0).deliver("b", 0, 1).close("a").deliver("b", 0, 1),
	}
	for name, h := range cases {
		if got := countHistory(h); got != nil {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestParseOriginReadsEveryClientsFormat(t *testing.T) {
	for in, want := range map[string]MessageID{
		"12:5:-1":         {Ledger: 12, Entry: 5, Partition: -1, BatchIndex: -1}, // Go, Java, Rust
		"12:5:2:3":        {Ledger: 12, Entry: 5, Partition: 2, BatchIndex: 3},   // Java, batched
		"(12,5,-1,-1)":    {Ledger: 12, Entry: 5, Partition: -1, BatchIndex: -1}, // C++, Python
		"(12, 5, 0, 1)":   {Ledger: 12, Entry: 5, Partition: 0, BatchIndex: 1},
		"12:5":            {Ledger: 12, Entry: 5, Partition: -1, BatchIndex: -1},
		"(12,5,-1,-1,9)":  {},
		"12:x:0":          {},
		"":                {},
		"CAwQBSAAMAE=":    {}, // a serialized id is no format a client writes there
		"(12:5:0:1)":      {},
		"12,5,0,1":        {},
		"12:5:0:1:2:3:44": {},
	} {
		got, ok := parseOrigin(in)
		if ok != (want != MessageID{}) || (ok && got != want) {
			t.Errorf("parseOrigin(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
}
