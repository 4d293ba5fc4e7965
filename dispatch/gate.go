package dispatch

// Gate lets the dispatcher's owner hold back deliveries to consumers that
// cannot take more now, as Pulsar stops feeding a consumer whose connection
// is not writable (its outbound buffer passed the high-water mark).
// DispatchGated asks Writable before a consumer's first entry of the call and
// again after each Sent; a consumer that is not writable is passed over for
// the rest of the call, like one without permits: it keeps its permits, and
// on Shared and Key_Shared its entries go to the others or wait in the
// replay queue. The owner calls Dispatch again once the consumer can take
// more.
type Gate interface {
	// Writable reports whether consumer id can be given another entry now.
	Writable(id uint64) bool
	// Sent tells the gate that entry e is being given to consumer id.
	Sent(id uint64, e int64)
}

// DispatchGated is Dispatch with deliveries held back by g (see Gate). A nil
// g gates nothing.
func (d *Dispatcher) DispatchGated(log Log, g Gate) []Delivery {
	if g == nil {
		return d.Dispatch(log)
	}
	d.gate = g
	for _, c := range d.consumers {
		c.held = !g.Writable(c.spec.ID)
	}
	out := d.Dispatch(log)
	for _, c := range d.consumers {
		c.held = false
	}
	d.gate = nil
	return out
}

// sent reports entry e given to c to the gate of the current call, and
// holds c back once the gate says it can take no more.
func (d *Dispatcher) sent(c *consumer, e int64) {
	if d.gate == nil {
		return
	}
	d.gate.Sent(c.spec.ID, e)
	c.held = !d.gate.Writable(c.spec.ID)
}
