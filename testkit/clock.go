package testkit

import (
	"time"
)

// Advance moves the broker clock forward by d, and the broker does what it
// would have done while d passed, in time order: the message-TTL checks that
// fell due (every 5 minutes, as Pulsar's), the inactive-topic checks (every
// 60 s: see WithInactiveTopicsKept), the release of delayed messages, the
// end of a Failover switch delay, the refill of publish and dispatch rate
// limits (a throttled connection reads again, a subscription a dispatch
// rate held back reads again). It does no more: a TTL that ran out
// between two checks expires at the next one (RunExpiryCheck forces a check
// now). Client timers are real and do not move. It fails the test when Start
// was given a clock of its own.
func (b *Broker) Advance(d time.Duration) {
	b.tb.Helper()
	if b.srv.Clock() != Clock(b.clock) {
		b.tb.Fatal("pulsarsim: Advance needs the clock testkit.Start installs, not one passed with broker.WithClock")
	}
	b.clock.Advance(d)
	b.RunTimers()
}

// Now returns the broker clock's reading.
func (b *Broker) Now() time.Time { return b.srv.Clock().Now() }
