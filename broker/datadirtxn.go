package broker

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/txn"
)

// With a data directory the transactions are kept as Pulsar persists them:
//   - each coordinator's transaction log: the last sequence number it handed
//     out, and each transaction it has not forgotten (status, owner, when
//     opened, timeout, the partitions and subscriptions registered), written
//     under the coordinators' lock as it changes and deleted as the
//     transaction is forgotten;
//   - each subscription's pending-ack store: what transactions hold on it,
//     written under its topic's lock as it changes.
// A broker started on the directory recovers the coordinators with their
// open transactions (their timeouts still run from when they were opened),
// keeps the topics' messages of those transactions pending in the
// transaction buffers rebuilt from the entries, and holds their
// acknowledgements again; a transaction that was being committed or
// aborted is ended again, as Pulsar's recovered coordinator ends it.

// The names of the transaction records.
const (
	txnCoordinatorRecords = "txn-coordinator/" // + coordinator id: coordinatorLog
	txnRecords            = "txn/"             // + coordinator id / sequence: txn.Txn
	pendingAckRecords     = "pending-ack/"     // + topic NUL subscription: txn.PendingState
)

// coordinatorLog is what a coordinator's log keeps beside its transactions.
type coordinatorLog struct {
	Last int64
}

func txnRecordName(id txn.ID) string {
	return fmt.Sprintf("%s%d/%020d", txnRecords, id.Most, id.Least)
}

func pendingAckRecordName(topic, sub string) string {
	return pendingAckRecords + topic + "\x00" + sub
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("broker: encoding a record: " + err.Error()) // only plain values are encoded
	}
	return b
}

// saveCoordinatorLocked writes what coordinator c's log keeps beside its
// transactions. The caller holds the coordinators' lock.
func (b *Broker) saveCoordinatorLocked(c *txn.Coordinator) {
	if d := b.disk; d != nil {
		d.PutRecord(txnCoordinatorRecords+strconv.FormatUint(c.ID(), 10), mustJSON(coordinatorLog{Last: c.Last()}))
	}
}

// saveTxnLocked writes transaction id as coordinator c has it, or deletes
// it once c forgot it. The caller holds the coordinators' lock.
func (b *Broker) saveTxnLocked(c *txn.Coordinator, id txn.ID) {
	d := b.disk
	if d == nil {
		return
	}
	if t, err := c.Get(id); err == nil {
		d.PutRecord(txnRecordName(id), mustJSON(t))
	} else {
		d.DeleteRecord(txnRecordName(id))
	}
}

// savePendingLocked writes the subscription's pending acknowledgements.
// Called under its topic's lock after they changed.
func (s *Subscription) savePendingLocked() {
	t := s.topic
	d := t.b.disk
	if d == nil || !s.durable || !t.name.Persistent {
		return
	}
	name := pendingAckRecordName(t.full, s.name)
	if s.pending == nil || s.pending.Empty() {
		d.DeleteRecord(name)
		return
	}
	d.PutRecord(name, mustJSON(s.pending.State()))
}

// forgetPendingLocked deletes a subscription's pending-ack store as the
// subscription is deleted.
func (t *Topic) forgetPendingLocked(s *Subscription) {
	if d := t.b.disk; d != nil && s.durable && t.name.Persistent {
		d.DeleteRecord(pendingAckRecordName(t.full, s.name))
	}
}

// forgetTopicPending deletes the pending-ack stores of a deleted topic.
func (b *Broker) forgetTopicPending(topic string) {
	if b.disk != nil {
		b.disk.DeleteRecords(pendingAckRecords + topic + "\x00")
	}
}

// loadTransactions recovers the coordinators and the pending acks from d
// into s, then rebuilds the topics' transaction buffers: the messages of a
// transaction the coordinators still have stay pending, those of any other
// open one (it ended without its marker being kept, or the directory was
// written without transaction records) are aborted, with what it held.
func (s *shared) loadTransactions(d *durable.Disk, maxActive int) error {
	logs, err := d.Records(txnCoordinatorRecords)
	if err != nil {
		return err
	}
	recs, err := d.Records(txnRecords)
	if err != nil {
		return err
	}
	pending, err := d.Records(pendingAckRecords)
	if err != nil {
		return err
	}
	byCoord := map[uint64][]txn.Txn{}
	last := map[uint64]int64{}
	for name, v := range logs {
		tc, err := strconv.ParseUint(strings.TrimPrefix(name, txnCoordinatorRecords), 10, 64)
		var l coordinatorLog
		if err == nil {
			err = json.Unmarshal(v, &l)
		}
		if err != nil {
			return fmt.Errorf("broker: transaction coordinator record %q: %w", name, err)
		}
		last[tc] = l.Last
	}
	for name, v := range recs {
		var t txn.Txn
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("broker: transaction record %q: %w", name, err)
		}
		byCoord[t.ID.Most] = append(byCoord[t.ID.Most], t)
		if _, ok := last[t.ID.Most]; !ok {
			last[t.ID.Most] = -1
		}
	}
	s.txns.coords = map[uint64]*txn.Coordinator{}
	s.txns.records = map[txn.ID]*txnRecord{}
	open := map[txn.ID]bool{}
	for tc, l := range last {
		c := txn.RestoreCoordinator(tc, maxActive, l, byCoord[tc])
		s.txns.coords[tc] = c
		for _, t := range c.Active() {
			open[t.ID] = true
			s.txns.records[t.ID] = &txnRecord{id: t.ID, status: t.Status, owner: t.Owner,
				opened: time.UnixMilli(t.OpenedAt), timeout: time.Duration(t.Timeout) * time.Millisecond,
				timedOut: t.TimedOut, partitions: t.Produced, subs: t.Acked}
			if t.Status == txn.Committing || t.Status == txn.Aborting {
				s.txns.resume = append(s.txns.resume, t)
			}
		}
	}
	for name, v := range pending {
		topic, sub, ok := strings.Cut(strings.TrimPrefix(name, pendingAckRecords), "\x00")
		l := s.data.Ledgers[topic]
		if !ok || l == nil {
			continue
		}
		ds, ok := l.Subs[sub]
		if !ok {
			continue
		}
		var st txn.PendingState
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("broker: pending acks of %s %s: %w", topic, sub, err)
		}
		p := txn.RestorePendingAcks(topic, sub, int64(l.ID), st)
		for _, ts := range p.Transactions() {
			if !open[ts.ID] {
				// Ended unheard: what it held is given back (its cumulative
				// acknowledgement first, then its individual ones).
				p.Abort(ts.ID)
				if ts.Cumulative != nil {
					p.Abort(ts.ID)
				}
			}
		}
		if !p.Empty() {
			ds.Pending = p
			l.Subs[sub] = ds
		}
	}
	replayTransactions(s.data, func(id txn.ID) bool { return open[id] })
	return nil
}

// resumeTxnEnds ends again, once the broker runs its timers, each
// transaction that was being committed or aborted when the broker stopped,
// as Pulsar's recovered coordinator does: its topics and subscriptions are
// told (again), and it is forgotten.
func (b *Broker) resumeTxnEnds() {
	b.txns.mu.Lock()
	resume := b.txns.resume
	b.txns.resume = nil
	b.txns.mu.Unlock()
	if len(resume) == 0 {
		return
	}
	b.timers.addTask(b.nowMillis(), func(int64) {
		for _, t := range resume {
			if err := b.endTxn(t.ID, t.Status == txn.Committing, false, "", false); err != nil {
				b.cfg.logger.Info("transaction recovery", "txn", t.ID.String(), "err", err)
			}
		}
	})
}
