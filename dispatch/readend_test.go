package dispatch

import "testing"

func TestReadsPastEndOnlyWithPermitsAndNothingLeftToRead(t *testing.T) {
	for _, typ := range []SubType{Exclusive, Shared, KeyShared} {
		t.Run(typ.String(), func(t *testing.T) {
			d, log := newTest(t, typ)
			log.add(2, 1, "k")
			mustAdd(t, d, ConsumerSpec{ID: 1})
			if d.ReadsPastEnd(log) {
				t.Fatal("no permits, yet a read")
			}
			d.Flow(1, 1)
			if d.ReadsPastEnd(log) {
				t.Fatal("entries left to read, yet past the end")
			}
			d.Flow(1, 9)
			if got := allEntries(d.Dispatch(log)); len(got) != 2 {
				t.Fatalf("delivered %v", got)
			}
			if !d.ReadsPastEnd(log) {
				t.Fatal("everything read with permits left: the read should be past the end")
			}
			log.add(1, 1, "k")
			if d.ReadsPastEnd(log) {
				t.Fatal("a new entry to read, yet past the end")
			}
		})
	}
}

func TestReadsPastEndWaitsForAFailoverSwitch(t *testing.T) {
	d, log := newTest(t, Failover, func(o *Options) { o.FailoverDelay = 1000 })
	mustAdd(t, d, ConsumerSpec{ID: 1})
	d.Flow(1, 10)
	if d.ReadsPastEnd(log) {
		t.Fatal("nothing is read while the switch waits")
	}
	d.SetTime(1000)
	if !d.ReadsPastEnd(log) {
		t.Fatal("after the switch the active consumer reads")
	}
}
