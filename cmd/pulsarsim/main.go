// Command pulsarsim runs a simulated Apache Pulsar broker on 127.0.0.1:6650,
// with its admin HTTP API on 127.0.0.1:8080, until it is interrupted. Any
// Pulsar client can connect to it. Given a certificate it also serves
// pulsar+ssl:// on 6651 and https:// on 8443, as a standalone does; -config
// reads a Pulsar standalone.conf. It exits non-zero when a listener cannot be
// opened, or when the admin API's server fails while running.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/websocket"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pulsarsim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("pulsarsim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6650", "address to serve the Pulsar binary protocol on")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address to serve the admin HTTP API on (empty: none)")
	maxMsg := fs.Int("max-message-size", 5*1024*1024, "maxMessageSize in bytes, advertised to clients")
	autoCreate := fs.Bool("auto-create-topics", true, "create topics on first use")
	autoNamespaces := fs.Bool("auto-create-namespaces", false,
		"create a topic's namespace and tenant on first use (a pulsarsim convenience; Pulsar refuses topics of a namespace that does not exist)")
	ksHashing := fs.Bool("key-shared-consistent-hashing", true,
		"Key_Shared AUTO_SPLIT on a consistent-hash ring (false: hash ranges split in halves)")
	batchIndexAck := fs.Bool("batch-index-ack", false,
		"acknowledgmentAtBatchIndexLevelEnabled: honour acks of single batch indexes (Pulsar 4.0 default: off)")
	transactions := fs.Bool("transactions", false,
		"transactionCoordinatorEnabled: run the transaction coordinator (Pulsar standalone default: off)")
	maxTxns := fs.Int("max-active-transactions", 0, "maxActiveTransactionsPerCoordinator (0: no limit)")
	deleteInactive := fs.Bool("delete-inactive-topics", true,
		"brokerDeleteInactiveTopicsEnabled: delete topics that have been inactive for a while (false: keep every topic)")
	inactiveFrequency := fs.Int("delete-inactive-topics-frequency", 60,
		"brokerDeleteInactiveTopicsFrequencySeconds: how often inactive topics are looked for")
	inactiveMax := fs.Int("delete-inactive-topics-max-inactive", 0,
		"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds: how long a topic must be inactive (0: the frequency)")
	inactiveMode := fs.String("delete-inactive-topics-mode", string(broker.DeleteWhenNoSubscriptions),
		"brokerDeleteInactiveTopicsMode: delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
	dedup := fs.Bool("deduplication", false,
		"brokerDeduplicationEnabled: drop messages whose producer name and sequence id were already stored, unless a namespace or topic policy says otherwise")
	var limits broker.Limits
	fs.IntVar(&limits.MaxProducersPerTopic, "max-producers-per-topic", 0, "maxProducersPerTopic (0: no limit)")
	fs.IntVar(&limits.MaxSameAddressProducersPerTopic, "max-same-address-producers-per-topic", 0,
		"maxSameAddressProducersPerTopic (0: no limit)")
	fs.IntVar(&limits.MaxConsumersPerTopic, "max-consumers-per-topic", 0, "maxConsumersPerTopic (0: no limit)")
	fs.IntVar(&limits.MaxSameAddressConsumersPerTopic, "max-same-address-consumers-per-topic", 0,
		"maxSameAddressConsumersPerTopic (0: no limit)")
	fs.IntVar(&limits.MaxConsumersPerSubscription, "max-consumers-per-subscription", 0,
		"maxConsumersPerSubscription (0: no limit)")
	fs.IntVar(&limits.MaxSubscriptionsPerTopic, "max-subscriptions-per-topic", 0, "maxSubscriptionsPerTopic (0: no limit)")
	fs.IntVar(&limits.MaxConnections, "max-connections", 0, "brokerMaxConnections (0: no limit)")
	fs.IntVar(&limits.MaxConnectionsPerIP, "max-connections-per-ip", 0, "brokerMaxConnectionsPerIp (0: no limit)")
	writeLow := fs.Int("write-buffer-low-water-mark", broker.DefaultWriteBufferLowWaterMark,
		"pulsarChannelWriteBufferLowWaterMark: a slow reader gets messages again once its unsent bytes fall to this")
	writeHigh := fs.Int("write-buffer-high-water-mark", broker.DefaultWriteBufferHighWaterMark,
		"pulsarChannelWriteBufferHighWaterMark: a connection with this many unsent bytes gets no more messages (0: no limit)")
	handshakeTimeout := fs.Duration("handshake-timeout", 0,
		"close a connection whose handshake is not done by then (0: the keep-alive interval, 30s, as Pulsar)")
	serveView := fs.Bool("view", true, "serve the web view at /view/ on the admin HTTP port")
	serveWS := fs.Bool("websocket", false,
		"webSocketServiceEnabled: serve Pulsar's WebSocket API at /ws/ on the admin HTTP port (a standalone's default: off)")
	wsToken := fs.String("websocket-token", "",
		"a token the WebSocket API's internal client presents to the broker, needed under authentication (its role should be a super-user's)")
	wsPing := fs.Int("websocket-ping-seconds", 0,
		"webSocketPingDurationSeconds: ping every WebSocket session this often (0 or less: never)")
	wsIdle := fs.Int("websocket-idle-timeout-ms", int(websocket.DefaultIdleTimeout/time.Millisecond),
		"webSocketSessionIdleTimeoutMillis: close a WebSocket session that sent nothing for this long (0: never)")
	wsMaxFrame := fs.Int("websocket-max-text-frame-size", websocket.DefaultMaxTextFrameSize,
		"webSocketMaxTextFrameSize: the largest message a WebSocket session may send, in bytes")
	viewHistory := fs.Int("view-history", view.DefaultHistoryLimit,
		"the number of newest broker events the web view keeps for its pictures of message lives")
	verbose := fs.Bool("v", false, "log every connection event")
	configFile := fs.String("config", "", "a Pulsar standalone.conf: its ports, TLS, authentication and authorization keys set the flags not given")
	sec := addSecurityFlags(fs)
	quota := addQuotaFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *configFile != "" {
		if err := applyConfigFile(fs, *configFile); err != nil {
			return err
		}
	}
	secOpts, err := sec.brokerOptions()
	if err != nil {
		return err
	}
	quotaOpts, err := quota.brokerOptions()
	if err != nil {
		return err
	}
	secOpts = append(secOpts, quotaOpts...)
	tlsCfg, err := sec.tlsConfig()
	if err != nil {
		return err
	}
	inactive := broker.InactiveTopicDeletion{Enabled: *deleteInactive,
		Frequency:   time.Duration(*inactiveFrequency) * time.Second,
		MaxInactive: time.Duration(*inactiveMax) * time.Second,
		Mode:        broker.InactiveTopicDeleteMode(*inactiveMode)}
	if m := inactive.Mode; m != broker.DeleteWhenNoSubscriptions && m != broker.DeleteWhenSubscriptionsCaughtUp {
		return fmt.Errorf("-delete-inactive-topics-mode %q: want %s or %s", m,
			broker.DeleteWhenNoSubscriptions, broker.DeleteWhenSubscriptionsCaughtUp)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b := broker.New(append([]broker.Option{
		broker.WithLogger(logger),
		broker.WithMaxMessageSize(*maxMsg),
		broker.WithAutoTopicCreation(*autoCreate),
		broker.WithAutoNamespaceCreation(*autoNamespaces),
		broker.WithKeySharedConsistentHashing(*ksHashing),
		broker.WithBatchIndexAck(*batchIndexAck),
		broker.WithTransactions(*transactions),
		broker.WithMaxActiveTransactions(*maxTxns),
		broker.WithInactiveTopicDeletion(inactive),
		broker.WithDeduplication(*dedup),
		broker.WithLimits(limits),
		broker.WithHandshakeTimeout(*handshakeTimeout),
		broker.WithWriteBufferWaterMarks(*writeLow, *writeHigh),
	}, secOpts...)...)
	var web *view.Handler
	if *serveView && *httpAddr != "" {
		// The history records from before the first client, so the view
		// sees every event since the start (the newest ones, to its bound).
		h := view.NewHistory(*viewHistory)
		b.OnEvent(h.Record)
		web = view.New(b, h)
	}
	if err := b.Listen(*addr); err != nil {
		return err
	}
	logger.Info("pulsarsim serving", "url", b.URL())
	var adminOpts []admin.Option
	if web != nil {
		for pattern, h := range web.Routes() {
			adminOpts = append(adminOpts, admin.WithHandler(pattern, h))
		}
	}
	if tlsCfg != nil {
		if err := b.ListenTLS(*sec.tlsAddr, tlsCfg); err != nil {
			b.Close()
			return err
		}
		logger.Info("pulsarsim serving TLS", "url", b.TLSURL())
	}
	var listeners []net.Listener // the admin API's: plain, then TLS
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			b.Close()
			return err
		}
		listeners = append(listeners, ln)
		logger.Info("pulsarsim admin API serving", "url", "http://"+ln.Addr().String())
		if web != nil {
			logger.Info("pulsarsim web view", "url", "http://"+ln.Addr().String()+"/view/")
		}
		if tlsCfg != nil {
			tln, err := net.Listen("tcp", *sec.httpsAddr)
			if err != nil {
				ln.Close()
				b.Close()
				return err
			}
			listeners = append(listeners, tls.NewListener(tln, tlsCfg))
			logger.Info("pulsarsim admin API serving TLS", "url", "https://"+tln.Addr().String())
		}
	}
	var ws *websocket.Server
	if *serveWS && *httpAddr != "" {
		wsOpts := []websocket.Option{websocket.WithIdleTimeout(time.Duration(*wsIdle) * time.Millisecond),
			websocket.WithMaxTextFrameSize(*wsMaxFrame)}
		if *wsPing > 0 {
			wsOpts = append(wsOpts, websocket.WithPingInterval(time.Duration(*wsPing)*time.Second))
		}
		if *wsToken != "" {
			token := *wsToken
			wsOpts = append(wsOpts, websocket.WithClientOptions(func(o *pulsar.ClientOptions) {
				o.Authentication = pulsar.NewAuthenticationToken(token)
			}))
		}
		ws = websocket.New(b, wsOpts...)
		if len(listeners) > 0 {
			logger.Info("pulsarsim WebSocket API", "url", "ws://"+listeners[0].Addr().String()+"/ws/v2/")
		}
		for pattern, h := range ws.Routes() {
			adminOpts = append(adminOpts, admin.WithHandler(pattern, h))
		}
	}
	adminOpts = append(adminOpts, admin.WithWebServiceURLs(webURLs(listeners)))
	httpHandler, err := sec.httpHandler(admin.New(b, adminOpts...))
	if err != nil {
		for _, ln := range listeners {
			ln.Close()
		}
		b.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var onShutdown func()
	if web != nil {
		onShutdown = web.Close
	}
	err = serveAdmin(ctx, logger, httpHandler, onShutdown, listeners...)
	if ws != nil {
		// Its sessions are hijacked connections, which the HTTP servers'
		// shutdown leaves alone: they end here, with 1001, before the broker.
		ws.Close()
	}
	if err == nil {
		logger.Info("pulsarsim stopping")
	}
	return errors.Join(err, b.Close())
}

// serveAdmin serves the admin API h on each listener until ctx is done,
// then shuts the servers down (each runs onShutdown, when given). When a
// server fails first (its listener broke), it logs the failure, shuts the
// others down and returns it, so that the process exits non-zero instead of
// running on without its admin API.
func serveAdmin(ctx context.Context, logger *slog.Logger, h http.Handler, onShutdown func(), lns ...net.Listener) error {
	failed := make(chan error, len(lns))
	srvs := make([]*http.Server, len(lns))
	for i, ln := range lns {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		if onShutdown != nil {
			srv.RegisterOnShutdown(onShutdown)
		}
		srvs[i] = srv
		go func() { failed <- srv.Serve(ln) }()
	}
	var err error
	select {
	case err = <-failed:
		logger.Error("pulsarsim admin API failed", "err", err)
		err = fmt.Errorf("admin API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range srvs {
		if e := srv.Shutdown(shutdown); e != nil {
			logger.Error("pulsarsim admin API shutdown", "err", e)
		}
	}
	return err
}

// webURLs returns the admin API's http:// and https:// URLs, from its
// listeners (plain, then TLS).
func webURLs(listeners []net.Listener) (httpURL, httpsURL string) {
	if len(listeners) > 0 {
		httpURL = "http://" + listeners[0].Addr().String()
	}
	if len(listeners) > 1 {
		httpsURL = "https://" + listeners[1].Addr().String()
	}
	return httpURL, httpsURL
}
