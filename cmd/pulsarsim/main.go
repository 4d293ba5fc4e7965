// Command pulsarsim runs a simulated Apache Pulsar broker on 127.0.0.1:6650,
// with its admin HTTP API on 127.0.0.1:8080, until it is interrupted. Any
// Pulsar client can connect to it. Given a certificate it also serves
// pulsar+ssl:// on 6651 and https:// on 8443, as a standalone does; -config
// reads a Pulsar standalone.conf (the keys it does not know are named in a
// warning and skipped, as Pulsar skips them). -h prints the flags and exits
// 0. It exits 1 when an argument, a flag's value or a line of the config
// file is refused (each message names the flag, key or line and what it
// accepts), when a listener cannot be opened, or when the admin API's
// server fails while running.
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
	"strings"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/websocket"
)

func main() {
	var err error
	if addr, ok := dockerAPIAddr(os.Args[1:]); ok {
		err = serveDockerAPI(addr, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	} else {
		err = run(os.Args[1:])
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		// -h and -help print the usage and ask for nothing else.
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "pulsarsim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("pulsarsim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6650", "address to serve the Pulsar binary protocol on")
	httpAddr := fs.String("http", "127.0.0.1:8080", "address to serve the admin HTTP API on (empty: none)")
	fs.String("docker-api", "", "serve the Docker Engine API here instead (unix:///path or host:port): containers of Pulsar images run as pulsarsim brokers, for Testcontainers and docker-py tests (set DOCKER_HOST to it)")
	maxMsg := fs.Int("max-message-size", 5*1024*1024, "maxMessageSize in bytes, advertised to clients")
	autoCreate := fs.Bool("auto-create-topics", true, "create topics on first use")
	autoTopicType := fs.String("auto-topic-creation-type", string(broker.TopicTypeNonPartitioned),
		"allowAutoTopicCreationType: the type of topics created on first use, non-partitioned or partitioned")
	defaultPartitions := fs.Int("default-num-partitions", 1,
		"defaultNumPartitions: the partition count of partitioned topics created on first use")
	maxPartitions := fs.Int("max-partitions-per-topic", 0,
		"maxNumPartitionsPerPartitionedTopic: the highest count a namespace's autoTopicCreation policy may set (0: no limit)")
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
	schemaValidation := fs.Bool("schema-validation-enforced", false,
		"isSchemaValidationEnforced: refuse producers without a schema on topics that have one, whatever the namespace and topic policies say")
	entryInterceptors := fs.String("broker-entry-metadata-interceptors", "",
		"brokerEntryMetadataInterceptors: write broker entry metadata before every entry, comma-separated Pulsar class names: "+
			broker.BrokerTimestampInterceptor+" (the broker's publish time), "+broker.IndexInterceptor+" (a per-topic message index)")
	exposeEntryMetadata := fs.Bool("expose-broker-entry-metadata", false,
		"exposingBrokerEntryMetadataToClientEnabled: send the broker entry metadata to consumers that announce support for it")
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
	topicLoad := fs.Duration("topic-load-time", broker.DefaultTopicLoadTime,
		"how long a topic takes to load from the store (after an unload, a restart, a move): the subscribes that load it are answered then")
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
		"the number of newest broker events the web view keeps for its pictures of message lives (a cluster's brokers share one history of that many)")
	verbose := fs.Bool("v", false, "log every connection event")
	brokers := fs.Int("brokers", 1,
		"the number of brokers: N > 1 starts a cluster over one store, the i-th broker (from 0) on the -addr port + i and the -http port + i")
	proxyAddr := fs.String("proxy-addr", "",
		"with -brokers: also serve a Pulsar Proxy in front of the brokers on this address (empty: none)")
	proxyHTTP := fs.String("proxy-http", "", "with -proxy-addr: the proxy's admin API address (empty: none)")
	clusters := fs.String("clusters", "",
		"cluster names, comma-separated: start one cluster of -brokers brokers per name over one configuration store (geo-replication between them), the k-th cluster's i-th broker on the -addr port + k*brokers + i and the -http port + k*brokers + i")
	loadManager := fs.String("load-manager", "modular",
		"loadManagerClassName: how a cluster assigns and moves bundles, modular (Pulsar's default) or extensible")
	clusterName := fs.String("cluster-name", "standalone", "the name of the broker's cluster (clusterName)")
	migrationCheck := fs.Int("cluster-migration-check-seconds", 0,
		"clusterMigrationCheckDurationSeconds: with N > 0 the topics loaded when the cluster is migrated move too (0: only those loaded after)")
	configFile := fs.String("config", "", "a Pulsar standalone.conf: its ports, TLS, authentication and authorization keys set the flags not given")
	sec := addSecurityFlags(fs)
	quota := addQuotaFlags(fs)
	data := addDataFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: pulsarsim takes flags only (-h lists them)", fs.Arg(0))
	}
	var ignoredKeys []string
	if *configFile != "" {
		var err error
		if ignoredKeys, err = applyConfigFile(fs, *configFile); err != nil {
			return err
		}
	}
	if err := checkFlags(fs); err != nil {
		return err
	}
	if *clusterName == "" {
		return errors.New("-cluster-name: a cluster needs a name")
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
	dataOpts, err := data.brokerOptions()
	if err != nil {
		return err
	}
	secOpts = append(secOpts, dataOpts...)
	if *schemaValidation {
		secOpts = append(secOpts, broker.WithDefaultPolicies(broker.Policies{SchemaValidationEnforced: new(true)}))
	}
	tlsCfg, err := sec.tlsConfig()
	if err != nil {
		return err
	}
	inactive := broker.InactiveTopicDeletion{Enabled: *deleteInactive,
		Frequency:   time.Duration(*inactiveFrequency) * time.Second,
		MaxInactive: time.Duration(*inactiveMax) * time.Second,
		Mode:        broker.InactiveTopicDeleteMode(*inactiveMode)}
	entryMeta := broker.BrokerEntryMetadata{ExposeToClients: *exposeEntryMetadata}
	if entryMeta.BrokerTimestamp, entryMeta.Index, err = broker.ParseBrokerEntryMetadataInterceptors(*entryInterceptors); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if len(ignoredKeys) > 0 {
		logger.Warn("pulsarsim ignores the keys of the config file it does not know, as Pulsar does",
			"file", *configFile, "count", len(ignoredKeys), "keys", strings.Join(ignoredKeys, ","))
	}
	lm, err := parseLoadManager(*loadManager)
	if err != nil {
		return err
	}
	opts := append([]broker.Option{
		broker.WithLogger(logger),
		broker.WithClusterName(*clusterName),
		broker.WithClusterMigrationCheck(time.Duration(*migrationCheck) * time.Second),
		broker.WithLoadManager(lm),
		broker.WithMaxMessageSize(*maxMsg),
		broker.WithAutoTopicCreation(*autoCreate),
		broker.WithAutoTopicCreationType(broker.TopicType(*autoTopicType)),
		broker.WithDefaultNumPartitions(*defaultPartitions),
		broker.WithMaxPartitionsPerTopic(*maxPartitions),
		broker.WithAutoNamespaceCreation(*autoNamespaces),
		broker.WithKeySharedConsistentHashing(*ksHashing),
		broker.WithBatchIndexAck(*batchIndexAck),
		broker.WithTransactions(*transactions),
		broker.WithMaxActiveTransactions(*maxTxns),
		broker.WithInactiveTopicDeletion(inactive),
		broker.WithDeduplication(*dedup),
		broker.WithBrokerEntryMetadata(entryMeta),
		broker.WithLimits(limits),
		broker.WithHandshakeTimeout(*handshakeTimeout),
		broker.WithTopicLoadTime(*topicLoad),
		broker.WithWriteBufferWaterMarks(*writeLow, *writeHigh),
	}, secOpts...)
	if *clusters != "" {
		names, err := parseClusters(*clusters)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveClusters(ctx, names, clusterSpec{n: *brokers, addr: *addr, httpAddr: *httpAddr, opts: opts,
			withView: *serveView, viewHistory: *viewHistory, logger: logger, wrap: sec.httpHandler,
			proxyAddr: *proxyAddr, proxyHTTP: *proxyHTTP, tlsCfg: tlsCfg, tlsAddr: *sec.tlsAddr, httpsAddr: *sec.httpsAddr})
	}
	if *brokers > 1 {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveCluster(ctx, clusterSpec{n: *brokers, addr: *addr, httpAddr: *httpAddr, opts: opts,
			withView: *serveView, viewHistory: *viewHistory, logger: logger, wrap: sec.httpHandler,
			proxyAddr: *proxyAddr, proxyHTTP: *proxyHTTP, tlsCfg: tlsCfg, tlsAddr: *sec.tlsAddr, httpsAddr: *sec.httpsAddr})
	}
	if *proxyAddr != "" {
		return errors.New("-proxy-addr: a proxy stands in front of a cluster: give -brokers 2 or more")
	}
	b := broker.New(opts...)
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
	// The cluster's metadata and the broker's id name the advertised host.
	webURL, webTLSURL := webURLs(listeners)
	webURL, webTLSURL = b.Advertised(webURL), b.Advertised(webTLSURL)
	adminOpts = append(adminOpts, admin.WithWebServiceURLs(webURL, webTLSURL))
	if webURL != "" {
		b.SetWebServiceURL(webURL)
	}
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
	watchReachability(ctx, logger, b.CutOff, b.Reconnect)
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

// readHeaderTimeout bounds how long the admin API waits for a request's
// headers.
const readHeaderTimeout = 10 * time.Second

// serveAdmin serves the admin API h on each listener until ctx is done,
// then shuts the servers down (each runs onShutdown, when given). When a
// server fails first (its listener broke), it logs the failure, shuts the
// others down and returns it, so that the process exits non-zero instead of
// running on without its admin API.
func serveAdmin(ctx context.Context, logger *slog.Logger, h http.Handler, onShutdown func(), lns ...net.Listener) error {
	failed := make(chan error, len(lns))
	srvs := make([]*http.Server, len(lns))
	for i, ln := range lns {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
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
