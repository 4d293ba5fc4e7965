package testkit

import (
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Advance moves the broker clock forward by d and runs the broker's timed
// checks at once (message TTL expiry, release of due delayed messages), as if
// d had passed. Client timers are
// real and do not move. It fails the test when Start was given a clock of
// its own.
func (b *Broker) Advance(d time.Duration) {
	b.tb.Helper()
	if b.srv.Clock() != broker.Clock(b.clock) {
		b.tb.Fatal("pulsarsim: Advance needs the clock testkit.Start installs, not one passed with broker.WithClock")
	}
	b.clock.Advance(d)
	b.RunTimers()
}

// Now returns the broker clock's reading.
func (b *Broker) Now() time.Time { return b.srv.Clock().Now() }
