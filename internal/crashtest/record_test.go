package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// testID is a message id as pulsar-client-go hands them out.
type testID struct {
	ledger, entry int64
	idx, size     int32
}

func (m testID) Serialize() []byte   { return nil }
func (m testID) LedgerID() int64     { return m.ledger }
func (m testID) EntryID() int64      { return m.entry }
func (m testID) BatchIdx() int32     { return m.idx }
func (m testID) PartitionIdx() int32 { return -1 }
func (m testID) BatchSize() int32    { return m.size }
func (m testID) String() string      { return fmt.Sprintf("%d:%d:%d", m.ledger, m.entry, m.idx) }

func testRecord(t *testing.T) (*record, *subRecord) {
	r, err := newRecord(filepath.Join(t.TempDir(), "record.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r, r.sub("t", "s")
}

func TestAckConfirmedBeforeAKillAndDeliveredAfterItIsForgotten(t *testing.T) {
	r, s := testRecord(t)
	t0 := time.Now()
	r.ackConfirmed(s, testID{1, 5, -1, 0}, t0)
	r.killed(t0.Add(300 * time.Millisecond))
	r.delivered(s, "k5", testID{1, 5, -1, 0})
	if len(r.forgotten) != 1 || r.forgotten[0].age != 300*time.Millisecond || r.forgotten[0].via != "individual" {
		t.Fatalf("forgotten = %+v, want one individual acknowledgement 300ms old", r.forgotten)
	}
	// Delivered again after the same kill, it is not counted twice.
	r.delivered(s, "k5", testID{1, 5, -1, 0})
	if len(r.forgotten) != 1 {
		t.Fatalf("forgotten = %+v after a second delivery", r.forgotten)
	}
	if err := forgottenTooOld(r, 200*time.Millisecond); err == nil {
		t.Fatal("an acknowledgement 300ms old passed an ack-grace of 200ms")
	}
	if err := forgottenTooOld(r, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRedeliveryWithoutAKillIsNotAForgottenAck(t *testing.T) {
	r, s := testRecord(t)
	r.ackConfirmed(s, testID{1, 5, -1, 0}, time.Now())
	r.delivered(s, "k5", testID{1, 5, -1, 0})
	if len(r.forgotten) != 0 || r.ackedTwice != 1 {
		t.Fatalf("forgotten %+v, acked twice %d; want none and 1", r.forgotten, r.ackedTwice)
	}
}

func TestBatchCountsAsAcknowledgedOnlyOnceEveryMessageIs(t *testing.T) {
	r, s := testRecord(t)
	t0 := time.Now()
	for i := range int32(2) {
		r.ackConfirmed(s, testID{1, 7, i, 3}, t0)
	}
	r.killed(t0.Add(time.Millisecond))
	r.delivered(s, "a", testID{1, 7, 0, 3})
	if len(r.forgotten) != 0 {
		t.Fatalf("a partly acknowledged batch counted as forgotten: %+v", r.forgotten)
	}
	for i := range int32(3) {
		r.delivered(s, "a", testID{1, 7, i, 3})
		r.ackConfirmed(s, testID{1, 7, i, 3}, t0.Add(2*time.Millisecond))
	}
	r.killed(t0.Add(3 * time.Millisecond))
	r.delivered(s, "a", testID{1, 7, 0, 3})
	if len(r.forgotten) != 1 || r.forgotten[0].entry != (pos{1, 7}) {
		t.Fatalf("forgotten = %+v, want the whole batch 1:7", r.forgotten)
	}
}

func TestCumulativeAckCoversEveryEntryUpToIt(t *testing.T) {
	r, s := testRecord(t)
	t0 := time.Now()
	r.cumulativeConfirmed(s, testID{1, 9, -1, 0}, t0)
	// Of a batch, only the entry before counts unless the last message is
	// acknowledged.
	r.cumulativeConfirmed(s, testID{1, 11, 0, 4}, t0)
	r.killed(t0.Add(time.Second))
	for e := int64(8); e <= 11; e++ {
		r.delivered(s, "k", testID{1, e, -1, 0})
	}
	var got []pos
	for _, f := range r.forgotten {
		got = append(got, f.entry)
	}
	if want := []pos{{1, 8}, {1, 9}, {1, 10}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("forgotten entries %v, want %v", got, want)
	}
	if !r.ackedByAll("t", pos{1, 3}) || r.ackedByAll("t", pos{1, 12}) {
		t.Fatal("ackedByAll does not follow the cumulative acknowledgements")
	}
}

func TestPayloadThatDoesNotCheckIsRefused(t *testing.T) {
	p := payload("p0-00000001", 64)
	if k, err := keyOf(p, 64); err != nil || k != "p0-00000001" {
		t.Fatalf("keyOf = %q, %v", k, err)
	}
	p[40] ^= 1
	if _, err := keyOf(p, 64); err == nil {
		t.Fatal("a damaged payload checked")
	}
	if _, err := keyOf(p[:30], 64); err == nil {
		t.Fatal("a torn payload checked")
	}
}

func TestAnEntryMayBeTrimmedOnceEverySubscriptionSentItsAcknowledgement(t *testing.T) {
	r, s := testRecord(t)
	other := r.sub("t", "other")
	cum := r.sub("t", "cum")
	id := testID{ledger: 1, entry: 4, idx: -1}
	r.ackConfirmed(s, id, time.Now())
	r.cumulativeSent(cum, testID{ledger: 1, entry: 9, idx: -1})
	if r.ackedByAll("t", posOf(id)) {
		t.Fatal("trimmable before the other subscription sent any acknowledgement")
	}
	// Its response cut off by a kill: the broker may have applied it.
	r.ackSent(other, id)
	if !r.ackedByAll("t", posOf(id)) {
		t.Fatal("not trimmable with every subscription's acknowledgement sent")
	}
	if r.ackedByAll("t", pos{1, 10}) {
		t.Fatal("an entry no acknowledgement covered counted as trimmable")
	}
}
