package durable

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/store"
)

// BenchmarkLoad1MEntries measures recovery: opening a data directory that
// holds one topic of 1,000,000 entries of 100 bytes with one cursor, and
// loading it all into a store (each op one whole recovery).
func BenchmarkLoad1MEntries(b *testing.B) {
	dir := b.TempDir()
	d, err := Open(dir, SyncWrite)
	if err != nil {
		b.Fatal(err)
	}
	d.PutLedger(topic, &store.Ledger{ID: 1}, false)
	e := &store.Entry{Data: make([]byte, 100), Messages: 1, Key: []byte("k")}
	const n = 1_000_000
	for i := range n {
		d.AppendEntry(topic, int64(i), e)
		if i%10000 == 0 {
			if err := d.Wait(); err != nil { // keep the queue short
				b.Fatal(err)
			}
		}
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := Open(dir, SyncWrite)
		if err != nil {
			b.Fatal(err)
		}
		st := store.New()
		rec, err := d.Load(st, appendPlain)
		if err != nil || rec.Entries != n {
			b.Fatalf("loaded %d entries: %v", rec.Entries, err)
		}
		d.Close()
	}
}
