package dispatch

import "testing"

// An entry acknowledged in a transaction by a consumer that then left, the
// last one, is behind no read position once another consumer comes (its
// arrival rewinds the cursor). If the transaction aborts before that
// consumer's first read, the entry is still ahead of the read position:
// the abort raises its count, and the read sends it once, not once from the
// replay queue and again from the read.
func TestAnAbortGivingBackAnEntryNotYetReadAgainSendsItOnce(t *testing.T) {
	for _, typ := range []SubType{Shared, KeyShared} {
		t.Run(typ.String(), func(t *testing.T) {
			d, log := newTest(t, typ)
			log.add(2, 1, "k")
			mustAdd(t, d, ConsumerSpec{ID: 1})
			d.Flow(1, 10)
			if got := allEntries(d.Dispatch(log)); len(got) != 2 {
				t.Fatalf("first deliveries %v", got)
			}
			d.ReleasePending(0) // acknowledged in a transaction
			log.entries[0].Skip = SkipHold
			d.Ack(1)
			d.RemoveConsumer(1)
			mustAdd(t, d, ConsumerSpec{ID: 2})
			if got := d.Dispatch(log); len(got) != 0 {
				t.Fatalf("deliveries without permits: %+v", got)
			}
			log.entries[0].Skip = Deliver // the transaction aborts
			d.RedeliverEntries([]int64{0}, log)
			d.Flow(2, 10)
			got := d.Dispatch(log)
			if len(got) != 1 || got[0].Entry != 0 || got[0].RedeliveryCount != 1 {
				t.Fatalf("after the abort: %+v, want entry 0 once with count 1", got)
			}
			if more := d.Dispatch(log); len(more) != 0 {
				t.Fatalf("then: %+v", more)
			}
		})
	}
}
