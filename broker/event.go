package broker

import "time"

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
	Seq          uint64
	Time         time.Time // broker clock
	Kind         EventKind
	Topic        string
	Subscription string
	Consumer     string // consumer name
	ConsumerID   uint64
	Producer     string
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
	// Reason says why a consumer closed ("client", "disconnect", "broker").
	Reason string
}

// OnEvent registers fn to receive every event from now on. fn runs on the
// broker's goroutines, possibly under a topic lock: it must be quick and must
// not call back into the broker. It returns a function that unregisters fn.
func (b *Broker) OnEvent(fn func(Event)) (cancel func()) {
	b.evmu.Lock()
	id := b.nextHook
	b.nextHook++
	if b.hooks == nil {
		b.hooks = map[uint64]func(Event){}
	}
	b.hooks[id] = fn
	b.hookCount.Store(int32(len(b.hooks)))
	b.evmu.Unlock()
	return func() {
		b.evmu.Lock()
		delete(b.hooks, id)
		b.hookCount.Store(int32(len(b.hooks)))
		b.evmu.Unlock()
	}
}

// tracing reports whether any hook is registered, so that callers can skip
// building events nobody reads.
func (b *Broker) tracing() bool { return b.hookCount.Load() > 0 }

// emit reports ev to every hook. Hooks see events in emit order.
func (b *Broker) emit(ev Event) {
	if !b.tracing() {
		return
	}
	b.evmu.Lock()
	defer b.evmu.Unlock()
	b.evSeq++
	ev.Seq = b.evSeq
	ev.Time = b.cfg.clock.Now()
	for _, h := range b.hooks {
		h(ev)
	}
}
