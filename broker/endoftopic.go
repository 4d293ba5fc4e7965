package broker

import (
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The end of a terminated topic. Pulsar 4.0.8 sends REACHED_END_OF_TOPIC to
// every consumer of a subscription that has acknowledged everything
// (backlog 0) of a terminated topic, at three moments, as measured against
// it:
//
//   - when the topic is terminated;
//   - after each acknowledgement, duplicates included (PersistentSubscription
//     checks after every ack);
//   - when the dispatcher reads past the last entry for a consumer with
//     permits and that read fails because the topic ended. A cursor keeps
//     a read that found nothing waiting for the next entry, and the failed
//     read stays there too (its managed cursor never clears it), so this
//     happens once per cursor: again only after an Exclusive or Failover
//     redelivery cancels it, or for a new subscription (a reader's
//     non-durable one each time it subscribes). A read that was already
//     waiting when the topic was terminated never fails.
//
// pulsar-client-go v0.19.0 does not know the command: it closes the
// connection it came on, and every producer and consumer of that
// connection reconnects.

// endRead is what a subscription's cursor holds of a read that found no
// entry to read.
type endRead uint8

const (
	endReadNone    endRead = iota // no read waits
	endReadWaiting                // a read waits for the next entry
	endReadFailed                 // a read failed at the end of a terminated topic
)

// EventReachedEndOfTopic: the broker told a consumer (Topic, Subscription,
// Consumer, ConsumerID, Remote) that its terminated topic has no more
// messages for it (REACHED_END_OF_TOPIC).
const EventReachedEndOfTopic EventKind = "reached-end-of-topic"

// reachedEndLocked tells every consumer of the subscription that the topic
// has ended, when the topic is terminated and the subscription has
// acknowledged everything.
func (s *Subscription) reachedEndLocked() {
	t := s.topic
	if t.migrated {
		// A migrated topic ends so too, its consumers told where it went.
		s.migrateConsumersLocked(nil)
		return
	}
	if !t.terminated || s.cur.Backlog(t.log.End()) != 0 {
		return
	}
	for _, cons := range s.consumers {
		t.b.emit(Event{Kind: EventReachedEndOfTopic, Topic: t.full, Subscription: s.name, Consumer: cons.Name,
			ConsumerID: cons.ID, Remote: cons.conn.remote})
		cons.conn.send(protocol.Base(pb.BaseCommand_REACHED_END_OF_TOPIC,
			&pb.CommandReachedEndOfTopic{ConsumerId: proto.Uint64(cons.ID)}))
	}
}

// readAtEndLocked records a read past the last entry, after a dispatch: the
// first one waits, or fails at once on a terminated topic, and a failed read
// tells the consumers the topic has ended.
func (s *Subscription) readAtEndLocked() {
	t := s.topic
	if s.endRead != endReadNone || !t.name.Persistent || !s.disp.ReadsPastEnd(topicLog{t, s}) {
		return
	}
	if !t.terminated && !t.migrated {
		s.endRead = endReadWaiting
		return
	}
	s.endRead = endReadFailed
	s.reachedEndLocked()
}

// cancelWaitingReadLocked cancels a read waiting for the next entry, as
// Pulsar does when the subscription's last consumer goes; a read that
// failed stays.
func (s *Subscription) cancelWaitingReadLocked() {
	if s.endRead == endReadWaiting {
		s.endRead = endReadNone
	}
}

// entryAddedLocked lets a waiting read take the topic's new entry and
// dispatches it.
func (s *Subscription) entryAddedLocked() {
	s.cancelWaitingReadLocked()
	s.dispatchLocked()
}
