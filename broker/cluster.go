package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/bundles"
)

// Cluster is a Pulsar cluster in one process: several brokers, each with
// its own listeners, connections and loaded topics, over one store (their
// metadata, ledgers and bundle ownership, package store). Any broker answers a
// lookup, redirecting to the owner of the topic's bundle; a bundle gets its
// owner when it is first looked up. Brokers can be stopped (they unload
// their bundles first, as Pulsar's graceful shutdown does), crashed (their
// connections cut, nothing said; their bundles stay theirs until the
// ownership timeout has passed on the broker clock) and started again on
// the same address.
//
// The cluster's own lock (mu) guards its table of brokers. It comes before
// every broker lock: Listen and AddBroker start brokers under it; no broker
// takes it.
type Cluster struct {
	opts []Option
	st   *shared
	cfg  config

	mu      sync.Mutex
	brokers []*Broker
	addrs   []string // where each broker listens, kept for its restarts
	// tlsCfg, once ListenTLS set it, is every broker's TLS configuration,
	// and tlsAddrs where each serves pulsar+ssl://, kept for its restarts.
	tlsCfg   *tls.Config
	tlsAddrs []string
}

// ErrNoSuchBroker is returned for a broker index the cluster does not have.
var ErrNoSuchBroker = errors.New("broker: no such broker in the cluster")

// NewCluster returns a cluster of n brokers configured by opts, each serving
// nothing until Listen. WithOwnershipTimeout sets how long a crashed
// broker's bundles stay its own.
func NewCluster(n int, opts ...Option) *Cluster {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.policies = cfg.brokerPolicies()
	c := &Cluster{opts: slices.Clone(opts), st: newShared(cfg), cfg: cfg}
	if cfg.ownershipTimeout > 0 {
		c.st.data.Owners.SetTimeout(cfg.ownershipTimeout)
	}
	c.st.initializeClusterMetadata()
	for range max(n, 1) {
		c.addBrokerLocked()
	}
	return c
}

// WithOwnershipTimeout sets how long the bundles of a crashed broker stay
// owned by it (Pulsar's metadataStoreSessionTimeoutMillis, 30 s by default).
func WithOwnershipTimeout(d time.Duration) Option {
	return func(c *config) { c.ownershipTimeout = d }
}

// addBrokerLocked creates the next broker of the cluster.
func (c *Cluster) addBrokerLocked() *Broker {
	i := len(c.brokers)
	c.st.mu.Lock()
	c.st.data.Owners.AddNode()
	c.st.mu.Unlock()
	b := c.newBroker(i)
	c.brokers = append(c.brokers, b)
	c.addrs = append(c.addrs, "")
	c.tlsAddrs = append(c.tlsAddrs, "")
	return b
}

func (c *Cluster) newBroker(i int) *Broker {
	return New(append(slices.Clone(c.opts), func(cfg *config) { cfg.store, cfg.node = c.st, i })...)
}

// Listen starts every broker that is not serving yet: the i-th on addrs[i]
// when given ("127.0.0.1:0" otherwise), or on the address it served before.
func (c *Cluster) Listen(addrs ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range c.brokers {
		if b.Addr() != nil {
			continue
		}
		addr := c.addrs[i]
		if i < len(addrs) && addrs[i] != "" {
			addr = addrs[i]
		}
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		if err := b.Listen(addr); err != nil {
			return fmt.Errorf("broker %d: %w", i, err)
		}
		c.addrs[i] = b.Addr().String()
	}
	return nil
}

// Size returns how many brokers the cluster has, serving or not.
func (c *Cluster) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.brokers)
}

// Broker returns the i-th broker (from 0), the one serving now or the last
// one stopped; nil for an index the cluster does not have.
func (c *Cluster) Broker(i int) *Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.brokers) {
		return nil
	}
	return c.brokers[i]
}

// Brokers returns every broker, by index.
func (c *Cluster) Brokers() []*Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.brokers)
}

// URL returns a service URL naming every broker, "pulsar://h1:p1,h2:p2",
// as clients of a cluster hold it.
func (c *Cluster) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	hosts := make([]string, 0, len(c.addrs))
	for _, a := range c.addrs {
		if a != "" {
			hosts = append(hosts, a)
		}
	}
	return "pulsar://" + strings.Join(hosts, ",")
}

// AddBroker adds a broker to the cluster and starts it on addr
// ("127.0.0.1:0" for a free port), and on a free port for pulsar+ssl://
// when the cluster serves TLS. It owns nothing until a lookup gives it a
// bundle. It returns the new broker's index.
func (c *Cluster) AddBroker(addr string) (int, error) {
	c.mu.Lock()
	b := c.addBrokerLocked()
	i := len(c.brokers) - 1
	cfg := c.tlsCfg
	c.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := b.Listen(addr); err != nil {
		return i, err
	}
	c.mu.Lock()
	c.addrs[i] = b.Addr().String()
	c.mu.Unlock()
	if cfg != nil {
		return i, c.listenTLS(i, b, cfg, "127.0.0.1:0")
	}
	return i, nil
}

// ListenTLS starts every serving broker's pulsar+ssl:// listener with cfg:
// the i-th on addrs[i] when given, on a free port otherwise. Lookups then
// answer each owner's TLS URL too, and a broker started again serves TLS on
// the address it served before.
func (c *Cluster) ListenTLS(cfg *tls.Config, addrs ...string) error {
	c.mu.Lock()
	c.tlsCfg = cfg
	brokers := slices.Clone(c.brokers)
	c.mu.Unlock()
	for i, b := range brokers {
		if b.Addr() == nil || b.TLSURL() != "" {
			continue
		}
		addr := "127.0.0.1:0"
		if i < len(addrs) && addrs[i] != "" {
			addr = addrs[i]
		}
		if err := c.listenTLS(i, b, cfg, addr); err != nil {
			return fmt.Errorf("broker %d: %w", i, err)
		}
	}
	return nil
}

// listenTLS starts broker i's TLS listener on addr and keeps where it is.
func (c *Cluster) listenTLS(i int, b *Broker, cfg *tls.Config, addr string) error {
	if err := b.ListenTLS(addr, cfg); err != nil {
		return err
	}
	c.mu.Lock()
	c.tlsAddrs[i] = strings.TrimPrefix(b.TLSURL(), "pulsar+ssl://")
	c.mu.Unlock()
	return nil
}

// TLSURL returns a pulsar+ssl:// service URL naming every broker's TLS
// listener, "" when the cluster serves no TLS.
func (c *Cluster) TLSURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var hosts []string
	for _, a := range c.tlsAddrs {
		if a != "" {
			hosts = append(hosts, a)
		}
	}
	if len(hosts) == 0 {
		return ""
	}
	return "pulsar+ssl://" + strings.Join(hosts, ",")
}

// Owner returns the index of the broker owning topic's bundle now (a
// crashed broker's, until its ownership times out), or -1 when nobody owns
// it (a lookup assigns it). For a partitioned topic, name a partition.
func (c *Cluster) Owner(topic string) (int, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return -1, err
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	bd := c.st.data.Owners.Of(tn.NamespaceName(), tn.String())
	n, _ := c.st.data.Owners.Current(bd, c.cfg.clock.Now())
	return n, nil
}

// BundleOf returns the bundle holding topic (for a partitioned topic, name
// a partition).
func (c *Cluster) BundleOf(topic string) (Bundle, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Bundle{}, err
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.data.Owners.Of(tn.NamespaceName(), tn.String()), nil
}

// Unload unloads the bundle holding topic, as `pulsar-admin namespaces
// unload --bundle` does: its owner closes every producer and consumer of the
// bundle's topics (CLOSE_PRODUCER, CLOSE_CONSUMER, naming no broker) and
// gives the bundle up; clients look their topics up again, and the lookup
// assigns the bundle anew (perhaps to the same broker). A bundle nobody owns
// is left as it is.
func (c *Cluster) Unload(topic string) error { return c.unload(topic, -1) }

// Move unloads the bundle holding topic with broker to as its destination.
// With the modular load manager, to is the bundle's next owner when it is
// next assigned (its affinity; also for a bundle nobody owns yet), and
// clients look their topics up again. With the extensible one it is a
// transfer (PIP-307): to owns the bundle at once, and the CLOSE_PRODUCER and
// CLOSE_CONSUMER the clients get name its URLs, so they connect to it
// without a lookup; the bundle must be owned, and not by to. The
// destination must be alive (ErrNotAllowed).
func (c *Cluster) Move(topic string, to int) error {
	if c.Broker(to) == nil {
		return ErrNoSuchBroker
	}
	return c.unload(topic, to)
}

func (c *Cluster) unload(topic string, to int) error {
	bd, err := c.BundleOf(topic)
	if err != nil {
		return err
	}
	c.st.mu.Lock()
	at, owned := c.st.data.Owners.Current(bd, c.cfg.clock.Now())
	if !owned {
		at = c.st.data.Owners.Leader()
	}
	c.st.mu.Unlock()
	b := c.Broker(at)
	if b == nil {
		return errors.New("broker: no broker of the cluster is alive")
	}
	return b.unloadBundle(bd, to)
}

// Stop shuts broker i down gracefully, as Pulsar's does: it gives up its
// bundles first, closing their producers and consumers so that clients
// move to the other brokers (with the extensible load manager, each bundle
// is transferred to another broker, named in the CLOSE_* frames), then
// closes its connections and listeners.
func (c *Cluster) Stop(i int) error {
	b := c.Broker(i)
	if b == nil {
		return ErrNoSuchBroker
	}
	o := b.data.Owners
	b.mu.Lock()
	b.stopping = true
	o.Update(i, func(nd *bundles.Node) {
		nd.Alive = false
		nd.GoneAt = time.Time{} // nothing left to take over
	})
	moves := map[Bundle]*bundles.Node{}
	for _, bd := range o.OwnedBy(i) {
		o.Free(bd)
		moves[bd] = nil
		// The extensible load manager transfers each bundle to another
		// broker; the modular one leaves it for the next lookup.
		if n := o.Choose(bd); n >= 0 && c.cfg.loadManager == ExtensibleLoadManager {
			o.Assign(bd, n)
			d, _ := o.Node(n)
			moves[bd] = &d
		}
	}
	b.mu.Unlock()
	for bd, dst := range moves {
		b.releaseBundle(bd, dst)
	}
	b.releaseAll(true, nil)
	b.flushConns(time.Second)
	err := b.Close()
	b.releaseAll(false, nil) // anything a client reached meanwhile
	return err
}

// Crash stops broker i without a goodbye: its connections are cut, its
// clients hear nothing, and its bundles stay its own until the ownership
// timeout has passed on the broker clock (lookups meanwhile send clients to
// the dead broker, as Pulsar's do until the crashed broker's metadata
// session expires). What its topics kept in the store survives.
func (c *Cluster) Crash(i int) error {
	b := c.Broker(i)
	if b == nil {
		return ErrNoSuchBroker
	}
	b.mu.Lock()
	b.stopping = true
	now := b.cfg.clock.Now()
	b.data.Owners.Update(i, func(nd *bundles.Node) { nd.Alive, nd.GoneAt = false, now })
	b.mu.Unlock()
	err := b.Close()
	b.releaseAll(false, nil)
	return err
}

// Start starts broker i again after a Stop or a Crash, on the address it
// served before: a new broker process, with nothing loaded, over the same
// store.
func (c *Cluster) Start(i int) error {
	c.mu.Lock()
	if i < 0 || i >= len(c.brokers) {
		c.mu.Unlock()
		return ErrNoSuchBroker
	}
	old, addr, tlsAddr, cfg := c.brokers[i], c.addrs[i], c.tlsAddrs[i], c.tlsCfg
	c.mu.Unlock()
	old.mu.Lock()
	running := !old.closed
	old.mu.Unlock()
	if running {
		return fmt.Errorf("broker %d is serving", i)
	}
	b := c.newBroker(i)
	if err := listenAgain(b, addr); err != nil {
		return err
	}
	if cfg != nil {
		if err := retryListen(func() error { return b.ListenTLS(tlsAddr, cfg) }); err != nil {
			b.Close()
			return err
		}
	}
	c.mu.Lock()
	c.brokers[i] = b
	c.mu.Unlock()
	return nil
}

// listenAgain listens on addr, retrying for a moment while the port is
// still held by the listener just closed.
func listenAgain(b *Broker, addr string) error {
	return retryListen(func() error { return b.Listen(addr) })
}

// retryListen runs listen, again for a moment while it fails to bind (the
// port still held by the listener just closed).
func retryListen(listen func() error) error {
	var err error
	for range 50 {
		if err = listen(); err == nil {
			return nil
		}
		var op *net.OpError
		if !errors.As(err, &op) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Restart stops broker i gracefully and starts it again on its address.
func (c *Cluster) Restart(i int) error {
	if err := c.Stop(i); err != nil {
		return err
	}
	return c.Start(i)
}

// Close closes every broker, and the cluster's data directory (WithDataDir)
// with what a clean stop leaves in it.
func (c *Cluster) Close() error {
	var errs []error
	for _, b := range c.Brokers() {
		errs = append(errs, b.Close())
	}
	if d := c.st.disk; d != nil {
		for _, b := range c.Brokers() {
			errs = append(errs, b.saveAll())
		}
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// releaseBundle unloads the topics of bd this broker has loaded, telling
// their clients, and naming the broker they move to when dst is set (a
// transfer).
func (b *Broker) releaseBundle(bd Bundle, dst *bundles.Node) {
	for _, t := range b.loadedTopics() {
		b.mu.Lock()
		in := t.name.NamespaceName() == bd.Namespace && b.data.Owners.Of(bd.Namespace, t.full) == bd
		b.mu.Unlock()
		if in {
			b.releaseTopic(t, true, dst)
		}
	}
}

// releaseAll unloads every topic this broker has loaded.
func (b *Broker) releaseAll(tell bool, dst *bundles.Node) {
	for _, t := range b.loadedTopics() {
		b.releaseTopic(t, tell, dst)
	}
}

// loadedTopics returns the topics loaded on this broker now.
func (b *Broker) loadedTopics() []*Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := make([]*Topic, 0, len(b.topics))
	for _, t := range b.topics {
		ts = append(ts, t)
	}
	return ts
}

// flushConns waits, at most for d, until every connection has written what
// it queued (the CLOSE_PRODUCER and CLOSE_CONSUMER of a graceful stop).
func (b *Broker) flushConns(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		pending := false
		for c := range b.conns {
			if n, _ := c.unsentBytes(); n > 0 {
				pending = true
				break
			}
		}
		b.mu.Unlock()
		if !pending {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Node returns the broker's index in its cluster (0 for a lone broker).
func (b *Broker) Node() int { return b.node }

// LoadedTopics returns the sorted names of the topics loaded on this broker
// now (Topics lists every topic of the store).
func (b *Broker) LoadedTopics() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.topics))
	for name := range b.topics {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// SetWebServiceURL tells the broker the http:// URL its admin API and HTTP
// lookups are served on, which the cluster's other brokers redirect to and
// name it by (its broker id is the URL's host and port), under the
// advertised address when there is one (Advertised).
func (b *Broker) SetWebServiceURL(u string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u = b.advertise(u)
	b.webURL = u
	b.data.Owners.Update(b.node, func(nd *bundles.Node) { nd.WebURL = u })
}

// WebServiceURL returns the URL SetWebServiceURL gave, "" before.
func (b *Broker) WebServiceURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.webURL
}

// LookupsAnswered counts the LOOKUP commands this broker has answered.
func (b *Broker) LookupsAnswered() int64 { return b.lookups.Load() }
