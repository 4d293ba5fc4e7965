package broker

// busy reports whether the topic has producers or consumers.
func (t *Topic) busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busyLocked()
}

func (t *Topic) busyLocked() bool {
	if len(t.producers) > 0 {
		return true
	}
	for _, s := range t.subs {
		if len(s.consumers) > 0 {
			return true
		}
	}
	return false
}

// disconnectAllLocked closes every producer and consumer of the topic from
// the broker side: each gets CLOSE_PRODUCER or CLOSE_CONSUMER and is
// detached. The caller passes the result to forgetAll once the topic lock is
// released.
func (t *Topic) disconnectAllLocked() ([]*Producer, []*Consumer) {
	prods := make([]*Producer, 0, len(t.producers))
	for p := range t.producers {
		t.closeProducerLocked(p)
		prods = append(prods, p)
	}
	var conss []*Consumer
	for _, s := range t.subs {
		conss = append(conss, s.closeConsumersLocked(nil, nil)...)
	}
	return prods, conss
}

// forgetAll removes closed producers and consumers from their connections'
// tables.
func forgetAll(prods []*Producer, conss []*Consumer) {
	for _, p := range prods {
		p.conn.forgetProducer(p)
	}
	for _, cs := range conss {
		cs.conn.forget(cs)
	}
}
