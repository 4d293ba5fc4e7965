// Command storecompare measures the embedded stores pulsarsim's data
// directory could be built on (BENCHMARKS.md, "A data directory"): bbolt,
// pebble, goleveldb and badger, each written through one group-commit
// writer as package durable writes (every value queued while the last
// commit ran goes into the next one), and read back whole as a recovery
// reads. It is a module of its own so that the stores not chosen stay out
// of pulsarsim's go.mod.
//
//	go run . bbolt sync      # 20,000 1 KiB values, fsync per commit, 1 and 8 writers
//	go run . bbolt nosync    # 200,000, no fsync
//	go run . bbolt recover   # write 1,000,000 100-byte values, then time open + scan
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/syndtr/goleveldb/leveldb"
	lopt "github.com/syndtr/goleveldb/leveldb/opt"
	bolt "go.etcd.io/bbolt"
)

type kv struct{ k, v []byte }

type db interface {
	write(batch []kv, sync bool) error
	scan() (int, error)
	close() error
}

type boltDB struct{ d *bolt.DB }

func (b *boltDB) write(batch []kv, sync bool) error {
	b.d.NoSync = !sync
	return b.d.Update(func(tx *bolt.Tx) error {
		bk, _ := tx.CreateBucketIfNotExists([]byte("e"))
		for _, x := range batch {
			if err := bk.Put(x.k, x.v); err != nil {
				return err
			}
		}
		return nil
	})
}
func (b *boltDB) scan() (int, error) {
	n := 0
	err := b.d.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("e")).ForEach(func(k, v []byte) error { n++; return nil })
	})
	return n, err
}
func (b *boltDB) close() error { return b.d.Close() }

type pebbleDB struct{ d *pebble.DB }

func (p *pebbleDB) write(batch []kv, sync bool) error {
	bt := p.d.NewBatch()
	for _, x := range batch {
		bt.Set(x.k, x.v, nil)
	}
	o := pebble.NoSync
	if sync {
		o = pebble.Sync
	}
	return bt.Commit(o)
}
func (p *pebbleDB) scan() (int, error) {
	it, err := p.d.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		_ = it.Value()
		n++
	}
	return n, it.Close()
}
func (p *pebbleDB) close() error { return p.d.Close() }

type levelDB struct{ d *leveldb.DB }

func (l *levelDB) write(batch []kv, sync bool) error {
	var b leveldb.Batch
	for _, x := range batch {
		b.Put(x.k, x.v)
	}
	return l.d.Write(&b, &lopt.WriteOptions{Sync: sync})
}
func (l *levelDB) scan() (int, error) {
	it := l.d.NewIterator(nil, nil)
	n := 0
	for it.Next() {
		_ = it.Value()
		n++
	}
	it.Release()
	return n, it.Error()
}
func (l *levelDB) close() error { return l.d.Close() }

type badgerDB struct{ d *badger.DB }

func (b *badgerDB) write(batch []kv, sync bool) error {
	return b.d.Update(func(tx *badger.Txn) error {
		for _, x := range batch {
			if err := tx.Set(x.k, x.v); err != nil {
				return err
			}
		}
		return nil
	})
}
func (b *badgerDB) scan() (int, error) {
	n := 0
	err := b.d.View(func(tx *badger.Txn) error {
		it := tx.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_, _ = it.Item().ValueCopy(nil)
			n++
		}
		return nil
	})
	return n, err
}
func (b *badgerDB) close() error { return b.d.Close() }

func open(kind, dir string, sync bool) db {
	switch kind {
	case "bbolt":
		os.MkdirAll(dir, 0o755)
		d, err := bolt.Open(dir+"/db", 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		must(err)
		return &boltDB{d}
	case "pebble":
		d, err := pebble.Open(dir, &pebble.Options{})
		must(err)
		return &pebbleDB{d}
	case "goleveldb":
		d, err := leveldb.OpenFile(dir, nil)
		must(err)
		return &levelDB{d}
	case "badger":
		o := badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(sync)
		d, err := badger.Open(o)
		must(err)
		return &badgerDB{d}
	}
	panic(kind)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func key(p, i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(p))
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return k
}

// group commit: producers enqueue, one committer writes everything pending in one batch.
func produce(d db, producers, per, size int, syncOn bool) time.Duration {
	type req struct {
		x    kv
		done chan struct{}
	}
	var mu sync.Mutex
	var pending []req
	wake := make(chan struct{}, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		for {
			select {
			case <-wake:
			case <-stop:
				return
			}
			for {
				mu.Lock()
				b := pending
				pending = nil
				mu.Unlock()
				if len(b) == 0 {
					break
				}
				batch := make([]kv, len(b))
				for i, r := range b {
					batch[i] = r.x
				}
				must(d.write(batch, syncOn))
				for _, r := range b {
					close(r.done)
				}
			}
		}
	}()
	val := make([]byte, size)
	start := time.Now()
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			// each producer keeps up to 100 messages in flight (pulsar-client-go's pending queue)
			inflight := make(chan chan struct{}, 100)
			done := make(chan struct{})
			go func() {
				for c := range inflight {
					<-c
				}
				close(done)
			}()
			for i := 0; i < per; i++ {
				c := make(chan struct{})
				mu.Lock()
				pending = append(pending, req{kv{key(p, i), val}, c})
				mu.Unlock()
				select {
				case wake <- struct{}{}:
				default:
				}
				inflight <- c
			}
			close(inflight)
			<-done
		}(p)
	}
	wg.Wait()
	el := time.Since(start)
	close(stop)
	return el
}

func rss() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss / 1024
}

func main() {
	kind, mode := os.Args[1], os.Args[2]
	dir, _ := os.MkdirTemp("", "storecompare-"+kind)
	defer os.RemoveAll(dir)
	switch mode {
	case "sync", "nosync":
		syncOn := mode == "sync"
		for _, producers := range []int{1, 8} {
			d := open(kind, dir+fmt.Sprint(producers), syncOn)
			per := 20000 / producers
			if !syncOn {
				per = 200000 / producers
			}
			el := produce(d, producers, per, 1024, syncOn)
			n := producers * per
			fmt.Printf("%s %s producers=%d: %d msgs %.0f msg/s\n", kind, mode, producers, n, float64(n)/el.Seconds())
			d.close()
			os.RemoveAll(dir + fmt.Sprint(producers))
		}
	case "recover":
		d := open(kind, dir, false)
		val := make([]byte, 100)
		const N = 1000000
		for i := 0; i < N; i += 10000 {
			b := make([]kv, 0, 10000)
			for j := i; j < i+10000; j++ {
				b = append(b, kv{key(0, j), val})
			}
			must(d.write(b, false))
		}
		d.close()
		runtime.GC()
		start := time.Now()
		d = open(kind, dir, false)
		n, err := d.scan()
		must(err)
		el := time.Since(start)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Printf("%s recover: %d entries in %v, maxrss %d MiB\n", kind, n, el, rss())
		d.close()
	}
}
