package broker

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pulsarsim/pulsarsim/bundles"
)

// Broker is one simulated Pulsar broker. Create it with New, start it with
// Listen or Serve, stop it with Close.
type Broker struct {
	cfg config

	// shared is what this broker shares with the other brokers of its
	// cluster: the store (metadata, ledgers, bundle ownership; package
	// store) and its locks (store.go). Its mu is the broker lock of the
	// lock order (doc.go): it also guards the fields below that say so.
	*shared
	// node is this broker's place in its cluster: its index and the
	// incarnation it serves (cluster.go); 0 for a broker of its own.
	node int

	ln       net.Listener      // under mu
	url      string            // under mu
	webURL   string            // the admin API's http:// URL, when known (under mu)
	topics   map[string]*Topic // the topics loaded here, by canonical name (under mu)
	done     chan struct{}     // closed by Close
	conns    map[*conn]struct{}
	nextProd uint64
	// prodPrefix is the number in the producer names this broker
	// generates, taken from the store's counter as it was created.
	prodPrefix uint64
	lookups    atomic.Int64 // LOOKUP commands answered
	closed     bool
	// stopping is set once a stop began: the broker loads no more topics
	// (under mu).
	stopping bool

	wg sync.WaitGroup
	// acceptErr is the error that made a listener stop accepting (under mu).
	acceptErr error

	faults faults
	timers timers

	events eventQueue

	tlsLn  net.Listener // the pulsar+ssl:// listener, if any (under mu)
	tlsURL string
	// reach is the broker's cut-off state (reachability.go, under mu).
	reach reachability

	// trimBlock and trimBlockBytes bound a topic's blocks of entries; 0
	// means DefaultTrimBlock and DefaultTrimBlockBytes. Set only by tests,
	// before Listen.
	trimBlock, trimBlockBytes int64
}

// New returns a broker configured by opts. It serves nothing until Listen or
// Serve is called.
func New(opts ...Option) *Broker {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.policies = cfg.brokerPolicies()
	b := &Broker{
		cfg:    cfg,
		shared: cfg.store,
		node:   cfg.node,
		topics: map[string]*Topic{},
		done:   make(chan struct{}),
		conns:  map[*conn]struct{}{},
	}
	if b.shared == nil {
		b.shared = newShared(cfg)
	}
	b.mu.Lock()
	b.members[b.node] = b
	b.prodPrefix = b.data.NextProducerPrefix
	b.data.NextProducerPrefix++
	b.mu.Unlock()
	b.initTransactions()
	return b
}

// ErrClosed is returned when a closed broker is asked to serve.
var ErrClosed = errors.New("broker: closed")

// Listen starts serving on addr ("127.0.0.1:0" picks a free port) and returns
// at once; the broker accepts connections in the background.
func (b *Broker) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := b.attach(ln); err != nil {
		ln.Close()
		return err
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.acceptLoop(ln) // a failure is logged, and Close returns it
	}()
	return nil
}

// Serve accepts connections on ln until the broker is closed. It returns
// ErrClosed after Close, or the listener's error when accepting fails for
// good (temporary failures are retried). The broker keeps serving the
// connections it has.
func (b *Broker) Serve(ln net.Listener) error {
	if err := b.attach(ln); err != nil {
		return err
	}
	if err := b.acceptLoop(ln); err != nil {
		return err
	}
	return ErrClosed
}

func (b *Broker) attach(ln net.Listener) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.diskErr != nil {
		return b.diskErr
	}
	if b.ln != nil {
		return errors.New("broker: already serving")
	}
	b.ln = ln
	b.url = "pulsar://" + ln.Addr().String()
	b.data.Owners.Update(b.node, func(nd *bundles.Node) {
		nd.URL, nd.TLSURL, nd.Alive = b.advertise(b.url), b.advertise(b.tlsURL), true
	})
	b.startTimers()
	if b.cfg.authn != nil && b.cfg.authRefresh > 0 {
		b.every(b.cfg.authRefresh, b.checkCredentials)
	}
	return nil
}

// every runs fn each interval of wall time on a goroutine of its own until
// the broker closes (the credentials check uses it).
func (b *Broker) every(interval time.Duration, fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-b.done:
				return
			case <-tick.C:
				fn()
			}
		}
	}()
}

// acceptLoop accepts connections on ln until the broker closes (it returns
// nil) or accepting fails for good (it logs the error and returns it). A
// temporary failure, such as running out of file descriptors, is retried
// after a pause that doubles from 5 ms up to 1 s, as net/http's Server does.
func (b *Broker) acceptLoop(ln net.Listener) error {
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-b.done:
				return nil
			default:
			}
			b.mu.Lock()
			retired := b.retiredLocked(ln)
			b.mu.Unlock()
			if retired {
				return nil // closed by a cut (reachability.go)
			}
			if te, ok := err.(interface{ Temporary() bool }); !ok || !te.Temporary() {
				b.cfg.logger.Error("broker: accepting connections failed; no new connection will be served",
					"addr", ln.Addr().String(), "err", err)
				b.mu.Lock()
				if b.acceptErr == nil {
					b.acceptErr = fmt.Errorf("broker: accepting on %s: %w", ln.Addr(), err)
				}
				b.mu.Unlock()
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			b.cfg.logger.Warn("broker: accept failed; retrying", "err", err, "in", pause)
			select {
			case <-b.done:
				return nil
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		c := newConn(b, nc)
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			nc.Close()
			return nil
		}
		if msg := b.admitConnLocked(nc, c.ip); msg != "" {
			b.wg.Add(1)
			b.mu.Unlock()
			go b.refuseConn(nc, msg)
			continue
		}
		c.startHandshakeTimer()
		b.conns[c] = struct{}{}
		b.wg.Add(2)
		b.mu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
}

// Addr returns the address the broker listens on, or nil before Listen.
func (b *Broker) Addr() net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln == nil {
		return nil
	}
	return b.ln.Addr()
}

// URL returns the broker's service URL, "pulsar://host:port".
func (b *Broker) URL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.url
}

// Close stops the listener, closes every connection and waits until all of
// the broker's goroutines have returned. It returns the error that made a
// listener stop accepting connections before, if one did.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		err := b.acceptErr
		b.mu.Unlock()
		b.wg.Wait()
		return err
	}
	b.closed = true
	close(b.done)
	// A broker of a cluster closed without Stop or Crash is gone as a
	// crashed one is: its bundles stay its own until the ownership timeout.
	now := b.cfg.clock.Now()
	b.data.Owners.Update(b.node, func(nd *bundles.Node) {
		if nd.Alive {
			nd.Alive, nd.GoneAt = false, now
		}
	})
	ln, tlsLn := b.ln, b.tlsLn
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	if tlsLn != nil {
		tlsLn.Close()
	}
	for _, c := range conns {
		c.close()
	}
	b.wg.Wait()
	diskErr := b.closeDataDir()
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.acceptErr, diskErr)
}

func (b *Broker) removeConn(c *conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// DropConnections closes every client connection, as a broker crash or a
// network cut would. Clients see their sockets close and reconnect. It
// returns how many connections were dropped.
func (b *Broker) DropConnections() int {
	b.mu.Lock()
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// generatedProducerName returns a producer name in Pulsar's style,
// "<cluster>-<broker prefix>-<counter>": a broker of a fresh standalone
// names its producers standalone-0-0, standalone-0-1..., and once restarted
// on its data standalone-1-0..., so that a deduplicating topic never takes
// a new producer for an old one of the same name.
func (b *Broker) generatedProducerName() string {
	b.mu.Lock()
	n := b.nextProd
	b.nextProd++
	b.mu.Unlock()
	return fmt.Sprintf("%s-%d-%d", b.cfg.clusterName, b.prodPrefix, n)
}
