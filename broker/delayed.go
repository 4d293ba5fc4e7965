package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/dispatch"
)

// delayedTick is delayedDeliveryTickTimeMillis: how often the broker looks for
// delayed messages that have become due.
const delayedTick = time.Second

// dispatchDelayed runs a dispatch pass on every subscription that holds
// delayed messages.
func (b *Broker) dispatchDelayed() {
	b.mu.Lock()
	topics := make([]*Topic, 0, len(b.topics))
	for _, t := range b.topics {
		topics = append(topics, t)
	}
	b.mu.Unlock()
	for _, t := range topics {
		t.mu.Lock()
		for _, s := range t.subs {
			if s.delayedCountLocked() > 0 {
				s.dispatchLocked()
			}
		}
		t.mu.Unlock()
	}
}

// delayedCountLocked returns how many entries the subscription holds back
// for their deliver_at_time.
func (s *Subscription) delayedCountLocked() int {
	if s.disp == nil || (s.typ != dispatch.Shared && s.typ != dispatch.KeyShared) {
		return 0
	}
	return len(s.disp.Delayed())
}
