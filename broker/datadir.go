package broker

import (
	"bytes"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/store"
	"github.com/pulsarsim/pulsarsim/txn"
)

// A data directory (WithDataDir) keeps the store on disk (package durable),
// as a standalone's metadata store and BookKeeper keep it: the brokers
// write each change as they make it, under the lock that guards it, and one
// goroutine of the directory commits them in order, in group commits:
//   - an entry is written as it is appended, and its SEND_RECEIPT goes out
//     once it is durable under the sync policy (a Publish returns then);
//   - a durable cursor is written when Pulsar's managed cursor persists it
//     (persist.go), so a crash loses what Pulsar's loses;
//   - what a topic writes into its ledger's properties (termination, epoch,
//     compacted view) when it changes, and everything when the topic is
//     unloaded or the broker stops;
//   - the metadata (tenants, namespaces, policies, partitioned topics,
//     schemas, permissions) whenever the broker lock or the security lock
//     is released after a change of it;
//   - the cluster metadata and the dynamic configuration whenever their
//     lock is released after a change of them (datadirmeta.go);
//   - each transaction as its coordinator changes it, and each
//     subscription's pending acknowledgements as they change
//     (datadirtxn.go).
// A broker started on the directory again loads the store from it.

// WithDataDir keeps the store in directory dir: a broker (or cluster)
// started on it comes back with what it held when it stopped or crashed.
// Without it everything stays in memory. An error opening the directory is
// returned by Listen or Serve.
func WithDataDir(dir string) Option {
	return func(c *config) { c.dataDir = dir }
}

// WithDataSync sets the data directory's sync policy: when an entry counts
// as durable, and so when its SEND_RECEIPT goes out (durable.SyncFsync by
// default, as BookKeeper's journalSyncData=true).
func WithDataSync(s durable.Sync) Option {
	return func(c *config) { c.dataSync = s }
}

// storeLock is the broker lock (and the security lock, and the cluster
// metadata's): a mutex that, with a data directory, queues what it guards
// when it changed before it is released, so that changes reach the disk in
// the order they were made.
type storeLock struct {
	sync.Mutex
	// save, when set, runs under the lock as it is released.
	save func()
}

// Unlock queues what changed, then releases the lock.
func (l *storeLock) Unlock() {
	if l.save != nil {
		l.save()
	}
	l.Mutex.Unlock()
}

// openDataDir opens cfg's data directory for s and loads the store from it.
func (s *shared) openDataDir(cfg config) {
	d, err := durable.Open(cfg.dataDir, cfg.dataSync)
	if err != nil {
		s.diskErr = err
		return
	}
	now := cfg.clock.Now
	rec, err := d.Load(s.data, func(l *store.Log, e *store.Entry) {
		l.Append(e, DefaultTrimBlock, DefaultTrimBlockBytes, func() int64 { return now().UnixMilli() })
	})
	if err == nil {
		err = s.keepClusterMeta(d)
	}
	if err == nil {
		err = s.loadTransactions(d, cfg.maxActiveTxns)
	}
	if err != nil {
		d.Close()
		s.diskErr = err
		return
	}
	replayDedup(s.data)
	s.disk, s.restored = d, rec.Metadata
	var lastMeta, lastSec []byte
	var enc durable.MetadataEncoder
	s.mu.save = func() {
		if v, err := enc.Encode(s.data); err == nil && !bytes.Equal(v, lastMeta) {
			lastMeta = v
			d.PutMetadata(v)
		}
	}
	s.secmu.save = func() {
		if v := durable.EncodeSecurity(&s.data.Security); !bytes.Equal(v, lastSec) {
			lastSec = v
			d.PutSecurity(v)
		}
	}
	s.mu.Lock()
	s.mu.Unlock() // writes what a new directory starts with
	s.secmu.Lock()
	s.secmu.Unlock()
}

// saveEntryLocked writes entry n of t, and holds it back from its
// subscriptions until it is durable (readEnd): Pulsar dispatches only what
// BookKeeper has confirmed, so a consumer never sees an entry a crash then
// loses, and whose id a new message takes after the restart. Once it is
// durable a timer task offers the topic's new entries to its
// subscriptions. Called under t's lock as it is appended.
func (t *Topic) saveEntryLocked(n int64, e *entry) {
	d := t.b.disk
	if d == nil || !t.name.Persistent {
		return
	}
	d.AppendEntry(t.full, n, e)
	t.undurable.Add(1)
	d.Barrier(func(err error) {
		if err != nil {
			return
		}
		t.undurable.Add(-1)
		if t.durableWake.CompareAndSwap(false, true) {
			t.b.timers.addTask(t.b.nowMillis(), func(int64) {
				t.mu.Lock()
				t.durableWake.Store(false)
				// A topic released (unloaded, its cursors handed back to
				// the store for the next load) or deleted dispatches
				// nothing more.
				if !t.released && !t.deleted {
					for _, s := range t.subs {
						s.entryAddedLocked()
					}
				}
				t.mu.Unlock()
			})
		}
	})
}

// saveLedgerLocked writes what t keeps in its ledger's properties (not its
// cursors). Called under t's lock after one of them changed.
func (t *Topic) saveLedgerLocked() {
	if d := t.b.disk; d != nil && t.name.Persistent {
		d.PutLedger(t.full, t.ledgerPropertiesLocked(), false)
	}
}

// ledgerPropertiesLocked is what t's ledger keeps beside its entries and
// cursors.
func (t *Topic) ledgerPropertiesLocked() *ledger {
	l := &ledger{
		ID: t.ledger, Log: t.log, Created: t.created,
		Terminated: t.terminated,
		TopicEpoch: t.topicEpoch, HasEpoch: t.hasEpoch,
		View:       t.view,
		Properties: t.properties,
	}
	if t.dedup.on {
		l.DedupLast = t.dedup.last
	}
	return l
}

// replayDedup brings the deduplication state of each ledger whose topic had
// it on up to the entries it holds, as Pulsar's MessageDeduplication
// replays the entries after its last snapshot: the state a ledger was last
// written with may be older than its last entries (a crash).
func replayDedup(st *store.Store) {
	for _, l := range st.Ledgers {
		if l.DedupLast == nil {
			continue
		}
		for _, e := range l.Log.Entries {
			if e.Marker {
				continue
			}
			pl, err := protocol.ParsePayload(e.Data[e.MetaLen:])
			if err != nil {
				continue
			}
			md := pl.Metadata
			seq := max(int64(md.GetSequenceId()), int64(md.GetHighestSequenceId()))
			if last, ok := l.DedupLast[md.GetProducerName()]; !ok || seq > last {
				l.DedupLast[md.GetProducerName()] = seq
			}
		}
	}
}

// saveCursorLocked writes the persisted state of s (s.persisted).
func (s *Subscription) saveCursorLocked() {
	if d := s.topic.b.disk; d != nil && s.durable && s.topic.name.Persistent {
		d.PutCursor(s.topic.full, s.name, durableSub{Cursor: s.persisted, Created: s.created,
			CursorLedger: s.cursorLedger, FromFirst: s.fromFirst, Properties: s.properties})
	}
}

// forgetSubscriptionLocked deletes a durable subscription's cursor from the
// directory. Called under its topic's lock as it is deleted.
func (t *Topic) forgetSubscriptionLocked(s *Subscription) {
	if d := t.b.disk; d != nil && s.durable && t.name.Persistent {
		d.DeleteCursor(t.full, s.name)
		t.forgetPendingLocked(s)
	}
}

// saveAll writes every loaded topic's ledger and cursors as a clean stop
// leaves them, and waits until it is durable.
func (b *Broker) saveAll() error {
	d := b.disk
	if d == nil {
		return nil
	}
	for _, t := range b.topicsNow(true) {
		t.mu.Lock()
		if !t.released && !t.deleted && t.name.Persistent {
			l := t.ledgerPropertiesLocked()
			l.Subs = map[string]durableSub{}
			for name, s := range t.subs {
				if s.durable {
					l.Subs[name] = durableSub{Cursor: s.cur.Durable(), Created: s.created, CursorLedger: s.cursorLedger,
						FromFirst: s.fromFirst, Properties: s.properties}
				}
			}
			d.PutLedger(t.full, l, true)
		}
		t.mu.Unlock()
	}
	return d.Wait()
}

// receiptWhenDurable sends a SEND's receipt once everything queued before
// it is durable, the SEND's entry first. A write that failed answers
// PersistenceError, as Pulsar does when BookKeeper fails an add; a directory
// closed by a crash answers nothing.
func (c *conn) receiptWhenDurable(producerID, seq, highest, ledger, entry uint64) {
	c.b.disk.Barrier(func(err error) {
		switch {
		case err == nil:
			c.sendFrame(func(dst []byte) []byte {
				return protocol.AppendSendReceipt(dst, producerID, seq, highest, ledger, entry)
			})
		case !errors.Is(err, durable.ErrClosed):
			c.send(persistenceError(producerID, seq, err))
		}
	})
}

// persistenceError is the SEND_ERROR of an entry the disk failed to keep.
func persistenceError(producerID, seq uint64, err error) *pb.BaseCommand {
	return protocol.Base(pb.BaseCommand_SEND_ERROR, &pb.CommandSendError{
		ProducerId: proto.Uint64(producerID), SequenceId: proto.Uint64(seq),
		Error: pb.ServerError_PersistenceError.Enum(), Message: proto.String(err.Error()),
	})
}

// waitDurable waits until what t's broker queued is durable (Publish).
func (t *Topic) waitDurable() error {
	if d := t.b.disk; d != nil && t.name.Persistent {
		return d.Wait()
	}
	return nil
}

// closeDataDir writes what a clean stop leaves and closes the data directory
// of a broker of its own (a cluster's is closed with the cluster).
func (b *Broker) closeDataDir() error {
	if b.disk == nil || b.cfg.store != nil {
		return nil
	}
	err := b.saveAll()
	if errors.Is(err, durable.ErrClosed) {
		err = nil // crashed: nothing more is written
	}
	return errors.Join(err, b.disk.Close())
}

// Crash stops a broker of its own as a killed process stops: its data
// directory is closed first, dropping what was not yet committed (no
// receipt went out for it) and persisting nothing more, then its
// connections are cut. A broker started again on the directory finds what
// Pulsar's standalone finds after a kill: every receipted entry, each
// cursor as last persisted (persist.go). Without a data directory it is
// Close. For a broker of a cluster, use Cluster.Crash.
func (b *Broker) Crash() error {
	if b.disk != nil && b.cfg.store == nil {
		b.disk.Crash()
	}
	return b.Close()
}

// WaitDurable returns once every change made before it (entries, cursors,
// metadata) is durable in the data directory, at once without one. The
// admin API waits so before it answers a request that changed something.
func (b *Broker) WaitDurable() error {
	if b.disk == nil {
		return nil
	}
	err := b.disk.Wait()
	if errors.Is(err, durable.ErrClosed) {
		return nil // stopped or crashed: nothing more will be written
	}
	return err
}

// replayTransactions rebuilds each ledger's transaction buffer from its
// entries, as Pulsar's transaction buffer recovers by reading its topic:
// a transaction with messages is open until its marker, and a marker
// commits or aborts it. A transaction still open in the log stays open when
// its coordinator recovered it (open reports it, datadirtxn.go); any other
// is aborted here, as its coordinator's low water mark would abort it: its
// messages stay hidden.
func replayTransactions(st *store.Store, open func(txn.ID) bool) {
	for _, l := range st.Ledgers {
		var buf *txn.Buffer
		for i, e := range l.Log.Entries {
			switch {
			case e.Marker:
				pl, err := protocol.ParsePayload(e.Data[e.MetaLen:])
				if err != nil || buf == nil {
					continue
				}
				buf.End(e.Txn, pl.Metadata.GetMarkerType() == markerTxnCommit, -1)
			case e.InTxn:
				if buf == nil {
					buf = txn.NewBuffer()
				}
				buf.Appended(e.Txn, l.Log.Base+int64(i))
			}
		}
		if buf == nil {
			continue
		}
		for _, id := range buf.Ongoing() {
			if !open(id) {
				buf.End(id, false, -1)
			}
		}
		l.Buf = buf
	}
}

// DataDirStats returns what the broker's data directory has committed since
// it was opened (zero without one): how many commits, how many changes.
func (b *Broker) DataDirStats() durable.Stats {
	if b.disk == nil {
		return durable.Stats{}
	}
	return b.disk.Stats()
}
