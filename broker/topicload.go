package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Loading a topic from the store takes time in Pulsar: the managed ledger
// is opened from the metadata store and BookKeeper (a 4.0.8 standalone
// answers a SUBSCRIBE that loads an unloaded topic after 30-40 ms), and
// until its subscribe completes a consumer does not exist for the commands
// that name it: a FLOW, an ACK or a REDELIVER for it is dropped. Clients
// count on that window. After an unload pulsar-client-go's zero-queue
// consumer may send the FLOW of a Receive right behind its reconnecting
// SUBSCRIBE; a broker that applied it would deliver a message the client
// drops, for it registers the consumer on its connection only once the
// SUBSCRIBE's answer came. So a topic loaded from the store here is ready
// topicLoadTime after its load began (Topic.readyAt, wall clock: an I/O
// time, not the broker clock's), and a SUBSCRIBE on it before then attaches
// its consumer at once but answers it, and lets the connection's commands
// reach it, only then. A topic created here is ready at once, and so is one
// already loaded: Pulsar's subscribes to those end within a few
// milliseconds (4-6 ms on a standalone), a window pulsarsim leaves out to
// keep tests fast.

// DefaultTopicLoadTime is how long a topic takes to load from the store
// unless WithTopicLoadTime says otherwise.
const DefaultTopicLoadTime = 30 * time.Millisecond

// WithTopicLoadTime sets how long a topic takes to load from the store (its
// ledger there: after an unload, a restart, a move to another broker); the
// subscribes that load it are answered then. 0 answers them at once.
// Default DefaultTopicLoadTime.
func WithTopicLoadTime(d time.Duration) Option {
	return func(c *config) { c.topicLoadTime = max(d, 0) }
}

// answerLoadedLocked answers the SUBSCRIBE (request reqID) that attached
// cons: at once when the topic is ready, else once it is. Called under the
// topic's lock.
func (s *Subscription) answerLoadedLocked(cons *Consumer, reqID uint64) {
	t, c := s.topic, cons.conn
	wait := time.Until(t.readyAt)
	if wait <= 0 {
		c.send(protocol.SuccessCommand(reqID))
		return
	}
	c.mu.Lock()
	cons.loading, cons.loadReq = true, reqID
	c.mu.Unlock()
	b := t.b
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		tm := time.NewTimer(wait)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-b.done:
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if s.consumers[cons.dispID] != cons {
			return // closed while the topic loaded: Pulsar answers nothing more
		}
		c.mu.Lock()
		cons.loading = false
		c.mu.Unlock()
		c.send(protocol.SuccessCommand(reqID))
	}()
}

// closeCommandLocked is what the broker sends a consumer it closes: a
// CLOSE_CONSUMER, or, while its SUBSCRIBE waits for the topic to load, the
// error that SUBSCRIBE fails with (the client subscribes again), as
// Pulsar fails the subscribes pending on a topic that closes. Called under
// the topic's lock.
func (cons *Consumer) closeCommandLocked(cc *pb.CommandCloseConsumer) *pb.BaseCommand {
	c := cons.conn
	c.mu.Lock()
	loading, req := cons.loading, cons.loadReq
	c.mu.Unlock()
	if loading {
		return protocol.ErrorCommand(req, pb.ServerError_ServiceNotReady, "Topic is temporarily unavailable")
	}
	return protocol.Base(pb.BaseCommand_CLOSE_CONSUMER, cc)
}
