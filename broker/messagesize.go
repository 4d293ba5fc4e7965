package broker

// MaxMessageSize is the broker's maxMessageSize in bytes (WithMaxMessageSize),
// the limit a topic's maxMessageSize policy must stay within.
func (b *Broker) MaxMessageSize() int { return b.cfg.maxMessageSize }
