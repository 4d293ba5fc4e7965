package dispatch

// ReadsPastEnd reports whether the subscription would read now and find
// nothing to read: a consumer can take entries (on Exclusive and Failover the
// active one, not waiting for a switch, with permits; on Shared and
// Key_Shared any unblocked consumer with permits, the subscription not held
// by its unacknowledged limit), nothing waits to be replayed, and the cursor
// has read every entry of log. Pulsar's dispatcher then leaves a read waiting
// on the cursor for the next entry; on a terminated topic that read fails at
// once, which is when Pulsar tells the consumers the topic has ended.
func (d *Dispatcher) ReadsPastEnd(log Log) bool {
	if d.cur.NextUnacked(d.cur.ReadPosition()) < log.End() {
		return false
	}
	if d.opts.Type.singleActive() {
		return d.active != nil && !d.switching && d.active.permits > 0
	}
	if d.replay.len() > 0 || d.subBlocked {
		return false
	}
	for _, c := range d.consumers {
		if c.permits > 0 && !c.blocked {
			return true
		}
	}
	return false
}
