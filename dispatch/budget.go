package dispatch

// Budget caps what a dispatcher reads, as Pulsar's dispatch rate limiters
// (topic and subscription) cap each read of readMoreEntries: before a read,
// Allowance says how many entries and bytes it may take (a negative number
// is no limit of that kind; 0 of either means no read now: the dispatcher
// stops, and its owner tries again later, as Pulsar schedules the read one
// second later); after it, Spend charges what it delivered, in messages and
// bytes. A read takes at least one entry, and stops at the first entry that
// reaches the byte allowance. Replays (redeliveries, released delayed
// entries) count as reads too.
type Budget interface {
	Allowance() (entries int, bytes int64)
	Spend(messages int, bytes int64)
}

// DispatchWith is DispatchGated with its reads capped by b (nil: no cap).
func (d *Dispatcher) DispatchWith(log Log, g Gate, b Budget) []Delivery {
	d.budget = b
	out := d.DispatchGated(log, g)
	d.budget = nil
	return out
}

// readCap is one read's allowance and what it took so far.
type readCap struct {
	entries int   // -1: no limit
	bytes   int64 // -1: no limit
	took    int
	tookB   int64
}

// openRead returns the allowance of the next read, or false when the
// budget allows none now.
func (d *Dispatcher) openRead() (readCap, bool) {
	if d.budget == nil {
		return readCap{entries: -1, bytes: -1}, true
	}
	n, b := d.budget.Allowance()
	if n == 0 || b == 0 {
		return readCap{}, false
	}
	return readCap{entries: n, bytes: b}, true
}

// full reports whether the read has taken its allowance.
func (r *readCap) full() bool {
	return (r.entries >= 0 && r.took >= r.entries) || (r.bytes >= 0 && r.tookB >= r.bytes)
}

// take counts an entry of the read.
func (r *readCap) take(info EntryInfo) {
	r.took++
	r.tookB += int64(info.Size)
}

// cap bounds n entries by the allowance.
func (r *readCap) cap(n int) int {
	if r.entries >= 0 {
		return max(min(n, r.entries), 1)
	}
	return n
}

// spend charges the budget with the deliveries of one read.
func (d *Dispatcher) spend(ds []Delivery, log Log) {
	if d.budget == nil || len(ds) == 0 {
		return
	}
	msgs, bytes := 0, int64(0)
	for _, dl := range ds {
		msgs += int(dl.Messages)
		bytes += int64(log.Info(dl.Entry).Size)
	}
	d.budget.Spend(msgs, bytes)
}
