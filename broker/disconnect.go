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
// detached.
func (t *Topic) disconnectAllLocked() {
	for p := range t.producers {
		t.closeProducerLocked(p)
	}
	for _, s := range t.subs {
		s.closeConsumersLocked(nil, nil)
	}
}

// findConsumer returns the consumer with this name on a subscription, or nil.
func (b *Broker) findConsumer(topic, sub, name string) *Consumer {
	t := b.topicByName(topic)
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[sub]
	if s == nil {
		return nil
	}
	for _, c := range s.consumers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// DropConsumerConnection closes the TCP connection that carries the named
// consumer, as a crash of that client would. Everything else on the
// connection goes too. It reports whether such a consumer was found.
func (b *Broker) DropConsumerConnection(topic, sub, consumer string) bool {
	c := b.findConsumer(topic, sub, consumer)
	if c == nil {
		return false
	}
	c.conn.close()
	return true
}

// CloseConsumer closes the named consumer from the broker side: the client
// gets CLOSE_CONSUMER and subscribes again, as after a topic unload. It
// reports whether such a consumer was found.
func (b *Broker) CloseConsumer(topic, sub, consumer string) bool {
	c := b.findConsumer(topic, sub, consumer)
	if c == nil {
		return false
	}
	t := c.sub.topic
	t.mu.Lock()
	closed := c.sub.closeConsumersLocked(nil, c)
	t.mu.Unlock()
	return len(closed) > 0
}

// CloseProducer closes the named producer of a topic from the broker side:
// the client gets CLOSE_PRODUCER and reconnects. It reports whether such a
// producer was found.
func (b *Broker) CloseProducer(topic, producer string) bool {
	t := b.topicByName(topic)
	if t == nil {
		return false
	}
	t.mu.Lock()
	var p *Producer
	for q := range t.producers {
		if q.Name == producer {
			p = q
		}
	}
	if p != nil {
		t.closeProducerLocked(p)
	}
	t.mu.Unlock()
	return p != nil
}
