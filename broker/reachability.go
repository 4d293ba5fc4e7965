package broker

import (
	"crypto/tls"
	"errors"
	"net"
)

// A broker, or every broker of a cluster, can be cut off from its clients
// and brought back while it keeps its state, as a network partition or a
// firewall rule does to a real one: clients' own failover (a service URL
// naming several hosts, the Java, C++ and Python clients' cluster
// failover) is then tested against a cluster that goes away and comes
// back, which a crash (Cluster.Crash) cannot bring back with its topics
// loaded. While cut off, the broker's listeners are closed, so a client's
// connect is refused as by a host whose port is closed, and its
// connections are cut; brought back, it listens on the same addresses
// again. The admin API, which the broker does not serve, stays up.

// reachability is a broker's cut-off state (under the broker lock).
type reachability struct {
	// cut is set while the broker is cut off from its clients.
	cut bool
	// tlsCfg is the configuration of the pulsar+ssl:// listener, kept to
	// listen again.
	tlsCfg *tls.Config
	// addr and tlsAddr are the addresses the listeners served before the
	// cut, to listen on again.
	addr, tlsAddr string
	// retired are the listeners closed by a cut, by their address value
	// (a listener's Addr is the same value for its life, a new
	// listener's a new one): their accept loops end quietly.
	retired map[net.Addr]bool
}

// ErrNotServing is returned when a broker that serves nothing is cut off or
// brought back.
var ErrNotServing = errors.New("broker: not serving")

// CutOff makes the broker unreachable to clients while it keeps its state:
// it closes its listeners (a connect is refused) and cuts every client
// connection. It is a no-op on a broker cut off already.
func (b *Broker) CutOff() error {
	b.mu.Lock()
	if b.closed || b.ln == nil {
		b.mu.Unlock()
		return ErrNotServing
	}
	if b.reach.cut {
		b.mu.Unlock()
		return nil
	}
	r := &b.reach
	r.cut = true
	if r.retired == nil {
		r.retired = map[net.Addr]bool{}
	}
	lns := []net.Listener{b.ln}
	r.addr = b.ln.Addr().String()
	r.retired[b.ln.Addr()] = true
	if b.tlsLn != nil {
		lns = append(lns, b.tlsLn)
		r.tlsAddr = b.tlsLn.Addr().String()
		r.retired[b.tlsLn.Addr()] = true
	}
	b.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	b.DropConnections()
	return nil
}

// Reconnect brings a broker cut off by CutOff back: it listens again on the
// addresses it served (retrying for a moment while the old sockets are
// released). It is a no-op on a broker that is not cut off.
func (b *Broker) Reconnect() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	r := b.reach
	b.mu.Unlock()
	if !r.cut {
		return nil
	}
	var ln, tlsLn net.Listener
	if err := retryListen(func() (err error) { ln, err = net.Listen("tcp", r.addr); return err }); err != nil {
		return err
	}
	if r.tlsAddr != "" {
		if err := retryListen(func() (err error) { tlsLn, err = net.Listen("tcp", r.tlsAddr); return err }); err != nil {
			ln.Close()
			return err
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		ln.Close()
		if tlsLn != nil {
			tlsLn.Close()
		}
		return ErrClosed
	}
	b.reach.cut = false
	b.ln = ln
	if tlsLn != nil {
		b.tlsLn = tlsLn
	}
	b.wg.Add(1)
	if tlsLn != nil {
		b.wg.Add(1)
	}
	cfg := b.reach.tlsCfg
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		_ = b.acceptLoop(ln)
	}()
	if tlsLn != nil {
		go func() {
			defer b.wg.Done()
			_ = b.acceptLoop(tls.NewListener(tlsLn, cfg))
		}()
	}
	return nil
}

// IsCutOff reports whether the broker is cut off from its clients now.
func (b *Broker) IsCutOff() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reach.cut
}

// retiredLocked reports whether ln was closed by a cut: its accept loop
// ends without an error. The caller holds the broker lock.
func (b *Broker) retiredLocked(ln net.Listener) bool {
	return b.reach.retired[ln.Addr()]
}

// CutOff cuts every broker of the cluster off from its clients (see
// Broker.CutOff; a stopped or crashed one is skipped), as a network partition around the cluster would: what
// the brokers hold stays, bundles keep their owners.
func (c *Cluster) CutOff() error {
	var errs []error
	for _, b := range c.Brokers() {
		if err := b.CutOff(); err != nil && !errors.Is(err, ErrNotServing) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Reconnect brings every broker of the cluster cut off by CutOff back (a
// stopped or crashed one stays down: Start brings it back).
func (c *Cluster) Reconnect() error {
	var errs []error
	for _, b := range c.Brokers() {
		if err := b.Reconnect(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Serving reports whether the broker has listened and is not closed (a
// broker cut off by CutOff still serves: it keeps its state).
func (b *Broker) Serving() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ln != nil && !b.closed
}

// cutOffCluster cuts every serving broker of the broker's cluster off from
// its clients (a fault's CutOff).
func (b *Broker) cutOffCluster() {
	b.mu.Lock()
	members := make([]*Broker, 0, len(b.members))
	for _, m := range b.members {
		members = append(members, m)
	}
	b.mu.Unlock()
	for _, m := range members {
		_ = m.CutOff() // a broker stopped meanwhile has nothing to cut
	}
}
