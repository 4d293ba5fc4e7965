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
