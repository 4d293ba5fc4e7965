package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/proxy"
)

// loadManagers maps the values -load-manager takes, Pulsar's class names for
// loadManagerClassName and their short names, to the load managers.
var loadManagers = map[string]broker.LoadManager{
	"modular":    broker.ModularLoadManager,
	"extensible": broker.ExtensibleLoadManager,
	"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl":          broker.ModularLoadManager,
	"org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl": broker.ExtensibleLoadManager,
}

// loadManagerNames returns the values -load-manager accepts, sorted.
func loadManagerNames() []string {
	names := make([]string, 0, len(loadManagers))
	for n := range loadManagers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// parseLoadManager reads -load-manager.
func parseLoadManager(v string) (broker.LoadManager, error) {
	if lm, ok := loadManagers[v]; ok {
		return lm, nil
	}
	return 0, fmt.Errorf("-load-manager %q: want modular or extensible (or Pulsar's class name of either)", v)
}

// shiftPort returns addr with its port moved up by i ("127.0.0.1:6650", 2 ->
// "127.0.0.1:6652"); port 0 stays 0 (a free port for each).
func shiftPort(addr string, i int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("port of %s: %w", addr, err)
	}
	if p != 0 {
		p += i
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// clusterSpec is what serveCluster starts: n brokers, the i-th serving the
// binary protocol on addr's port + i and its admin API on httpAddr's port +
// i (none when httpAddr is empty), each with its web view when withView
// (all reading one history of at most viewHistory events of the cluster).
type clusterSpec struct {
	n              int
	addr, httpAddr string
	opts           []broker.Option
	withView       bool
	viewHistory    int
	logger         *slog.Logger
	// wrap puts the web port's authentication in front of the admin API.
	wrap func(http.Handler) (http.Handler, error)
	// proxyAddr and proxyHTTP, when set, are where a Pulsar Proxy in front
	// of the brokers serves the binary protocol and the admin API.
	proxyAddr, proxyHTTP string
	// tlsCfg, when set, is served by every broker: pulsar+ssl:// on
	// tlsAddr's port + i, and the admin API over https:// on httpsAddr's
	// port + i.
	tlsCfg             *tls.Config
	tlsAddr, httpsAddr string
	// onServing, when set, is called once every broker serves (geo.go).
	onServing func(*broker.Cluster)
}

// serveCluster runs a cluster of spec.n brokers over one store until ctx is
// done, logging each broker's URLs.
func serveCluster(ctx context.Context, spec clusterSpec) error {
	c := broker.NewCluster(spec.n, spec.opts...)
	addrs := make([]string, spec.n)
	for i := range addrs {
		a, err := shiftPort(spec.addr, i)
		if err != nil {
			return fmt.Errorf("-addr: %w", err)
		}
		addrs[i] = a
	}
	var servers []*http.Server
	var webs []*view.Handler
	closeAll := func() {
		for _, w := range webs {
			w.Close()
		}
		for _, s := range servers {
			s.Close()
		}
		c.Close()
	}
	// One history of the cluster's events, which every broker's view
	// reads: a topic's messages keep their lives across its moves.
	h := view.NewHistory(spec.viewHistory)
	for _, b := range c.Brokers() {
		if spec.withView && spec.httpAddr != "" {
			h.Follow(b)
			webs = append(webs, view.New(b, h))
		}
	}
	if err := c.Listen(addrs...); err != nil {
		closeAll()
		return err
	}
	if spec.tlsCfg != nil {
		tlsAddrs := make([]string, spec.n)
		for i := range tlsAddrs {
			a, err := shiftPort(spec.tlsAddr, i)
			if err != nil {
				closeAll()
				return fmt.Errorf("-tls-addr: %w", err)
			}
			tlsAddrs[i] = a
		}
		if err := c.ListenTLS(spec.tlsCfg, tlsAddrs...); err != nil {
			closeAll()
			return err
		}
	}
	failed := make(chan error, 2*spec.n+1) // each broker's admin servers, and the proxy's
	for i, b := range c.Brokers() {
		attrs := []any{"broker", i, "url", b.URL()}
		if u := b.TLSURL(); u != "" {
			attrs = append(attrs, "tls", u)
		}
		if spec.httpAddr != "" {
			a, err := shiftPort(spec.httpAddr, i)
			if err != nil {
				closeAll()
				return fmt.Errorf("-http: %w", err)
			}
			ln, err := net.Listen("tcp", a)
			if err != nil {
				closeAll()
				return err
			}
			web := b.Advertised("http://" + ln.Addr().String())
			b.SetWebServiceURL(web)
			var webTLS string
			var tln net.Listener
			if spec.tlsCfg != nil {
				ta, err := shiftPort(spec.httpsAddr, i)
				if err == nil {
					tln, err = net.Listen("tcp", ta)
				}
				if err != nil {
					ln.Close()
					closeAll()
					return fmt.Errorf("-https: %w", err)
				}
				webTLS = b.Advertised("https://" + tln.Addr().String())
			}
			opts := []admin.Option{admin.WithWebServiceURLs(web, webTLS)}
			if spec.withView {
				for pattern, h := range webs[i].Routes() {
					opts = append(opts, admin.WithHandler(pattern, h))
				}
			}
			h, err := spec.wrap(admin.New(b, opts...))
			if err != nil {
				ln.Close()
				closeAll()
				return err
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
			servers = append(servers, srv)
			go func() { failed <- srv.Serve(ln) }()
			attrs = append(attrs, "admin", web)
			if tln != nil {
				tsrv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
				servers = append(servers, tsrv)
				go func() { failed <- tsrv.Serve(tls.NewListener(tln, spec.tlsCfg)) }()
				attrs = append(attrs, "admin-tls", webTLS)
			}
		}
		spec.logger.Info("pulsarsim broker serving", attrs...)
	}
	if spec.proxyAddr != "" {
		px, srv, err := startProxy(c, spec, failed)
		if err != nil {
			closeAll()
			return err
		}
		defer px.Close()
		if srv != nil {
			servers = append(servers, srv)
		}
	}
	if spec.onServing != nil {
		spec.onServing(c)
	}
	spec.logger.Info("pulsarsim cluster serving", "brokers", spec.n, "url", c.URL())
	watchReachability(ctx, spec.logger, c.CutOff, c.Reconnect)
	var err error
	select {
	case err = <-failed:
		if !errors.Is(err, http.ErrServerClosed) {
			spec.logger.Error("pulsarsim admin API failed", "err", err)
			err = fmt.Errorf("admin API: %w", err)
		}
	case <-ctx.Done():
		spec.logger.Info("pulsarsim stopping")
	}
	closeAll()
	return err
}

// startProxy starts the Pulsar Proxy of spec in front of c, and its admin
// API when spec.proxyHTTP is set (whose server's failure goes to failed).
func startProxy(c *broker.Cluster, spec clusterSpec, failed chan<- error) (*proxy.Proxy, *http.Server, error) {
	urls := func(web bool) []string {
		var out []string
		for _, info := range c.Broker(0).Brokers() {
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
	px := proxy.New(func() []string { return urls(false) }, func() []string { return urls(true) })
	if err := px.Listen(spec.proxyAddr); err != nil {
		return nil, nil, fmt.Errorf("-proxy-addr: %w", err)
	}
	attrs := []any{"url", px.URL()}
	var srv *http.Server
	if spec.proxyHTTP != "" {
		ln, err := net.Listen("tcp", spec.proxyHTTP)
		if err != nil {
			px.Close()
			return nil, nil, fmt.Errorf("-proxy-http: %w", err)
		}
		srv = &http.Server{Handler: px.HTTPHandler(), ReadHeaderTimeout: readHeaderTimeout}
		go func() { failed <- srv.Serve(ln) }()
		attrs = append(attrs, "admin", "http://"+ln.Addr().String())
	}
	spec.logger.Info("pulsarsim proxy serving", attrs...)
	return px, srv, nil
}
