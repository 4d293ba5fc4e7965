package durable

import (
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/store"
)

// Recovery says what Load found.
type Recovery struct {
	// Metadata is set when the directory held metadata: it is not new.
	Metadata bool
	Topics   int // ledgers read
	Entries  int // entries read
	// Cut counts the entries cut from the tails of the logs: a record that
	// did not check out, and every entry after it.
	Cut int
}

// Appender appends an entry to a log being rebuilt, closing its blocks as
// the broker does (store.Log.Append with the broker's block limits).
type Appender func(l *store.Log, e *store.Entry)

// Load fills st with what the directory holds: the metadata when it was
// ever written (st keeps what it has otherwise: a new directory starts as a
// new standalone), and every ledger with its entries and cursors. An entry
// whose record does not check out is cut from its log with every entry
// after it, on disk too. Call it before queueing any change.
func (d *Disk) Load(st *store.Store, appendEntry Appender) (Recovery, error) {
	var rec Recovery
	err := d.db.Update(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyStore); v != nil {
			rec.Metadata = true
			if err := decodeMeta(v, st); err != nil {
				return fmt.Errorf("durable: the metadata: %w", err)
			}
		}
		if v := tx.Bucket(bucketMeta).Get(keySecurity); v != nil {
			if err := decodeSecurity(v, &st.Security); err != nil {
				return fmt.Errorf("durable: the permissions: %w", err)
			}
		}
		return tx.Bucket(bucketLedgers).ForEach(func(k, v []byte) error {
			topic := string(k)
			var lr ledgerRecord
			if err := unsealJSON(v, &lr); err != nil {
				return fmt.Errorf("durable: the ledger of %s: %w", topic, err)
			}
			l := &store.Ledger{
				ID: lr.ID, Created: lr.Created, Terminated: lr.Terminated,
				TopicEpoch: lr.TopicEpoch, HasEpoch: lr.HasEpoch, DedupLast: lr.DedupLast,
				Properties: lr.Properties,
				Subs:       map[string]store.DurableSub{}, Log: &store.Log{},
			}
			if lr.Dedup && l.DedupLast == nil {
				l.DedupLast = map[string]int64{}
			}
			if lr.View != nil {
				l.View = *lr.View
				l.View.Ran = false // a topic loaded anew has not run a compaction
			}
			if v := tx.Bucket(bucketLogs).Get(k); v != nil {
				var r logRecord
				if err := unsealJSON(v, &r); err != nil {
					return fmt.Errorf("durable: the log of %s: %w", topic, err)
				}
				l.Log.Base, l.Log.FreedMessages, l.Log.FreedBytes = r.Base, r.FreedMessages, r.FreedBytes
				l.Log.TotalBytes = r.FreedBytes
			}
			cut, err := loadEntries(tx, k, l.Log, appendEntry)
			if err != nil {
				return err
			}
			rec.Cut += cut
			rec.Entries += len(l.Log.Entries)
			if b := tx.Bucket(bucketCursors).Bucket(k); b != nil {
				err := b.ForEach(func(name, v []byte) error {
					var r cursorRecord
					if err := unsealJSON(v, &r); err != nil {
						return fmt.Errorf("durable: cursor %s of %s: %w", name, topic, err)
					}
					l.Subs[string(name)] = store.DurableSub{
						Cursor:  cursor.Restore(r.MarkDelete, r.Acked, r.AckSets),
						Created: r.Created, CursorLedger: r.CursorLedger, FromFirst: r.FromFirst,
						Properties: r.Properties,
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			if l.ID >= st.NextLedger {
				st.NextLedger = l.ID + 1
			}
			st.Ledgers[topic] = l
			rec.Topics++
			return nil
		})
	})
	return rec, err
}

// loadEntries reads a topic's entries from log.Base on into log, cutting
// the tail from the first entry that is missing or does not check out.
func loadEntries(tx *bolt.Tx, topic []byte, log *store.Log, appendEntry Appender) (cut int, err error) {
	b := tx.Bucket(bucketEntries).Bucket(topic)
	if b == nil {
		return 0, nil
	}
	c := b.Cursor()
	next := log.Base
	k, v := c.Seek(entryKey(log.Base))
	for ; k != nil; k, v = c.Next() {
		if len(k) != 8 || int64(binary.BigEndian.Uint64(k)) != next {
			break
		}
		e, err := decodeEntry(v)
		if err != nil {
			break
		}
		appendEntry(log, e)
		next++
	}
	// Whatever follows is a torn tail: cut it.
	for ; k != nil; k, _ = c.Seek(entryKey(next)) {
		if err := c.Delete(); err != nil {
			return cut, err
		}
		cut++
	}
	return cut, nil
}

// Records returns the bodies of the records PutRecord wrote whose names
// begin with prefix, by name. A record that does not check out is an
// error: it was committed whole or not at all.
func (d *Disk) Records(prefix string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := d.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, v = c.Next() {
			body, err := unseal(v)
			if err != nil {
				return fmt.Errorf("durable: record %s: %w", k, err)
			}
			out[string(k)] = append([]byte(nil), body...)
		}
		return nil
	})
	return out, err
}
