package cursor

// RedeliveryCount returns the redelivery counter of entry e (0 when absent), the
// value a Shared or Key_Shared dispatcher sends as MESSAGE.redelivery_count.
func (c *Cursor) RedeliveryCount(e int64) int32 { return c.redeliveries[e] }

// IncrementRedelivery adds one to entry e's redelivery counter and returns the
// new value. Dispatchers call it once per accepted redelivery request.
func (c *Cursor) IncrementRedelivery(e int64) int32 {
	if e <= c.markDelete {
		return 0
	}
	n := c.redeliveries[e] + 1
	c.redeliveries[e] = n
	return n
}

// ForgetRedelivery removes entry e's redelivery counter.
func (c *Cursor) ForgetRedelivery(e int64) { delete(c.redeliveries, e) }

// ClearRedeliveries removes every redelivery counter, as Pulsar does when the
// last consumer of a Shared or Key_Shared subscription leaves.
func (c *Cursor) ClearRedeliveries() { clear(c.redeliveries) }

// Redeliveries returns a copy of the non-zero redelivery counters, keyed by
// entry, or nil when there are none.
func (c *Cursor) Redeliveries() map[int64]int32 {
	if len(c.redeliveries) == 0 {
		return nil
	}
	out := make(map[int64]int32, len(c.redeliveries))
	for k, v := range c.redeliveries {
		out[k] = v
	}
	return out
}
