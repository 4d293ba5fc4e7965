package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// EventKind names what happened in an Event.
type EventKind string

// The kinds of Event the broker reports.
const (
	EventProducerOpened   EventKind = "producer-opened"
	EventProducerClosed   EventKind = "producer-closed"
	EventPublished        EventKind = "published"
	EventConsumerOpened   EventKind = "consumer-opened"
	EventConsumerClosed   EventKind = "consumer-closed"
	EventDelivered        EventKind = "delivered"
	EventAcked            EventKind = "acked"
	EventRedeliveryAsked  EventKind = "redelivery-asked"
	EventExpired          EventKind = "expired"
	EventSubscriptionSeek EventKind = "seek"

	// EventTxnOpened: a transaction was opened (Txn).
	EventTxnOpened EventKind = "txn-opened"
	// EventTxnAcked: a consumer acknowledged a message in a transaction
	// (Txn, Topic, Subscription, Consumer, ID, Cumulative); it is held
	// until the transaction ends. A commit then reports EventAcked with
	// the same Txn.
	EventTxnAcked EventKind = "txn-acked"
	// EventTxnReturned: an abort gave the messages a transaction
	// acknowledged back to their subscription (Txn, Topic, Subscription,
	// IDs); on Shared and Key_Shared each comes back with its redelivery
	// count raised by one, on Exclusive and Failover the active consumer
	// is rewound.
	EventTxnReturned EventKind = "txn-returned"
	// EventTxnCommitted and EventTxnAborted: a transaction ended. With
	// Topic empty, at its coordinator (Reason "client", "timeout"); with a
	// Topic, on that topic, ID being its marker entry.
	EventTxnCommitted EventKind = "txn-committed"
	EventTxnAborted   EventKind = "txn-aborted"

	// EventDuplicate: a topic that deduplicates did not store a SEND of
	// Producer (its name) because its SequenceID was not above the highest
	// one stored for that name; the producer got a receipt for message
	// -1:-1 (dedup.go).
	EventDuplicate EventKind = "duplicate"

	// EventTopicLoaded: the broker loaded Topic, from its ledger (Reason
	// "loaded") or as a new topic ("created"); EventTopicUnloaded: the
	// broker gave it up (Reason "unload", "stop" when the broker shut down
	// gracefully, or "crash" when it crashed).
	// Between the two, the topic's dispatchers and redelivery counters are
	// that broker's (load.go).
	EventTopicLoaded   EventKind = "topic-loaded"
	EventTopicUnloaded EventKind = "topic-unloaded"
)

// MessageID is a Pulsar message id as the broker hands it out.
type MessageID struct {
	Ledger    int64
	Entry     int64
	Partition int32
	// BatchIndex is -1 for a whole entry.
	BatchIndex int32
}

// Event is one thing the broker did or was asked to do. Events are reported
// in order to the hooks registered with OnEvent.
type Event struct {
	Seq  uint64
	Time time.Time // broker clock
	// Broker is the index, in its cluster, of the broker that reported the
	// event (0 for a lone broker).
	Broker int
	// Cluster is the name of the broker's cluster (WithClusterName), so
	// that one hook can follow the brokers of several clusters.
	Cluster      string
	Kind         EventKind
	Topic        string
	Subscription string
	Consumer     string // consumer name
	ConsumerID   uint64
	// Remote is the address ("host:port") of the client connection of the
	// consumer concerned, in consumer events (opened, delivered, acked,
	// redelivery asked, closed): with ConsumerID, which a client numbers per
	// connection, it tells apart two consumers of the same name, such as a
	// consumer and the one its client reconnects while the broker has not
	// yet seen the old connection go.
	Remote   string
	Producer string
	// ID is the message concerned, for Published, Delivered and Acked; for
	// Expired, the last entry the expiry covered; for a seek, its target.
	ID MessageID
	// From is the first entry an expiry covered, for Expired. The entries
	// from From to ID that the subscription had not acknowledged expired.
	From MessageID
	// IDs lists the entries of a redelivery request; empty means all.
	IDs []MessageID
	// RedeliveryCount is the count a delivery carried.
	RedeliveryCount int32
	// Cumulative marks a cumulative ack.
	Cumulative bool
	// Properties of a published message (first message of a batch).
	Properties map[string]string
	// Reason says why a consumer closed ("client", "disconnect", "broker"),
	// a transaction ended ("client", "timeout"), or entries expired (""
	// for the message TTL, "backlog-quota" for a backlog quota's eviction).
	Reason string
	// SequenceID is the sequence id of the SEND of a Duplicate.
	SequenceID uint64
	// Txn is the transaction concerned: of a transactional message
	// (Published), of an acknowledgement (TxnAcked, and Acked when a
	// commit applies it), and of the transaction events. Nil otherwise.
	Txn *TxnID
}

// OnEvent registers fn to receive every event from now on, and returns a
// function that unregisters it.
//
// Events are numbered (Seq) when they happen, under the lock of the topic
// they concern, and hooks see them one at a time in that order: the events of
// a topic in the order of its changes, and an event caused by another (a
// redelivery after the request that asked for it, a dead-letter copy after
// the delivery it copies) after its cause. Hooks run once that lock is
// released, on the goroutine that made the change or on another broker
// goroutine that is delivering events at that moment, so a hook may call
// back into the broker (Subscription, CloseConsumer, a held command's
// Release…); the events such a call causes reach the hooks after the hook
// returns. A hook should still be quick: it delays the delivery of the
// events behind it. After cancel returns, fn is not called for any later
// event (a call under way may still finish).
func (b *Broker) OnEvent(fn func(Event)) (cancel func()) {
	return b.events.subscribe(fn)
}

// DeliverEvents returns once every event the broker has emitted so far has
// reached the hooks. A test that saw the effect of a change on a client and
// then reads what its hook recorded calls it first: a change's events may be
// on their way to the hooks (delivered by another goroutine) when its effect
// reaches the client. It must not be called from a hook.
func (b *Broker) DeliverEvents() { b.events.flush(true) }

// emitAlone queues ev and delivers the queued events, for an event that no
// topic lock covers (a transaction's coordinator events). The caller holds
// no broker lock.
func (b *Broker) emitAlone(ev Event) {
	if !b.tracing() {
		return
	}
	ev.Broker, ev.Cluster = b.node, b.cfg.clusterName
	b.events.push(ev, b.cfg.clock.Now())
	b.events.flush(false)
}

// tracing reports whether any hook is registered, so that callers can skip
// building events nobody reads.
func (b *Broker) tracing() bool { return b.events.hookCount.Load() > 0 }

// emit queues ev for the hooks. It must be called with the lock of a topic
// held: releasing that lock (topicLock.Unlock) delivers it.
func (b *Broker) emit(ev Event) {
	if !b.tracing() {
		return
	}
	ev.Broker, ev.Cluster = b.node, b.cfg.clusterName
	b.events.push(ev, b.cfg.clock.Now())
}

// hook is one registered OnEvent function.
type hook struct {
	fn      func(Event)
	removed atomic.Bool
}

// eventQueue numbers the broker's events and delivers them to the hooks in
// that order, one at a time, with no broker lock held but its own while it
// queues. Whoever delivers takes the whole queue; a goroutine that finds
// another one delivering leaves its events to it (this is what lets a hook
// call back into the broker: the events of that call are delivered by the
// loop that is running the hook, after it returns).
type eventQueue struct {
	mu         sync.Mutex
	hooks      []*hook // copied on change, so a delivery reads a stable list
	seq        uint64  // the last Seq given out
	queue      []Event // numbered, not yet delivered, in Seq order
	spare      []Event
	delivering bool
	delivered  uint64     // the last Seq delivered
	idle       *sync.Cond // signalled when a delivery round ends

	hookCount atomic.Int32
	pending   atomic.Bool // queue is not empty
}

func (q *eventQueue) subscribe(fn func(Event)) (cancel func()) {
	h := &hook{fn: fn}
	q.mu.Lock()
	q.hooks = append(append([]*hook(nil), q.hooks...), h)
	q.hookCount.Store(int32(len(q.hooks)))
	q.mu.Unlock()
	return func() {
		h.removed.Store(true)
		q.mu.Lock()
		for i, o := range q.hooks {
			if o == h {
				q.hooks = append(append([]*hook(nil), q.hooks[:i]...), q.hooks[i+1:]...)
				break
			}
		}
		q.hookCount.Store(int32(len(q.hooks)))
		q.mu.Unlock()
	}
}

// push numbers ev and queues it.
func (q *eventQueue) push(ev Event, now time.Time) {
	q.mu.Lock()
	q.seq++
	ev.Seq = q.seq
	ev.Time = now
	q.queue = append(q.queue, ev)
	q.pending.Store(true)
	q.mu.Unlock()
}

// flush delivers the queued events unless another goroutine is delivering
// them. With wait set it returns only once every event queued before the
// call has been delivered, by whoever delivers it.
func (q *eventQueue) flush(wait bool) {
	if !wait && !q.pending.Load() {
		return
	}
	q.mu.Lock()
	if q.delivering {
		if wait {
			target := q.seq
			if q.idle == nil {
				q.idle = sync.NewCond(&q.mu)
			}
			for q.delivered < target {
				q.idle.Wait()
			}
		}
		q.mu.Unlock()
		return
	}
	q.delivering = true
	for len(q.queue) > 0 {
		batch, hooks := q.queue, q.hooks
		q.queue, q.spare = q.spare[:0], nil
		q.pending.Store(false)
		q.mu.Unlock()
		for _, ev := range batch {
			for _, h := range hooks {
				if !h.removed.Load() {
					h.fn(ev)
				}
			}
		}
		q.mu.Lock()
		q.delivered = batch[len(batch)-1].Seq
		clear(batch)
		q.spare = batch[:0]
		if q.idle != nil {
			q.idle.Broadcast()
		}
	}
	q.delivering = false
	q.mu.Unlock()
}
