package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Sync is a sync policy: what has happened to a change when the Disk reports
// it durable (a Barrier behind it runs), named after the BookKeeper journal
// setting it stands for.
type Sync string

const (
	// SyncFsync commits and fsyncs before a change counts as durable, as
	// BookKeeper's journal does with journalSyncData=true (its default):
	// a receipted message survives a process kill and a power loss.
	// Concurrent changes share one fsync (group commit).
	SyncFsync Sync = "fsync"
	// SyncWrite commits into the operating system's page cache without an
	// fsync, as journalSyncData=false: a receipted message survives the
	// process being killed, not the machine losing power. The file grows
	// without one either (bbolt's NoGrowSync): the truncate and fsync bbolt
	// does at each growth keep the file's size across a power loss, which
	// this policy does not promise, and under it that fsync would write out
	// every page dirtied since the last growth while no commit can run.
	SyncWrite Sync = "write"
)

// ParseSync returns the policy named s ("" is SyncFsync).
func ParseSync(s string) (Sync, error) {
	switch Sync(s) {
	case "", SyncFsync:
		return SyncFsync, nil
	case SyncWrite:
		return SyncWrite, nil
	}
	return "", fmt.Errorf("durable: unknown sync policy %q (fsync or write)", s)
}

// FileName is the database's file in the data directory.
const FileName = "pulsarsim.db"

// ErrClosed is the error of a change queued on a closed or crashed Disk.
var ErrClosed = errors.New("durable: the data directory is closed")

// Disk is an open data directory. Its methods may be called from any
// goroutine; each change is queued and committed in the order queued.
type Disk struct {
	db   *bolt.DB
	dir  string
	sync Sync

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []op
	closing bool
	crashed bool
	err     error // the first commit that failed: every later change fails
	done    chan struct{}

	stats Stats // under mu
	// crashed, when set (by tests), runs once Crash has dropped the queue,
	// before it waits for the commit under way.
	crashHook func()
}

// op is one queued change: apply writes it in the commit's transaction; done,
// when set, runs once the commit holding it is durable (or failed).
type op struct {
	apply func(tx *bolt.Tx) error
	done  func(error)
}

// Open opens (or creates) the data directory dir with sync policy policy. A
// directory another process has open is refused after a second.
func Open(dir string, policy Sync) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{
		Timeout:        time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoGrowSync:     policy == SyncWrite,
	})
	if err != nil {
		return nil, fmt.Errorf("durable: opening %s: %w", dir, err)
	}
	db.NoSync = policy == SyncWrite
	if err := db.Update(createBuckets); err != nil {
		db.Close()
		return nil, err
	}
	d := &Disk{db: db, dir: dir, sync: policy, done: make(chan struct{})}
	d.cond = sync.NewCond(&d.mu)
	go d.run()
	return d, nil
}

// Dir is the data directory.
func (d *Disk) Dir() string { return d.dir }

// Policy is the sync policy the directory was opened with.
func (d *Disk) Policy() Sync { return d.sync }

// enqueue queues one change; a closed or failed Disk answers done at once.
func (d *Disk) enqueue(o op) {
	d.mu.Lock()
	if d.closing || d.err != nil {
		err := d.err
		if err == nil {
			err = ErrClosed
		}
		d.mu.Unlock()
		if o.done != nil {
			o.done(err)
		}
		return
	}
	d.queue = append(d.queue, o)
	if len(d.queue) == 1 {
		d.cond.Signal()
	}
	d.mu.Unlock()
}

// Barrier calls done once every change queued before it is durable under
// the sync policy, with the error of its commit if that failed. done runs on
// the Disk's goroutine: it must not block, nor queue changes and wait.
func (d *Disk) Barrier(done func(error)) { d.enqueue(op{done: done}) }

// Wait returns once every change queued before it is durable.
func (d *Disk) Wait() error {
	ch := make(chan error, 1)
	d.Barrier(func(err error) { ch <- err })
	return <-ch
}

// run is the Disk's goroutine: it commits what is queued, a batch at a time.
func (d *Disk) run() {
	defer close(d.done)
	var batch []op
	for {
		d.mu.Lock()
		for len(d.queue) == 0 && !d.closing {
			d.cond.Wait()
		}
		if len(d.queue) == 0 {
			d.mu.Unlock()
			return
		}
		batch, d.queue = d.queue, batch[:0]
		d.mu.Unlock()
		changes := uint64(0)
		for _, o := range batch {
			if o.apply != nil {
				changes++
			}
		}
		// A batch of barriers alone has nothing to commit: what was queued
		// before them is committed already, batches being committed in
		// order, so they are answered without a transaction (and its sync).
		var err error
		if changes > 0 {
			err = d.db.Update(func(tx *bolt.Tx) error {
				for _, o := range batch {
					if o.apply == nil {
						continue
					}
					if err := o.apply(tx); err != nil {
						return err
					}
				}
				return nil
			})
		}
		d.mu.Lock()
		if changes > 0 {
			d.stats.Commits++
		}
		d.stats.Changes += changes
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("durable: commit failed: %w", err)
		}
		err, crashed := d.err, d.crashed
		d.mu.Unlock()
		for i, o := range batch {
			if o.done != nil && !crashed {
				o.done(err)
			}
			batch[i] = op{}
		}
	}
}

// Close commits what is queued and closes the directory.
func (d *Disk) Close() error {
	d.mu.Lock()
	if d.crashed {
		d.mu.Unlock()
		return nil // Crash closed it
	}
	d.closing = true
	d.cond.Signal()
	d.mu.Unlock()
	<-d.done
	err := d.db.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	return errors.Join(d.err, err)
}

// Crash closes the directory as a killed process leaves it: what is queued
// and not yet committed is dropped, and no Barrier runs any more. A commit
// under way completes or not, atomically.
func (d *Disk) Crash() {
	d.mu.Lock()
	d.closing, d.crashed = true, true
	d.queue = nil
	d.cond.Signal()
	d.mu.Unlock()
	if d.crashHook != nil {
		d.crashHook()
	}
	<-d.done
	_ = d.db.Close()
}

// Stats counts what a Disk has committed since it was opened.
type Stats struct {
	// Commits is the number of transactions committed: with group commit,
	// fewer than the changes.
	Commits uint64
	// Changes is the number of changes (entries, cursors, records...)
	// those transactions wrote.
	Changes uint64
}

// Stats returns what the Disk has committed so far.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Commits returns how many transactions the Disk has committed: with group
// commit, fewer than the changes queued.
func (d *Disk) Commits() uint64 { return d.Stats().Commits }
