package broker

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Limits are Pulsar's configurable resource limits. A zero field means no
// limit, as in Pulsar, where every one of them defaults to 0 (unlimited). A
// request over a limit is refused with the error code and message a Pulsar
// 4.0 broker sends.
type Limits struct {
	// MaxProducersPerTopic is maxProducersPerTopic: PRODUCER on a topic that
	// has this many producers fails with ProducerBusy "Topic '<topic>'
	// reached max producers limit".
	MaxProducersPerTopic int
	// MaxSameAddressProducersPerTopic is maxSameAddressProducersPerTopic:
	// the same, counting only producers from the client's IP address
	// (ProducerBusy "Topic reached max same address producers limit").
	MaxSameAddressProducersPerTopic int
	// MaxConsumersPerTopic is maxConsumersPerTopic: SUBSCRIBE on a topic
	// whose subscriptions have this many consumers in all fails with
	// ConsumerBusy "Topic reached max consumers limit".
	MaxConsumersPerTopic int
	// MaxSameAddressConsumersPerTopic is maxSameAddressConsumersPerTopic:
	// the same, counting only consumers from the client's IP address
	// (ConsumerBusy "Topic reached max same address consumers limit").
	MaxSameAddressConsumersPerTopic int
	// MaxConsumersPerSubscription is maxConsumersPerSubscription: SUBSCRIBE
	// to a Shared, Failover or Key_Shared subscription that has this many
	// consumers fails with ConsumerBusy "Subscription reached max consumers
	// limit" (an Exclusive one is busy with its first consumer anyway).
	MaxConsumersPerSubscription int
	// MaxSubscriptionsPerTopic is maxSubscriptionsPerTopic: creating one
	// more subscription (durable or a reader's) on a persistent topic that
	// has this many fails with NotAllowedError "Exceed the maximum number of
	// subscriptions of the topic: <topic>". So does a producer whose initial
	// subscription would be one too many.
	MaxSubscriptionsPerTopic int
	// MaxConnections is brokerMaxConnections: a connection beyond this many
	// gets ERROR NotAllowedError "Reached the maximum number of connections"
	// (request id -1) and is closed.
	MaxConnections int
	// MaxConnectionsPerIP is brokerMaxConnectionsPerIp: the same for one
	// client IP address ("Reached the maximum number of connections on
	// address/<ip>:<port>").
	MaxConnectionsPerIP int
}

// WithLimits sets the broker's resource limits (see Limits). Default: none.
// The per-topic and per-subscription ones are the broker's defaults of the
// policies of the same names, which a namespace or a topic may override.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// WithHandshakeTimeout sets how long a new connection may take to complete
// its handshake (CONNECT answered with CONNECTED) before the broker closes
// it. Pulsar checks this at its first keep-alive tick, so 0, the default,
// means the keep-alive interval (30 s unless WithKeepAlive says otherwise).
func WithHandshakeTimeout(d time.Duration) Option { return func(c *config) { c.handshakeTimeout = d } }

// handshakeDeadline returns how long a handshake may take.
func (cfg *config) handshakeDeadline() time.Duration {
	if cfg.handshakeTimeout > 0 {
		return cfg.handshakeTimeout
	}
	return cfg.keepAlive
}

// limits returns the limits that apply to topic t. The per-topic and
// per-subscription ones are the policies in force (Policies: the topic's,
// else its namespace's, else the broker's, which WithLimits sets); the
// same-address and connection limits are broker-wide only, in Pulsar as
// here. Called with the topic's lock held.
func (t *Topic) limits() Limits {
	l := t.b.cfg.limits
	p := t.policiesLocked()
	l.MaxProducersPerTopic = *p.MaxProducersPerTopic
	l.MaxConsumersPerTopic = *p.MaxConsumersPerTopic
	l.MaxConsumersPerSubscription = *p.MaxConsumersPerSubscription
	l.MaxSubscriptionsPerTopic = *p.MaxSubscriptionsPerTopic
	return l
}

// exceeded reports whether a count has reached a limit (0: no limit).
func exceeded(limit, count int) bool { return limit > 0 && count >= limit }

// clientIP is the address a limit of "same address" compares: the client's
// IP without its port.
func clientIP(nc net.Conn) string {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// producerLimitLocked returns the refusal of a new producer by
// maxProducersPerTopic, or nil. Pulsar checks it before anything else about
// the producer (and the same-address limit after the topic's termination).
func (t *Topic) producerLimitLocked(reqID uint64) *pb.BaseCommand {
	if exceeded(t.limits().MaxProducersPerTopic, len(t.producers)) {
		return protocol.ErrorCommand(reqID, pb.ServerError_ProducerBusy,
			fmt.Sprintf("Topic '%s' reached max producers limit", t.full))
	}
	return nil
}

// sameAddressProducerLimitLocked applies maxSameAddressProducersPerTopic to
// a new producer from c.
func (t *Topic) sameAddressProducerLimitLocked(c *conn, reqID uint64) *pb.BaseCommand {
	limit := t.limits().MaxSameAddressProducersPerTopic
	if limit <= 0 {
		return nil
	}
	n := 0
	for p := range t.producers {
		if p.conn.ip == c.ip {
			n++
		}
	}
	if exceeded(limit, n) {
		return protocol.ErrorCommand(reqID, pb.ServerError_ProducerBusy,
			"Topic reached max same address producers limit")
	}
	return nil
}

// consumerLimitLocked applies maxConsumersPerTopic to a new consumer,
// returning the refusal's message. Pulsar checks it as soon as it has the
// topic.
func (t *Topic) consumerLimitLocked() (string, bool) {
	limit := t.limits().MaxConsumersPerTopic
	if limit <= 0 {
		return "", false
	}
	n := 0
	for _, s := range t.subs {
		n += len(s.consumers)
	}
	return "Topic reached max consumers limit", exceeded(limit, n)
}

// sameAddressConsumerLimitLocked applies maxSameAddressConsumersPerTopic to a
// new consumer from c. Pulsar checks it once it has the subscription.
func (t *Topic) sameAddressConsumerLimitLocked(c *conn) (string, bool) {
	limit := t.limits().MaxSameAddressConsumersPerTopic
	if limit <= 0 {
		return "", false
	}
	n := 0
	for _, s := range t.subs {
		for _, cs := range s.consumers {
			if cs.conn.ip == c.ip {
				n++
			}
		}
	}
	return "Topic reached max same address consumers limit", exceeded(limit, n)
}

// subscriptionLimitLocked reports whether creating one more subscription
// would pass maxSubscriptionsPerTopic, with the message Pulsar sends
// (NotAllowedError). Non-persistent topics are not limited, as in Pulsar.
func (t *Topic) subscriptionLimitLocked() (string, bool) {
	if !t.name.Persistent || !exceeded(t.limits().MaxSubscriptionsPerTopic, len(t.subs)) {
		return "", false
	}
	return "Exceed the maximum number of subscriptions of the topic: " + t.full, true
}

// consumerLimitReachedLocked reports whether subscription s is full by
// maxConsumersPerSubscription. Exclusive is
// left to the dispatcher: its first consumer already makes it busy.
func (s *Subscription) consumerLimitReachedLocked(exclusive bool) bool {
	return !exclusive && exceeded(s.topic.limits().MaxConsumersPerSubscription, len(s.consumers))
}

// admitConnLocked applies the connection limits to a new connection from ip,
// counting the broker's current connections. It returns the message of the
// refusal, or "". Called with b.mu held.
func (b *Broker) admitConnLocked(nc net.Conn, ip string) string {
	l := b.cfg.limits
	if exceeded(l.MaxConnections, len(b.conns)) {
		return "Reached the maximum number of connections"
	}
	if l.MaxConnectionsPerIP > 0 {
		n := 0
		for c := range b.conns {
			if c.ip == ip {
				n++
			}
		}
		if exceeded(l.MaxConnectionsPerIP, n) {
			// Pulsar appends the remote address as Java prints it.
			return "Reached the maximum number of connections on address/" + nc.RemoteAddr().String()
		}
	}
	return ""
}

// refuseConn answers a connection over the limits as Pulsar does, with ERROR
// (request id -1, NotAllowedError) before any CONNECT, and closes it.
func (b *Broker) refuseConn(nc net.Conn, msg string) {
	defer b.wg.Done()
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return // closed already: nothing to tell
	}
	if _, err := nc.Write(protocol.AppendCommand(nil,
		protocol.ErrorCommand(minusOne, pb.ServerError_NotAllowedError, msg))); err != nil {
		return
	}
	// Half-close and drain what the client sent (its CONNECT), so that the
	// close does not reset the connection before the client reads the error.
	if tc, ok := nc.(interface{ CloseWrite() error }); ok {
		// Best effort: the connection is closed next whatever happens.
		_ = tc.CloseWrite()
		_, _ = io.Copy(io.Discard, nc)
	}
}

// startHandshakeTimer closes the connection unless its handshake completes
// within the handshake timeout, as Pulsar's first keep-alive tick does ("Pulsar
// Handshake was not completed within timeout, closing connection").
func (c *conn) startHandshakeTimer() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.handshake = time.AfterFunc(c.b.cfg.handshakeDeadline(), func() {
		c.mu.Lock()
		connected := c.connected
		c.mu.Unlock()
		if !connected {
			c.log.Info("closing connection: handshake not completed within the timeout")
			c.close()
		}
	})
}

// stopHandshakeTimer stops the handshake timer once the handshake is done.
func (c *conn) stopHandshakeTimer() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.handshake != nil {
		c.handshake.Stop()
	}
}
