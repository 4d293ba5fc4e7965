package durable

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/store"
)

// BenchmarkAppendUntilDurable measures the directory alone under each sync
// policy: entries of 1 KiB queued with a Barrier each, as a broker queues a
// SEND's entry and its receipt, with up to 1000 of them in flight (a
// producer's pending queue); one op is one entry made durable.
func BenchmarkAppendUntilDurable(b *testing.B) {
	for _, policy := range []Sync{SyncFsync, SyncWrite} {
		b.Run(string(policy), func(b *testing.B) {
			d, err := Open(b.TempDir(), policy)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			d.PutLedger(topic, &store.Ledger{ID: 1}, false)
			e := &store.Entry{Data: make([]byte, 1024), Messages: 1}
			inflight := make(chan struct{}, 1000)
			b.SetBytes(1024)
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				inflight <- struct{}{}
				d.AppendEntry(topic, n, e)
				d.Barrier(func(error) { <-inflight })
				n++
			}
			if err := d.Wait(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/float64(d.Commits()), "entries/commit")
		})
	}
}
