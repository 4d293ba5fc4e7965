package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Message deduplication, as Pulsar 4.0's MessageDeduplication does it on a
// persistent topic whose DeduplicationEnabled policy is on (topic over
// namespace over the broker's brokerDeduplicationEnabled, WithDeduplication).
//
// The topic keeps, per producer name, the highest sequence id it stored. A
// SEND whose sequence id is not above it is not stored: it is answered with
// a SEND_RECEIPT whose message id is -1:-1. A SEND stored counts with its
// highest sequence id: CommandSend.highest_sequence_id when it is set and
// not below sequence_id, else sequence_id (Pulsar does not add the batch's
// size). Only the last chunk of a chunked message is checked and counted;
// its other chunks are always stored. PRODUCER_SUCCESS carries the highest
// sequence id of the producer's name as last_sequence_id (-1 when none), so
// that a producer that comes back under its name goes on after it.
//
// Turning deduplication on starts with no sequence ids known (Pulsar opens
// its dedup cursor at the end of the topic, so the messages already there
// do not count); turning it off forgets them. Pulsar keeps the sequence id
// of a producer name until no producer of that name has been connected for
// 6 hours (brokerDeduplicationProducerInactivityTimeoutMinutes), checked
// every 2 hours; so does this, on the broker clock.
//
// Pulsar answers a resend that arrives while the first copy is still being
// written with SEND_ERROR ("cannot determine whether the message is a
// duplicate"); pulsarsim stores a SEND before it reads the next one, so
// that never happens here.

// WithDeduplication sets Pulsar's brokerDeduplicationEnabled: the
// deduplication of every topic whose topic and namespace policies leave
// DeduplicationEnabled unset. Default false, as Pulsar's.
func WithDeduplication(enabled bool) Option {
	return func(c *config) { c.dedup = enabled }
}

// dedupInactivity is how long a producer name keeps its sequence id with no
// producer of that name connected (brokerDeduplicationProducerInactivityTimeoutMinutes),
// and dedupPurgeEvery how often that is checked (a third of it, as Pulsar).
const (
	dedupInactivity = 6 * time.Hour
	dedupPurgeEvery = dedupInactivity / 3
)

// dedup is a topic's deduplication state, under the topic's lock.
type dedup struct {
	on   bool                 // in effect
	last map[string]int64     // by producer name: the highest sequence id stored
	idle map[string]time.Time // producer names with no producer connected, since when
}

// dedupLocked returns the topic's deduplication state, turned on or off
// first when the policy in force says otherwise.
func (t *Topic) dedupLocked() *dedup {
	want := t.name.Persistent && *t.policiesLocked().DeduplicationEnabled
	if want != t.dedup.on {
		t.dedup = dedup{on: want}
		if want {
			t.dedup.last = map[string]int64{}
			t.dedup.idle = map[string]time.Time{}
		}
		t.saveLedgerLocked()
	}
	return &t.dedup
}

// lastSequenceIDLocked is PRODUCER_SUCCESS.last_sequence_id for a producer
// of this name: the highest sequence id stored for it, -1 when none.
func (t *Topic) lastSequenceIDLocked(name string) int64 {
	d := t.dedupLocked()
	if seq, ok := d.last[name]; ok {
		return seq
	}
	return -1
}

// isDuplicateLocked reports whether a SEND of the named producer repeats a
// sequence id already stored. When it does not, seq is the sequence id to
// record once it is stored (recordSentLocked), -1 for none.
func (t *Topic) isDuplicateLocked(name string, s *pb.CommandSend, md *pb.MessageMetadata) (dup bool, seq int64) {
	d := t.dedupLocked()
	if !d.on || s.GetMarker() {
		return false, -1
	}
	if s.GetIsChunk() && md.GetChunkId() != md.GetNumChunksFromMsg()-1 {
		return false, -1
	}
	if last, ok := d.last[name]; ok && int64(s.GetSequenceId()) <= last {
		return true, -1
	}
	if s.HighestSequenceId != nil && s.GetHighestSequenceId() >= s.GetSequenceId() {
		return false, int64(s.GetHighestSequenceId())
	}
	return false, int64(s.GetSequenceId())
}

// recordSentLocked records seq as the highest sequence id stored for the
// named producer.
func (t *Topic) recordSentLocked(name string, seq int64) {
	if d := t.dedupLocked(); d.on && seq >= 0 {
		d.last[name] = seq
	}
}

// producerAddedLocked and producerRemovedLocked keep the producer names
// whose sequence ids may be forgotten.
func (t *Topic) producerAddedLocked(name string) {
	if d := t.dedupLocked(); d.on {
		delete(d.idle, name)
	}
}

func (t *Topic) producerRemovedLocked(name string) {
	if d := t.dedupLocked(); d.on {
		d.idle[name] = t.b.cfg.clock.Now()
	}
}

// deduplicationStatusLocked is the topic stats' deduplicationStatus:
// "Enabled" or "Disabled".
func (t *Topic) deduplicationStatusLocked() string {
	if t.dedupLocked().on {
		return "Enabled"
	}
	return "Disabled"
}

// purgeDedup (every dedupPurgeEvery: startTimers) forgets, on every topic, the sequence ids of the producer
// names that have had no producer since dedupInactivity before at.
func (b *Broker) purgeDedup(at time.Time) {
	topics := b.topicsNow(false)
	for _, t := range topics {
		t.mu.Lock()
		d := t.dedupLocked()
		for name, since := range d.idle {
			if at.Sub(since) > dedupInactivity {
				delete(d.idle, name)
				delete(d.last, name)
			}
		}
		t.mu.Unlock()
	}
}
