// Package broker is pulsarsim's server: the TCP listener and connections,
// the handshake, lookups, topics with their in-memory logs, producers,
// subscriptions and consumers. It is the I/O shell around the pure cursor and
// dispatch packages: every decision about acknowledgement and delivery is
// theirs, and the broker only carries frames to and from the clients.
package broker
