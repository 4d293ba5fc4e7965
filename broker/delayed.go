package broker

import "github.com/pulsarsim/pulsarsim/dispatch"

// delayedCountLocked returns how many entries the subscription holds back
// for their deliver_at_time.
func (s *Subscription) delayedCountLocked() int {
	if s.disp == nil || (s.typ != dispatch.Shared && s.typ != dispatch.KeyShared) {
		return 0
	}
	return len(s.disp.Delayed())
}

// maxDeliveryDelayLocked returns the topic's maxDeliveryDelayInMillis, 0
// for none (or with delayed delivery off, as Pulsar ignores it then).
func (t *Topic) maxDeliveryDelayLocked() int64 {
	d := t.policiesLocked().DelayedDelivery
	if !d.Active {
		return 0
	}
	return d.MaxDelayMillis
}
