package durable

import (
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/pulsarsim/pulsarsim/store"
)

// The changes a broker queues. Each encodes what it writes when it is
// queued, under the caller's lock, so the Disk's goroutine never reads the
// broker's state.

// AppendEntry queues entry n of topic.
func (d *Disk) AppendEntry(topic string, n int64, e *store.Entry) {
	k, v := entryKey(n), encodeEntry(e)
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketEntries).CreateBucketIfNotExists([]byte(topic))
		if err != nil {
			return err
		}
		return b.Put(k, v)
	}})
}

// FreeEntries queues the freeing of topic's entries below log.Base, with
// the counters of what the log freed.
func (d *Disk) FreeEntries(topic string, log *store.Log) {
	r := logRecord{Base: log.Base, FreedMessages: log.FreedMessages, FreedBytes: log.FreedBytes}
	v := sealJSON(r)
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketLogs).Put([]byte(topic), v); err != nil {
			return err
		}
		b := tx.Bucket(bucketEntries).Bucket([]byte(topic))
		if b == nil {
			return nil
		}
		end := entryKey(r.Base)
		c := b.Cursor()
		for k, _ := c.First(); k != nil && string(k) < string(end); k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}})
}

// PutLedger queues what topic's ledger keeps beside its entries: its
// properties, its compacted view and, when withCursors is set, the cursor
// of every durable subscription (a clean unload or stop persists them all).
func (d *Disk) PutLedger(topic string, l *store.Ledger, withCursors bool) {
	r := ledgerRecord{
		ID: l.ID, Created: l.Created, Terminated: l.Terminated,
		TopicEpoch: l.TopicEpoch, HasEpoch: l.HasEpoch, DedupLast: l.DedupLast, Dedup: l.DedupLast != nil,
		Properties: l.Properties,
	}
	if l.View.Has || l.View.Ran {
		view := l.View
		r.View = &view
	}
	v := sealJSON(r)
	var cursors map[string][]byte
	if withCursors {
		cursors = map[string][]byte{}
		for name, s := range l.Subs {
			cursors[name] = sealJSON(newCursorRecord(s))
		}
	}
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketLedgers).Put([]byte(topic), v); err != nil {
			return err
		}
		if cursors == nil {
			return nil
		}
		parent := tx.Bucket(bucketCursors)
		if parent.Bucket([]byte(topic)) != nil {
			if err := parent.DeleteBucket([]byte(topic)); err != nil {
				return err
			}
		}
		b, err := parent.CreateBucket([]byte(topic))
		if err != nil {
			return err
		}
		for name, v := range cursors {
			if err := b.Put([]byte(name), v); err != nil {
				return err
			}
		}
		return nil
	}})
}

// PutCursor queues the persisted state of one durable subscription.
func (d *Disk) PutCursor(topic, sub string, s store.DurableSub) {
	v := sealJSON(newCursorRecord(s))
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketCursors).CreateBucketIfNotExists([]byte(topic))
		if err != nil {
			return err
		}
		return b.Put([]byte(sub), v)
	}})
}

// DeleteCursor queues the deletion of a subscription.
func (d *Disk) DeleteCursor(topic, sub string) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCursors).Bucket([]byte(topic)); b != nil {
			return b.Delete([]byte(sub))
		}
		return nil
	}})
}

// DeleteLedger queues the deletion of a topic's ledger: entries, cursors
// and properties.
func (d *Disk) DeleteLedger(topic string) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		k := []byte(topic)
		for _, name := range [][]byte{bucketEntries, bucketCursors} {
			if b := tx.Bucket(name); b.Bucket(k) != nil {
				if err := b.DeleteBucket(k); err != nil {
					return err
				}
			}
		}
		if err := tx.Bucket(bucketLogs).Delete(k); err != nil {
			return err
		}
		return tx.Bucket(bucketLedgers).Delete(k)
	}})
}

// PutMetadata queues the store's metadata, as EncodeMetadata encoded it.
func (d *Disk) PutMetadata(v []byte) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyStore, v) }})
}

// PutSecurity queues the authorization state, as EncodeSecurity encoded it.
func (d *Disk) PutSecurity(v []byte) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySecurity, v) }})
}

// PutRecord queues a record of the broker's own under name: what it keeps
// beside the store, encoded as it pleases (the cluster metadata, the
// transactions). It is sealed with a checksum.
func (d *Disk) PutRecord(name string, body []byte) {
	v := seal(body)
	d.enqueue(op{apply: func(tx *bolt.Tx) error { return tx.Bucket(bucketRecords).Put([]byte(name), v) }})
}

// DeleteRecord queues the deletion of the record under name.
func (d *Disk) DeleteRecord(name string) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error { return tx.Bucket(bucketRecords).Delete([]byte(name)) }})
}

// DeleteRecords queues the deletion of every record whose name begins with
// prefix.
func (d *Disk) DeleteRecords(prefix string) {
	d.enqueue(op{apply: func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, _ = c.Seek([]byte(prefix)) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	}})
}
