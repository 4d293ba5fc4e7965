package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// pos is an entry's position in a topic.
type pos struct{ ledger, entry int64 }

func (p pos) less(q pos) bool {
	return p.ledger < q.ledger || p.ledger == q.ledger && p.entry < q.entry
}

func (p pos) String() string { return fmt.Sprintf("%d:%d", p.ledger, p.entry) }

func posOf(id pulsar.MessageID) pos { return pos{id.LedgerID(), id.EntryID()} }

// idString names a message id with its batch index.
func idString(id pulsar.MessageID) string {
	return fmt.Sprintf("%d:%d:%d", id.LedgerID(), id.EntryID(), id.BatchIdx())
}

// cumAck is a cumulative acknowledgement the broker confirmed: every entry
// up to through is acknowledged since at.
type cumAck struct {
	through pos
	at      time.Time
}

// partialBatch is what a subscription acknowledged of one batch entry in its
// latest delivery: pulsar-client-go sends the acknowledgement of the entry
// only once every message of the batch is acknowledged.
type partialBatch struct {
	acked map[int32]bool
}

// subRecord is what one subscription did.
type subRecord struct {
	topic, name string
	// acked maps an entry to when its individual acknowledgement was
	// confirmed.
	acked map[pos]time.Time
	// cum lists the confirmed cumulative acknowledgements, in order.
	cum []cumAck
	// sent holds the entries an individual acknowledgement was sent for,
	// and sentCum the furthest entry a cumulative one was sent through,
	// confirmed or not: the broker may have applied one whose response a
	// kill cut off.
	sent    map[pos]bool
	sentCum pos
	anyCum  bool
	// lostCum holds the cumulative acknowledgements a crash lost, for the
	// entries from lostFrom on that have not come again yet.
	lostCum  []cumAck
	lostFrom pos
	batches  map[pos]*partialBatch
	// received holds the keys the subscription delivered.
	received   map[string]bool
	deliveries int64
	confirmed  int64 // acknowledgements confirmed
	nacks      int64
}

// forgotten is an acknowledgement a crash lost.
type forgotten struct {
	sub      string
	entry    pos
	ackedAt  time.Time
	age      time.Duration // from the confirmation to the kill after it
	killSeen int           // the kill after which it came back
	via      string        // individual or cumulative
}

// record holds everything the run observed, and writes it to a journal that
// is synced as it goes.
type record struct {
	mu sync.Mutex

	journal *bufio.Writer
	file    *os.File

	// receipts maps a key to the message id its receipt named.
	receipts map[string]string
	// receiptTopic maps a key to its topic.
	receiptTopic map[string]string
	// outstanding holds the keys sent whose receipt has not come.
	outstanding map[string]string // key to topic
	// inFlightAtKill holds the keys outstanding at some kill: a producer may
	// resend them, so they may be stored twice without deduplication.
	inFlightAtKill map[string]bool
	sent, failed   int64
	closed         int64 // failed because the client closed the producer
	firstClosed    string
	dupReceipts    int64 // receipts naming no position (a duplicate the broker dropped)

	kills []time.Time
	subs  map[string]*subRecord // topic + "/" + name

	forgotten  []forgotten
	ackedTwice int64 // redeliveries of an acknowledged entry with no kill in between
}

func newRecord(path string) (*record, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	r := &record{
		file:           f,
		journal:        bufio.NewWriter(f),
		receipts:       map[string]string{},
		receiptTopic:   map[string]string{},
		outstanding:    map[string]string{},
		inFlightAtKill: map[string]bool{},
		subs:           map[string]*subRecord{},
	}
	return r, nil
}

// syncLoop flushes and syncs the journal every interval until done closes.
func (r *record) syncLoop(done <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			r.sync()
			return
		case <-t.C:
			r.sync()
		}
	}
}

func (r *record) sync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.journal.Flush()
	_ = r.file.Sync()
}

func (r *record) close() {
	r.sync()
	r.file.Close()
}

func (r *record) logf(format string, args ...any) {
	fmt.Fprintf(r.journal, "%d ", time.Now().UnixNano())
	fmt.Fprintf(r.journal, format, args...)
	r.journal.WriteByte('\n')
}

func (r *record) sub(topic, name string) *subRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := topic + "/" + name
	s := r.subs[k]
	if s == nil {
		s = &subRecord{topic: topic, name: name, acked: map[pos]time.Time{}, sent: map[pos]bool{},
			batches: map[pos]*partialBatch{}, received: map[string]bool{}}
		r.subs[k] = s
	}
	return s
}

func (r *record) sending(topic, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outstanding[key] = topic
	r.sent++
}

func (r *record) receipt(topic, key string, id pulsar.MessageID, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.outstanding, key)
	if err != nil {
		r.failed++
		if errors.Is(err, pulsar.ErrProducerClosed) {
			if r.closed++; r.closed == 1 {
				r.firstClosed = fmt.Sprintf("%s: %v", key, err)
			}
		}
		r.logf("F %s %s %v", topic, key, err)
		return
	}
	if id.LedgerID() < 0 || id.EntryID() < 0 {
		// Pulsar answers a duplicate it dropped with the position -1:-1.
		r.dupReceipts++
		r.logf("D %s %s", topic, key)
		return
	}
	r.receipts[key] = idString(id)
	r.receiptTopic[key] = topic
	r.logf("R %s %s %s", topic, key, idString(id))
}

// killed notes a kill: what was outstanding may be resent.
func (r *record) killed(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.outstanding {
		r.inFlightAtKill[k] = true
	}
	r.kills = append(r.kills, at)
	r.logf("K %d outstanding=%d", len(r.kills), len(r.outstanding))
}

// killAfter returns the index of the first kill after t, or -1.
func (r *record) killAfter(t time.Time) int {
	i := sort.Search(len(r.kills), func(i int) bool { return r.kills[i].After(t) })
	if i == len(r.kills) {
		return -1
	}
	return i
}

// delivered notes a delivery on s and checks it against the
// acknowledgements the broker confirmed before.
func (r *record) delivered(s *subRecord, key string, id pulsar.MessageID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.deliveries++
	s.received[key] = true
	p := posOf(id)
	at, ok := s.acked[p]
	via := "individual"
	ci := sort.Search(len(s.cum), func(i int) bool { return !s.cum[i].through.less(p) })
	if ci < len(s.cum) && (!ok || s.cum[ci].at.Before(at)) {
		at, ok, via = s.cum[ci].at, true, "cumulative"
	}
	li := -1
	if !ok && !p.less(s.lostFrom) {
		li = sort.Search(len(s.lostCum), func(i int) bool { return !s.lostCum[i].through.less(p) })
		if li < len(s.lostCum) {
			at, ok, via = s.lostCum[li].at, true, "cumulative"
		}
	}
	if b := s.batches[p]; b != nil && b.acked[id.BatchIdx()] {
		// The batch comes again: pulsar-client-go tracks its acknowledgements
		// afresh.
		delete(s.batches, p)
	}
	if !ok {
		return
	}
	k := r.killAfter(at)
	if k < 0 {
		r.ackedTwice++
		r.logf("T %s %s %s acked %s", s.topic, s.name, idString(id), at.Format(time.RFC3339Nano))
		return
	}
	if id.BatchIdx() > 0 {
		return // one finding per entry: its first message
	}
	f := forgotten{sub: s.topic + "/" + s.name, entry: p, ackedAt: at, age: r.kills[k].Sub(at), killSeen: k + 1, via: via}
	r.forgotten = append(r.forgotten, f)
	r.logf("L %s %s %s %s acked %s age %s kill %d", s.topic, s.name, via, p, at.Format(time.RFC3339Nano), f.age, k+1)
	// It is delivered again: from now on it counts as unacknowledged, and so
	// do the entries after it that the cumulative acknowledgements covered
	// (they are still reported as forgotten when they come, once each).
	delete(s.acked, p)
	switch {
	case ci < len(s.cum) && via == "cumulative" && li < 0:
		s.lostCum = append([]cumAck(nil), s.cum[ci:]...)
		s.cum = s.cum[:ci:ci]
		// What comes before p is still acknowledged: the broker resumes the
		// subscription after it.
		if before := (pos{p.ledger, p.entry - 1}); p.entry > 0 && (ci == 0 || s.cum[ci-1].through.less(before)) {
			s.cum = append(s.cum, cumAck{through: before, at: s.lostCum[0].at})
		}
		s.lostFrom = pos{p.ledger, p.entry + 1}
	case li >= 0:
		s.lostFrom = pos{p.ledger, p.entry + 1}
	}
}

// ackConfirmed notes an individual acknowledgement of id the broker
// confirmed at. A batch entry counts once all its messages are.
func (r *record) ackConfirmed(s *subRecord, id pulsar.MessageID, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.confirmed++
	p := posOf(id)
	if size := id.BatchSize(); size > 1 {
		b := s.batches[p]
		if b == nil {
			b = &partialBatch{acked: map[int32]bool{}}
			s.batches[p] = b
		}
		b.acked[id.BatchIdx()] = true
		if len(b.acked) < int(size) {
			return
		}
		delete(s.batches, p)
	}
	s.acked[p] = at
	r.logf("A %s %s %s", s.topic, s.name, p)
}

// cumulativeConfirmed notes a cumulative acknowledgement of id the broker
// confirmed at. Of a batch, pulsar-client-go acknowledges the entry only
// with its last message, and the entry before otherwise.
func (r *record) cumulativeConfirmed(s *subRecord, id pulsar.MessageID, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.confirmed++
	p := posOf(id)
	if size := id.BatchSize(); size > 1 && id.BatchIdx() < size-1 {
		p.entry--
	}
	if n := len(s.cum); n > 0 && !s.cum[n-1].through.less(p) {
		return
	}
	s.cum = append(s.cum, cumAck{through: p, at: at})
	r.logf("C %s %s %s", s.topic, s.name, p)
}

func (r *record) nacked(s *subRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.nacks++
}

// receiptsOf returns a copy of the receipts of topic's messages.
func (r *record) receiptsOf(topic string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, id := range r.receipts {
		if r.receiptTopic[k] == topic {
			out[k] = id
		}
	}
	return out
}

// ackSent notes an individual acknowledgement of id about to be sent.
func (r *record) ackSent(s *subRecord, id pulsar.MessageID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.sent[posOf(id)] = true
}

// cumulativeSent notes a cumulative acknowledgement of id about to be
// sent (the entry it covers counted as cumulativeConfirmed counts it).
func (r *record) cumulativeSent(s *subRecord, id pulsar.MessageID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := posOf(id)
	if size := id.BatchSize(); size > 1 && id.BatchIdx() < size-1 {
		p.entry--
	}
	if !s.anyCum || s.sentCum.less(p) {
		s.sentCum, s.anyCum = p, true
	}
}

// ackedByAll reports whether every subscription of topic may have
// acknowledged the entry at p: Pulsar may then have deleted it (a ledger
// whose entries every cursor has acknowledged is trimmed, without
// retention), and a reader from the earliest position no longer reads it.
// An acknowledgement counts once it was sent, confirmed or not: one whose
// response a kill cut off may have been applied and persisted.
func (r *record) ackedByAll(topic string, p pos) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.subs {
		if s.topic != topic {
			continue
		}
		n++
		if _, ok := s.acked[p]; ok || s.sent[p] || s.anyCum && !s.sentCum.less(p) {
			continue
		}
		if i := sort.Search(len(s.cum), func(i int) bool { return !s.cum[i].through.less(p) }); i < len(s.cum) {
			continue
		}
		return false
	}
	return n > 0
}

func (r *record) closedSends() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *record) mayBeDuplicate(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlightAtKill[key]
}
