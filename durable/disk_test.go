package durable

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/store"
	"github.com/pulsarsim/pulsarsim/txn"
)

const topic = "persistent://public/default/t"

func appendPlain(l *store.Log, e *store.Entry) { l.Append(e, 1<<40, 1<<40, func() int64 { return 0 }) }

func entry(i int) *store.Entry {
	return &store.Entry{
		Data: []byte(fmt.Sprintf("payload-%04d-end", i)), PublishTime: uint64(1000 + i), Messages: 1,
		Key: []byte(fmt.Sprintf("k%d", i%3)), Txn: txn.ID{Most: 7, Least: uint64(i)}, InTxn: i%2 == 0,
	}
}

// writeTopic writes a topic of n entries and one cursor, then closes.
func writeTopic(t *testing.T, dir string, n int) {
	t.Helper()
	d, err := Open(dir, SyncFsync)
	if err != nil {
		t.Fatal(err)
	}
	d.PutLedger(topic, &store.Ledger{ID: 5, Created: time.UnixMilli(42).UTC()}, false)
	for i := range n {
		d.AppendEntry(topic, int64(i), entry(i))
	}
	c := cursor.New(-1)
	c.Ack(0)
	c.Ack(2)
	c.AckBatchIndexes(3, 4, []int64{0b0110})
	d.PutCursor(topic, "sub", store.DurableSub{Cursor: c, Properties: map[string]string{"a": "b"}})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, dir string) (*store.Store, Recovery) {
	t.Helper()
	d, err := Open(dir, SyncFsync)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st := store.New()
	rec, err := d.Load(st, appendPlain)
	if err != nil {
		t.Fatal(err)
	}
	return st, rec
}

func TestLoadGivesBackEntriesCursorsAndLedger(t *testing.T) {
	dir := t.TempDir()
	writeTopic(t, dir, 10)
	st, rec := load(t, dir)
	l := st.Ledgers[topic]
	if l == nil || rec.Topics != 1 || rec.Entries != 10 || rec.Cut != 0 {
		t.Fatalf("recovered %+v, ledger %v", rec, l)
	}
	if l.ID != 5 || st.NextLedger != 6 || !l.Created.Equal(time.UnixMilli(42)) {
		t.Fatalf("ledger id %d, next %d, created %v", l.ID, st.NextLedger, l.Created)
	}
	for i := range 10 {
		got, want := l.Log.Get(int64(i)), entry(i)
		if !bytes.Equal(got.Data, want.Data) || got.PublishTime != want.PublishTime || !bytes.Equal(got.Key, want.Key) ||
			got.Txn != want.Txn || got.InTxn != want.InTxn {
			t.Fatalf("entry %d: got %+v, want %+v", i, got, want)
		}
	}
	s := l.Subs["sub"]
	if s.Cursor.MarkDelete() != 0 || !s.Cursor.IsAcked(2) || s.Cursor.IsAcked(1) || s.Properties["a"] != "b" {
		t.Fatalf("cursor md %d acked %v properties %v", s.Cursor.MarkDelete(), s.Cursor.Acked(), s.Properties)
	}
	if got := s.Cursor.AckSet(3); len(got) != 1 || got[0] != 0b0110 {
		t.Fatalf("ack set of 3: %v", got)
	}
}

func TestLoadCutsTheLogAtAnEntryThatDoesNotCheckOut(t *testing.T) {
	dir := t.TempDir()
	writeTopic(t, dir, 10)
	// Damage entry 7 wherever its bytes lie in the file (a torn write).
	path := filepath.Join(dir, FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte("payload-0007-end")
	if bytes.Count(raw, marker) == 0 {
		t.Fatal("entry 7 is not in the file")
	}
	raw = bytes.ReplaceAll(raw, marker, []byte("payload-0007-XXX"))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st, rec := load(t, dir)
	l := st.Ledgers[topic]
	if rec.Cut != 3 || l.Log.End() != 7 {
		t.Fatalf("cut %d, log ends at %d; want 3 cut and entries 0..6", rec.Cut, l.Log.End())
	}
	// The cut is on disk: a second load finds the same log and cuts nothing.
	st, rec = load(t, dir)
	if rec.Cut != 0 || st.Ledgers[topic].Log.End() != 7 {
		t.Fatalf("second load: cut %d, log ends at %d", rec.Cut, st.Ledgers[topic].Log.End())
	}
}

func TestFreedEntriesStayFreed(t *testing.T) {
	dir := t.TempDir()
	writeTopic(t, dir, 10)
	d, err := Open(dir, SyncWrite)
	if err != nil {
		t.Fatal(err)
	}
	l := &store.Log{}
	for i := range 10 {
		appendPlain(l, entry(i))
	}
	l.FreeThrough(3)
	d.FreeEntries(topic, l)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	st, rec := load(t, dir)
	got := st.Ledgers[topic].Log
	if got.Base != 4 || got.End() != 10 || rec.Entries != 6 || got.FreedMessages != 4 || got.FreedBytes != l.FreedBytes {
		t.Fatalf("log base %d end %d entries %d freed %d/%d", got.Base, got.End(), rec.Entries, got.FreedMessages, got.FreedBytes)
	}
	if got.TotalBytes != l.TotalBytes {
		t.Fatalf("total bytes %d, want %d", got.TotalBytes, l.TotalBytes)
	}
}

func TestCrashDropsWhatWasNotCommittedAndBarriersWaitForTheCommit(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, SyncFsync)
	if err != nil {
		t.Fatal(err)
	}
	d.PutLedger(topic, &store.Ledger{ID: 1}, false)
	for i := range 5 {
		d.AppendEntry(topic, int64(i), entry(i))
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	// Hold the goroutine in a barrier so that what follows stays queued.
	release := make(chan struct{})
	held := make(chan struct{})
	d.Barrier(func(error) { close(held); <-release })
	<-held
	d.AppendEntry(topic, 5, entry(5))
	ran := false
	d.Barrier(func(error) { ran = true })
	d.crashHook = func() { close(release) }
	d.Crash()
	if ran {
		t.Fatal("a barrier behind changes a crash dropped ran")
	}
	st, _ := load(t, dir)
	if end := st.Ledgers[topic].Log.End(); end != 5 {
		t.Fatalf("log ends at %d after the crash, want 5 (the committed entries)", end)
	}
}

func TestMetadataComesBack(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, SyncFsync)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	st.Registry.Tenants = map[string]bool{"acme": true}
	st.Registry.Namespaces = map[string]bool{"acme/ns": true}
	st.Partitioned["persistent://acme/ns/p"] = 3
	st.AntiAffinityGroups["acme/ns"] = "g"
	st.Security.Init()
	st.Security.TenantAdmins["acme"] = []string{"root"}
	v, err := EncodeMetadata(st)
	if err != nil {
		t.Fatal(err)
	}
	d.PutMetadata(v)
	d.PutSecurity(EncodeSecurity(&st.Security))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := load(t, dir)
	if !got.Registry.Tenants["acme"] || !got.Registry.Namespaces["acme/ns"] || got.Partitioned["persistent://acme/ns/p"] != 3 ||
		got.AntiAffinityGroups["acme/ns"] != "g" || got.Security.TenantAdmins["acme"][0] != "root" {
		t.Fatalf("metadata back: %+v %+v %+v", got.Registry, got.Partitioned, got.Security)
	}
}

func TestASecondOpenOfTheDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, SyncFsync)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := Open(dir, SyncFsync); err == nil {
		t.Fatal("a second Open of an open directory succeeded")
	}
}

func TestChangesQueuedDuringACommitShareTheNextAndStatsCountThem(t *testing.T) {
	d, err := Open(t.TempDir(), SyncWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.PutLedger(topic, &store.Ledger{ID: 1}, false)
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	// Hold the goroutine in a barrier: what follows is queued while it
	// waits, and goes into one commit once it is released.
	release := make(chan struct{})
	held := make(chan struct{})
	d.Barrier(func(error) { close(held); <-release })
	<-held
	for i := range 10 {
		d.AppendEntry(topic, int64(i), entry(i))
	}
	done := make(chan error, 1)
	d.Barrier(func(err error) { done <- err })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := d.Stats()
	if got := after.Changes - before.Changes; got != 10 {
		t.Fatalf("%d changes counted, want the 10 entries", got)
	}
	// The held barrier had nothing to commit; the ten entries one commit.
	if got := after.Commits - before.Commits; got != 1 {
		t.Fatalf("%d commits for a barrier and ten entries queued behind it, want 1", got)
	}
}

// bbolt grows its file in steps of 16 MiB once past them; under SyncWrite
// it does so without the truncate and fsync it does under SyncFsync.
func TestAWriteDirectoryGrownPastItsAllocationStepComesBackWholeAfterACrash(t *testing.T) {
	dir := t.TempDir()
	const n, size = 48, 1 << 20 // 48 MiB of entries: past 32 MiB, then in 16 MiB steps
	body := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	for round := range 2 {
		d, err := Open(dir, SyncWrite)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			d.PutLedger(topic, &store.Ledger{ID: 1}, false)
		}
		for i := round * n / 2; i < (round+1)*n/2; i++ {
			d.AppendEntry(topic, int64(i), &store.Entry{Data: body(i), Messages: 1})
		}
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
		d.Crash()
	}
	st, rec := load(t, dir)
	l := st.Ledgers[topic]
	if l == nil || rec.Entries != n || rec.Cut != 0 {
		t.Fatalf("recovered %+v", rec)
	}
	for i := range n {
		if got := l.Log.Get(int64(i)); !bytes.Equal(got.Data, body(i)) {
			t.Fatalf("entry %d of %d bytes does not match what was written", i, len(got.Data))
		}
	}
}
