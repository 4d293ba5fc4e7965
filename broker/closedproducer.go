package broker

import "time"

// Producers closed by the broker. When the broker closes a producer (an
// unload, a termination, a fencing exclusive producer, a backlog quota), the
// client may already have written SENDs for it that reach the broker after
// CLOSE_PRODUCER. Pulsar 4.0 (ServerCnx.closeProducer and handleSend)
// remembers such a producer's id on its connection for the keep-alive
// interval and ignores SENDs for it, without an answer; a SEND for any other
// unknown producer id still closes the connection. The client resends what it
// has no receipt for once it has created the producer again.

// forgetClosedProducer removes a producer the broker closes from its
// connection's table and remembers its id, with the time, for closedRecently.
// Entries older than the keep-alive interval are dropped on the way.
func (c *conn) forgetClosedProducer(p *Producer) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.producers[p.ID] == p {
		delete(c.producers, p.ID)
	}
	for id, at := range c.closedProducers {
		if now.Sub(at) >= c.b.cfg.keepAlive {
			delete(c.closedProducers, id)
		}
	}
	if c.closedProducers == nil {
		c.closedProducers = map[uint64]time.Time{}
	}
	c.closedProducers[p.ID] = now
}

// closedRecently reports whether the broker closed the producer with this id
// on this connection less than a keep-alive interval ago.
func (c *conn) closedRecently(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.closedProducers[id]
	return ok && time.Since(at) < c.b.cfg.keepAlive
}
