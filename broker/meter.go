package broker

import "time"

// meter counts events and estimates their rate per second for the admin
// stats. Pulsar averages rates over its stats interval; a meter averages over
// windows of at least one second. It is not safe for concurrent use: it
// changes under its owner's lock.
type meter struct {
	total    int64
	start    time.Time // start of the current window
	inWindow int64
	lastRate float64 // rate of the last complete window
}

// add records n events at now.
func (m *meter) add(now time.Time, n int64) {
	m.total += n
	if m.start.IsZero() {
		m.start = now
	}
	if el := now.Sub(m.start); el >= time.Second {
		m.lastRate = float64(m.inWindow) / el.Seconds()
		m.start, m.inWindow = now, 0
	}
	m.inWindow += n
}

// rate returns the events per second at now.
func (m *meter) rate(now time.Time) float64 {
	if m.start.IsZero() {
		return 0
	}
	if el := now.Sub(m.start); el >= time.Second {
		return float64(m.inWindow) / el.Seconds()
	}
	return m.lastRate
}
