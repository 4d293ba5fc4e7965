package testkit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/proxy"
)

// Cluster is a pulsarsim cluster started for one test: several brokers,
// each with its own binary and admin listeners, over one store (metadata,
// ledgers, bundle ownership), as a Pulsar cluster's brokers share
// ZooKeeper and BookKeeper. Any broker answers a lookup; a bundle gets its
// owner when it is first looked up; topics move when a bundle is unloaded
// and when a broker stops or crashes.
//
// Each broker has the test API of a lone one (Broker); the cluster's own
// calls move topics and stop, crash and start brokers. As a Broker's, they
// fail the test when the cluster refuses what they ask (see the package
// doc); the broker package's Cluster returns the error itself.
type Cluster struct {
	srv   *broker.Cluster
	tb    testing.TB
	clock *broker.OffsetClock
	// ca, secret and superUsers are the security settings every broker's
	// test API shares (WithTLS, WithTokenAuth, WithAuthorization).
	ca         *testCA
	secret     []byte
	superUsers []string

	mu    sync.Mutex
	nodes []*Broker // the test API of each broker, renewed when it starts again
	gone  []*Broker // the test API of brokers stopped and started again since
	// proxy is the Pulsar Proxy in front of the cluster, from the first
	// ProxyURL on; proxyWeb its admin API.
	proxy    *proxy.Proxy
	proxyWeb string
	stops    []func() // stop each broker's admin API
	webs     []string // each broker's admin listener address, kept across restarts
	// history records every broker's events, of every run: what the
	// brokers' web views and the cluster's reports read. It is shared
	// with the other clusters of StartClusters (shared), so that the views
	// show a message's copies on each.
	history *view.History
	shared  bool
}

// StartCluster starts n brokers on 127.0.0.1 and free ports, each with its
// admin API, configured by opts as Start's (WithBroker, and the security
// options but WithOAuth2: with WithTLS every broker serves pulsar+ssl://
// with a certificate of the test's one CA, with WithTokenAuth the brokers
// take the same tokens), and registers tb.Cleanup to close them.
// Broker i's admin API is served on its own port (Broker(i).AdminURL), and
// the brokers know each other's, for HTTP lookups and redirects. The
// cluster's brokers share one clock, which Advance moves.
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	var set settings
	for _, o := range opts {
		o(&set)
	}
	if set.sec.oauth2 {
		tb.Fatalf("pulsarsim: a cluster does not serve WithOAuth2 yet (WithTokenAuth does)")
	}
	secOpts, secret, err := set.sec.brokerOptions()
	if err != nil {
		tb.Fatalf("pulsarsim: security settings: %v", err)
	}
	clock := &broker.OffsetClock{}
	brokerOpts := append([]broker.Option{broker.WithClock(clock)}, secOpts...)
	srv := broker.NewCluster(n, append(brokerOpts, set.broker...)...)
	c := &Cluster{srv: srv, tb: tb, clock: clock, history: set.history, shared: set.history != nil, secret: secret,
		superUsers: set.sec.superUsers}
	if c.history == nil {
		c.history = view.NewHistory(0)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		tb.Fatalf("pulsarsim: start cluster: %v", err)
	}
	if set.sec.tls {
		if err := c.startTLS(set.sec); err != nil {
			srv.Close()
			tb.Fatalf("pulsarsim: start TLS: %v", err)
		}
	}
	for i, b := range srv.Brokers() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			srv.Close()
			tb.Fatalf("pulsarsim: admin API of broker %d: %v", i, err)
		}
		c.webs = append(c.webs, ln.Addr().String())
		c.nodes = append(c.nodes, nil)
		c.stops = append(c.stops, nil)
		c.attach(i, b, ln)
	}
	tb.Cleanup(func() {
		if set.invariants {
			if err := c.CheckInvariants(); err != nil {
				tb.Errorf("pulsarsim: %v", err)
			}
		}
		c.mu.Lock()
		stops := c.stops
		c.mu.Unlock()
		for _, stop := range stops {
			if stop != nil {
				stop()
			}
		}
		if tb.Failed() && !c.shared { // StartClusters writes the reports of its clusters
			reportFailure(tb, func(path string) error {
				return c.writeReport(path, fmt.Sprintf("%s failed. These are the lives of its busiest messages, as the cluster's brokers saw them.", tb.Name()), true)
			})
		}
		srv.Close()
		if tb.Failed() {
			tb.Logf("pulsarsim: what the cluster's brokers saw (busiest messages first):\n%s", c.Timelines(10))
		}
	})
	return c
}

// Events returns every event of the cluster's brokers so far, those of the
// brokers stopped or crashed and started again included, in the order they
// were recorded; each names its broker (Event.Broker) and carries that
// broker's own Seq.
func (c *Cluster) Events() []Event {
	c.history.Deliver()
	events := c.history.Events()
	if c.shared {
		name := c.srv.Broker(0).ClusterName()
		events = slices.DeleteFunc(events, func(e Event) bool { return e.Cluster != name })
	}
	return events
}

// Timeline draws the life of one message as the cluster's brokers saw it,
// as Broker.Timeline does, each line naming its broker, with the topic's
// unloads and loads while the message was unsettled. An invalid topic name
// fails the test.
func (c *Cluster) Timeline(topic string, id MessageID) string {
	c.tb.Helper()
	tn, err := broker.ParseTopicName(topic)
	c.must(err, "timeline of %s", topic)
	k := view.Key{Topic: tn.String(), Ledger: id.Ledger, Entry: id.Entry}
	l := view.LifeOf(c.Events(), c.store(), k)
	if l == nil {
		return fmt.Sprintf("message %d:%d on %s\n  (no event)\n", k.Ledger, k.Entry, k.Topic)
	}
	return l.String()
}

// Timelines draws the timeline of every message the cluster's brokers
// saw, as Timeline does, at most max of them (the ones with the most
// events first), or all when max <= 0.
func (c *Cluster) Timelines(max int) string {
	return timelinesOf(view.Lives(c.Events(), c.store(), nil), max)
}

// store reads entries from the broker serving their topic.
func (c *Cluster) store() view.Store { return view.ClusterStore(c.srv.Brokers()) }

// WriteReport writes a report of the cluster to path, as one self-contained
// HTML file: the pictures of the busiest messages' lives across the
// brokers, with the moves of their topics, and the state of every topic
// each serving broker holds, as a failing test's report of a cluster has.
// It fails the test when the file cannot be written.
func (c *Cluster) WriteReport(path string) {
	c.tb.Helper()
	c.must(c.writeReport(path, fmt.Sprintf("What the cluster's brokers saw during %s.", c.tb.Name()), false), "write the report %s", path)
}

func (c *Cluster) writeReport(path, note string, failed bool) error {
	c.history.Deliver()
	// Every cluster's events, when the history is shared: the lives then
	// show each message's copies on the other clusters.
	rep := view.NewClusterReport(c.srv.Brokers(), c.history.Events(), reportSize)
	rep.Title = c.tb.Name()
	rep.Note, rep.Failed = note, failed
	rep.History = c.history.Stats()
	return writeReportFile(path, rep)
}

// attach gives broker i, serving as b, its test API and its admin API on ln.
func (c *Cluster) attach(i int, b *broker.Broker, ln net.Listener) {
	tk := &Broker{srv: b, tb: c.tb, clock: c.clock, history: view.NewHistory(0), shown: c.history, ca: c.ca,
		secret: c.secret, superUsers: c.superUsers}
	b.OnEvent(tk.history.Record)
	c.history.Follow(b)
	tk.adminMu.Lock()
	stop := tk.serveAdmin(ln)
	tk.adminMu.Unlock()
	c.mu.Lock()
	if old := c.nodes[i]; old != nil {
		c.gone = append(c.gone, old)
	}
	c.nodes[i], c.stops[i] = tk, stop
	c.mu.Unlock()
}

// Size returns how many brokers the cluster has, serving or not.
func (c *Cluster) Size() int { return c.srv.Size() }

// Broker returns the test API of broker i (from 0): the broker serving now,
// or the last one stopped or crashed. It fails the test for an index the
// cluster does not have.
func (c *Cluster) Broker(i int) *Broker {
	c.tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) {
		c.tb.Fatalf("pulsarsim: the cluster has no broker %d", i)
	}
	return c.nodes[i]
}

// URL returns a service URL naming every broker, "pulsar://h1:p1,h2:p2", as
// a client of a cluster is given: the client tries the hosts in turn.
func (c *Cluster) URL() string { return c.srv.URL() }

// AdminURLs returns each broker's admin API URL, by index.
func (c *Cluster) AdminURLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.webs))
	for i, w := range c.webs {
		out[i] = "http://" + w
	}
	return out
}

// Client returns a pulsar-client-go client of the cluster (URL naming every
// broker), with its logging silenced; opts may adjust the options. It is
// closed when the test ends.
func (c *Cluster) Client(opts ...func(*pulsar.ClientOptions)) pulsar.Client {
	c.tb.Helper()
	o := pulsar.ClientOptions{URL: c.URL(), Logger: log.DefaultNopLogger()}
	for _, f := range opts {
		f(&o)
	}
	cl, err := pulsar.NewClient(o)
	if err != nil {
		c.tb.Fatalf("pulsarsim: new client: %v", err)
	}
	c.tb.Cleanup(cl.Close)
	return cl
}

// Owner returns the index of the broker owning topic's bundle (a crashed
// broker's until its ownership times out), or -1 while nobody owns it. Name
// a partition for a partitioned topic.
func (c *Cluster) Owner(topic string) int {
	c.tb.Helper()
	n, err := c.srv.Owner(topic)
	if err != nil {
		c.tb.Fatalf("pulsarsim: owner of %s: %v", topic, err)
	}
	return n
}

// Bundle returns the bundle holding topic, as "tenant/ns/0x..._0x...".
func (c *Cluster) Bundle(topic string) string {
	c.tb.Helper()
	bd, err := c.srv.BundleOf(topic)
	if err != nil {
		c.tb.Fatalf("pulsarsim: bundle of %s: %v", topic, err)
	}
	return bd.String()
}

// Unload unloads the bundle holding topic (see broker.Cluster.Unload).
func (c *Cluster) Unload(topic string) {
	c.tb.Helper()
	c.must(c.srv.Unload(topic), "unload the bundle of %s", topic)
}

// Move unloads the bundle holding topic with broker to as its destination
// (see broker.Cluster.Move): with the default modular load manager the
// bundle goes to it at its next lookup, with the extensible one at once.
func (c *Cluster) Move(topic string, to int) {
	c.tb.Helper()
	c.must(c.srv.Move(topic, to), "move %s to broker %d", topic, to)
}

// Stop shuts broker i down gracefully: it gives its bundles up first, so
// its clients move to the other brokers. Its admin API stops too.
func (c *Cluster) Stop(i int) {
	c.tb.Helper()
	c.stopAdmin(i)
	c.must(c.srv.Stop(i), "stop broker %d", i)
}

// Crash stops broker i without a goodbye: connections cut, its bundles
// its own until the ownership timeout (30 s of broker time: Advance) has
// passed, the acknowledgements its cursors had not persisted lost.
func (c *Cluster) Crash(i int) {
	c.tb.Helper()
	c.stopAdmin(i)
	c.must(c.srv.Crash(i), "crash broker %d", i)
}

// Start starts broker i again after Stop or Crash, on the same binary and
// admin addresses, with nothing loaded.
func (c *Cluster) Start(i int) {
	c.tb.Helper()
	c.must(c.srv.Start(i), "start broker %d", i)
	c.mu.Lock()
	addr := c.webs[i]
	c.mu.Unlock()
	ln, err := listenAgain(addr)
	c.must(err, "admin API of broker %d", i)
	c.attach(i, c.srv.Broker(i), ln)
}

// Restart stops broker i gracefully and starts it again.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	c.Stop(i)
	c.Start(i)
}

// must fails the test when err is set, naming what was asked.
func (c *Cluster) must(err error, what string, args ...any) {
	c.tb.Helper()
	if err != nil {
		c.tb.Fatalf("pulsarsim: %s: %v", fmt.Sprintf(what, args...), err)
	}
}

func (c *Cluster) stopAdmin(i int) {
	c.mu.Lock()
	var stop func()
	if i >= 0 && i < len(c.stops) {
		stop, c.stops[i] = c.stops[i], nil
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// listenAgain listens on addr, retrying for a moment while the listener
// just closed still holds it.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// Advance moves the cluster's clock forward by d and runs what each serving
// broker would have done meanwhile (see Broker.Advance). A crashed
// broker's bundles are free for the others once the ownership timeout has
// passed.
func (c *Cluster) Advance(d time.Duration) {
	c.clock.Advance(d)
	for _, b := range c.srv.Brokers() {
		b.RunTimers()
	}
}

// Messages returns the messages stored on topic, oldest first, with batches
// expanded, as the broker owning it holds them. It fails the test when no
// broker owns the topic.
func (c *Cluster) Messages(topic string) []broker.Message {
	c.tb.Helper()
	n := c.Owner(topic)
	if n < 0 {
		c.tb.Fatalf("pulsarsim: no broker owns %s yet", topic)
	}
	return c.Broker(n).Messages(topic)
}

// CheckInvariants checks the settlement invariants of every broker
// (Broker.CheckInvariants), naming the broker of each failure. A
// dead-letter copy's original may have been published on another broker,
// or on an earlier run of one that was started again: it is looked for in
// the events of all of them.
func (c *Cluster) CheckInvariants() error {
	c.mu.Lock()
	nodes := append([]*Broker(nil), c.nodes...)
	all := append(append([]*Broker(nil), c.gone...), nodes...)
	c.mu.Unlock()
	events := func() []Event {
		var out []Event
		for _, b := range all {
			out = append(out, b.Events()...)
		}
		return out
	}
	var errs []error
	for i, b := range nodes {
		if err := invariantError(b.violations(events)); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// WithLoadManager selects a cluster's load manager (ModularLoadManager by
// default), as Pulsar's loadManagerClassName does.
func WithLoadManager(lm LoadManager) Option { return WithBroker(broker.WithLoadManager(lm)) }

// ProxyURL returns the service URL of a Pulsar Proxy in front of the
// cluster (package proxy), started on a free port at the first call and
// closed when the test ends: clients given it look topics up and reach the
// brokers through it, as behind a proxy in a docker-compose file.
// ProxyAdminURL is its admin API.
func (c *Cluster) ProxyURL() string {
	c.tb.Helper()
	return c.startProxy().URL()
}

// ProxyAdminURL returns the http:// URL of the proxy's admin API, which
// sends each request to a broker and follows its redirects.
func (c *Cluster) ProxyAdminURL() string {
	c.tb.Helper()
	c.startProxy()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxyWeb
}

func (c *Cluster) startProxy() *proxy.Proxy {
	c.tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proxy != nil {
		return c.proxy
	}
	p := proxy.New(func() []string { return c.liveURLs(false) }, func() []string { return c.liveURLs(true) })
	if err := p.Listen("127.0.0.1:0"); err != nil {
		c.tb.Fatalf("pulsarsim: start the proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Close()
		c.tb.Fatalf("pulsarsim: the proxy's admin API: %v", err)
	}
	srv := &http.Server{Handler: p.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	c.tb.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	c.proxy, c.proxyWeb = p, "http://"+ln.Addr().String()
	return p
}

// liveURLs returns the serving brokers' pulsar:// URLs, or their admin
// APIs' http:// ones.
func (c *Cluster) liveURLs(web bool) []string {
	var out []string
	for _, info := range c.srv.Brokers()[0].Brokers() {
		switch {
		case !info.Alive:
		case web && info.WebURL != "":
			out = append(out, info.WebURL)
		case !web:
			out = append(out, info.URL)
		}
	}
	return out
}

// startTLS makes the test's CA and starts every broker's pulsar+ssl://
// listener with its certificate.
func (c *Cluster) startTLS(s securitySettings) error {
	ca, err := newTestCA(c.tb.TempDir())
	if err != nil {
		return err
	}
	cfg, err := ca.serverConfig(s.requireClientCert)
	if err != nil {
		return err
	}
	c.ca = ca
	return c.srv.ListenTLS(cfg)
}

// TLSURL returns a pulsar+ssl:// service URL naming every broker's TLS
// listener (StartCluster needs WithTLS).
func (c *Cluster) TLSURL() string {
	c.tb.Helper()
	if c.ca == nil {
		c.tb.Fatal("pulsarsim: the cluster serves no TLS: start it WithTLS")
	}
	return c.srv.TLSURL()
}

// CAFile returns the path of the PEM file of the test's CA, which signed
// every broker's certificate (StartCluster needs WithTLS).
func (c *Cluster) CAFile() string {
	c.tb.Helper()
	if c.ca == nil {
		c.tb.Fatal("pulsarsim: the cluster serves no TLS: start it WithTLS")
	}
	return c.ca.file
}

// TLSClient is a Client option that connects to the cluster over TLS
// (TLSURL), trusting the test's CA and verifying the brokers' host names.
func (c *Cluster) TLSClient() func(*pulsar.ClientOptions) {
	c.tb.Helper()
	url, ca := c.TLSURL(), c.CAFile()
	return func(o *pulsar.ClientOptions) {
		o.URL, o.TLSTrustCertsFilePath, o.TLSValidateHostname = url, ca, true
	}
}

// Token returns a token for role that every broker of the cluster accepts
// (StartCluster needs WithTokenAuth).
func (c *Cluster) Token(role string) string {
	c.tb.Helper()
	return c.Broker(0).Token(role)
}
