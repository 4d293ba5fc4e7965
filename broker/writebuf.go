package broker

import "github.com/pulsarsim/pulsarsim/dispatch"

// Slow readers. Pulsar stops feeding a consumer whose connection is not
// writable: Netty marks a channel unwritable once the bytes queued for it
// pass the high-water mark, and writable again when they fall below the low
// one (Pulsar's pulsarChannelWriteBufferHighWaterMark and LowWaterMark,
// 64 KiB and 32 KiB by default, which are Netty's defaults). Without that, a
// client that asks for many messages and never reads would make the broker
// hold a copy of the whole topic in its outbound buffer.
//
// pulsarsim does the same with each connection's write buffer: the bytes
// queued and not yet written to the socket (the buffer and the batch the
// writer is writing) are counted; past the high mark the connection is
// unwritable and dispatch passes its consumers over (dispatch.Gate), and
// once the writer has drained it to the low mark it is writable again and
// its consumers' subscriptions dispatch at once. Replies to requests are
// queued whatever the state, as in Pulsar.

// Default write-buffer water marks: Pulsar's defaults, which are Netty's.
const (
	DefaultWriteBufferHighWaterMark = 64 << 10
	DefaultWriteBufferLowWaterMark  = 32 << 10
)

// WithWriteBufferWaterMarks sets the write-buffer water marks in bytes
// (pulsarChannelWriteBufferLowWaterMark and HighWaterMark). A connection with
// high or more bytes unsent gets no more messages until the writer brings it
// down to low. A high of 0 or less turns the limit off (the outbound buffer
// is then unbounded). Default 32 KiB and 64 KiB.
func WithWriteBufferWaterMarks(low, high int) Option {
	return func(c *config) { c.writeLow, c.writeHigh = low, high }
}

// messageFrameOverhead is about what a MESSAGE frame adds to its entry's
// bytes (size fields and command). The gate plans with it within one
// dispatch; the buffer counts the real bytes.
const messageFrameOverhead = 64

// queuedLocked records n more bytes in the write buffer. Called with wmu held.
func (c *conn) queuedLocked(n int) {
	unsent := c.unsent.Add(int64(n))
	if high := c.b.cfg.writeHigh; high > 0 && unsent >= int64(high) {
		c.unwritable.Store(true)
	}
}

// written records that the writer wrote n bytes (0 after an empty wake-up)
// and, when that brought an unwritable connection down to the low mark,
// makes it writable and dispatches to its consumers.
func (c *conn) written(n int) {
	c.wmu.Lock()
	left := c.unsent.Add(-int64(n))
	resume := c.unwritable.Load() && left <= int64(c.b.cfg.writeLow)
	if resume {
		c.unwritable.Store(false)
	}
	c.wmu.Unlock()
	if resume {
		// Not on the writer goroutine: releasing a topic lock runs the
		// event hooks, and a hook that waits for this client to read would
		// wait for this very writer. The writer's own count keeps the
		// broker's wait group above zero here.
		c.b.wg.Add(1)
		go func() {
			defer c.b.wg.Done()
			c.dispatchToConsumers()
		}()
	}
}

// writable reports whether the connection can be given another message on
// top of planned bytes already given in the current dispatch: whether its
// unsent bytes stay below the high-water mark. A no marks the connection
// unwritable, so that the writer makes it writable again (and dispatches)
// once it has drained, even when no byte gets queued after all.
func (c *conn) writable(planned int) bool {
	high := c.b.cfg.writeHigh
	if high <= 0 {
		return true
	}
	if c.unwritable.Load() {
		return false
	}
	if c.unsent.Load()+int64(planned) < int64(high) {
		return true
	}
	c.wmu.Lock()
	c.unwritable.Store(true)
	c.wmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return false
}

// dispatchToConsumers runs the dispatch of every subscription with a
// consumer on this connection, once it became writable again.
func (c *conn) dispatchToConsumers() {
	c.mu.Lock()
	cons := make([]*Consumer, 0, len(c.consumers))
	for _, cs := range c.consumers {
		cons = append(cons, cs)
	}
	c.mu.Unlock()
	for _, cs := range cons {
		t := cs.sub.topic
		t.mu.Lock()
		if cs.sub.consumers[cs.dispID] == cs {
			cs.sub.dispatchLocked()
		}
		t.mu.Unlock()
	}
}

// connGate is the dispatch.Gate of one subscription's dispatch: it asks each
// consumer's connection whether it is writable, counting what the current
// call has already given to each connection. It lives in its Subscription
// and is reused under the topic's lock.
type connGate struct {
	s       *Subscription
	planned []plannedBytes
}

type plannedBytes struct {
	c *conn
	n int
}

var _ dispatch.Gate = (*connGate)(nil)

// reset prepares the gate for one dispatch call of s.
func (g *connGate) reset(s *Subscription) *connGate {
	g.s = s
	clear(g.planned)
	g.planned = g.planned[:0]
	return g
}

func (g *connGate) plannedFor(c *conn) *plannedBytes {
	for i := range g.planned {
		if g.planned[i].c == c {
			return &g.planned[i]
		}
	}
	g.planned = append(g.planned, plannedBytes{c: c})
	return &g.planned[len(g.planned)-1]
}

// Writable implements dispatch.Gate.
func (g *connGate) Writable(id uint64) bool {
	cons := g.s.consumers[id]
	if cons == nil {
		return true
	}
	return cons.conn.writable(g.plannedFor(cons.conn).n)
}

// Sent implements dispatch.Gate.
func (g *connGate) Sent(id uint64, e int64) {
	cons := g.s.consumers[id]
	if cons == nil {
		return
	}
	n := messageFrameOverhead
	if en := g.s.topic.log.Get(e); en != nil {
		n += len(en.Data)
	}
	g.plannedFor(cons.conn).n += n
}

// unsentBytes returns the bytes queued for the connection and not yet
// written to its socket, and whether it is unwritable (past the high-water
// mark and not yet drained to the low one).
func (c *conn) unsentBytes() (int64, bool) {
	return c.unsent.Load(), c.unwritable.Load()
}
