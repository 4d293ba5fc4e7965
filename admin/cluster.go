package admin

import (
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The cluster and broker endpoints that tools poll before they start:
// Testcontainers waits for /admin/v2/clusters to answer ["standalone"],
// pulsar-admin and scripts ask /admin/v2/brokers/health and ready. A
// standalone is one cluster with one broker, whose id is its web service's
// host and port; the other clusters the configuration store knows, with
// their peers, failure domains and isolation policies, are clustermeta.go's
// and isolation.go's, the broker's configuration and stats brokerconfig.go's.

// pulsarVersion is the Pulsar release whose behaviour pulsarsim follows, as
// /admin/v2/brokers/version answers it.
const pulsarVersion = "4.0.8"

// WithWebServiceURLs tells the admin API its own addresses, http:// and
// https:// (empty when not served), for the cluster's serviceUrl and
// serviceUrlTls and the broker's id. Without it they are taken from each
// request's Host.
func WithWebServiceURLs(httpURL, httpsURL string) Option {
	return func(s *Server) { s.webURL, s.webTLSURL = httpURL, httpsURL }
}

func (s *Server) routeCluster() {
	m := s.mux
	m.HandleFunc("GET /admin/v2/clusters", s.listClusters)
	m.HandleFunc("GET /admin/v2/clusters/{cluster}", s.getCluster)
	m.HandleFunc("PUT /admin/v2/clusters/{cluster}", s.createCluster)
	s.routeClusterMeta()
	s.routeIsolation()
	s.routeBrokerConfig()
	m.HandleFunc("GET /admin/v2/brokers/health", s.health)
	m.HandleFunc("GET /admin/v2/brokers/ready", s.health)
	m.HandleFunc("GET /admin/v2/brokers/version", func(w http.ResponseWriter, r *http.Request) { plainOK(w, pulsarVersion) })
	m.HandleFunc("GET /admin/v2/brokers/leaderBroker", s.leaderBroker)
	m.HandleFunc("GET /admin/v2/brokers", s.activeBrokers)
	m.HandleFunc("GET /admin/v2/brokers/{cluster}", s.activeBrokers)
	m.HandleFunc("GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces", s.ownedNamespaces)
	m.HandleFunc("GET /admin/v2/brokers/configuration/runtime", s.runtimeConfiguration)
	for _, p := range []string{"/admin/v2/brokers/health", "/admin/v2/brokers/ready", "/admin/v2/brokers/version",
		"/admin/v2/brokers/leaderBroker", "/admin/v2/clusters"} {
		for _, method := range []string{"POST", "PUT", "DELETE"} {
			m.HandleFunc(method+" "+p, methodNotAllowed)
		}
	}
}

// plainOK answers a bare word, as Pulsar answers a String with its JSON
// content type.
func plainOK(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(text))
}

// webURLs returns the web service's http:// and https:// URLs.
func (s *Server) webURLs(r *http.Request) (string, string) {
	if s.webURL != "" || s.webTLSURL != "" {
		return s.webURL, s.webTLSURL
	}
	if r.TLS != nil {
		return "", "https://" + r.Host
	}
	return "http://" + r.Host, ""
}

// brokerID is the broker's id: its web service's host and port.
func (s *Server) brokerID(r *http.Request) string {
	web, webTLS := s.webURLs(r)
	if web == "" {
		web = webTLS
	}
	if u, err := url.Parse(web); err == nil && u.Host != "" {
		return u.Host
	}
	return r.Host
}

// listClusters lists the clusters but "global", which Pulsar hides.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) {
	out := []string{}
	for _, c := range s.b.Clusters() {
		if c != "global" {
			out = append(out, c)
		}
	}
	reply(w, out, nil)
}

// inCluster answers 404 for a cluster other than the broker's.
func (s *Server) inCluster(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("cluster") != s.b.ClusterName() {
			httpError(w, http.StatusNotFound, "Cluster does not exist")
			return
		}
		h(w, r)
	}
}

// getCluster answers a cluster's data.
func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) {
	d, ok := s.b.Cluster(r.PathValue("cluster"))
	if !ok {
		httpError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	reply(w, s.clusterDoc(r, d), nil)
}

// ownClusterDoc is the broker's own cluster's data as the standalone
// writes it when it starts: its web service and broker service URLs (the
// TLS ones when served), and the client settings Pulsar writes with their
// defaults.
func (s *Server) ownClusterDoc(r *http.Request) map[string]any {
	web, webTLS := s.webURLs(r)
	pulsarURL, pulsarTLSURL, _ := s.b.LookupURLs("")
	doc := map[string]any{
		"brokerClientTlsEnabled":             false,
		"tlsAllowInsecureConnection":         false,
		"brokerClientTlsEnabledWithKeyStore": false,
		"brokerClientTlsTrustStoreType":      "JKS",
		"brokerClientTlsKeyStoreType":        "JKS",
		"brokerClientSslFactoryPlugin":       "org.apache.pulsar.common.util.DefaultPulsarSslFactory",
	}
	for k, v := range map[string]string{"serviceUrl": web, "serviceUrlTls": webTLS,
		"brokerServiceUrl": pulsarURL, "brokerServiceUrlTls": pulsarTLSURL} {
		if v != "" {
			doc[k] = v
		}
	}
	return doc
}

// health answers the health check and the readiness probe: a broker that
// serves its admin API serves its clients too.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("topicVersion") {
	case "", "V1", "V2":
		plainOK(w, "ok")
	default:
		// Jersey cannot read the parameter as a TopicVersion.
		httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	}
}

func (s *Server) leaderBroker(w http.ResponseWriter, r *http.Request) {
	if s.clustered() {
		l := s.b.Leader()
		reply(w, map[string]string{"serviceUrl": l.WebURL, "brokerId": l.ID}, nil)
		return
	}
	web, webTLS := s.webURLs(r)
	if web == "" {
		web = webTLS
	}
	reply(w, map[string]string{"serviceUrl": web, "brokerId": s.brokerID(r)}, nil)
}

// activeBrokers lists the cluster's live brokers by id (a lone broker:
// this one). Pulsar answers the same list whatever cluster the path names.
func (s *Server) activeBrokers(w http.ResponseWriter, r *http.Request) {
	if !s.clustered() {
		reply(w, []string{s.brokerID(r)}, nil)
		return
	}
	ids := []string{}
	for _, info := range s.b.Brokers() {
		if info.Alive {
			ids = append(ids, info.ID)
		}
	}
	reply(w, ids, nil)
}

// ownedNamespaces answers the namespace bundles the broker serves: one
// bundle, the whole hash range, for each namespace with a topic.
func (s *Server) ownedNamespaces(w http.ResponseWriter, r *http.Request) {
	if s.clustered() {
		s.clusterOwnedNamespaces(w, r)
		return
	}
	if id := r.PathValue("broker"); id != s.brokerID(r) {
		httpError(w, http.StatusNotFound, "Broker id '"+id+"' not found in available brokers.")
		return
	}
	namespaces := map[string]bool{}
	for _, topic := range s.b.Topics() {
		if tn, err := broker.ParseTopicName(topic); err == nil {
			namespaces[tn.NamespaceName()] = true
		}
	}
	names := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	out := map[string]any{}
	for _, ns := range names {
		out[ns+"/0x00000000_0xffffffff"] = map[string]any{
			"broker_assignment": "shared", "is_controlled": false, "is_active": true}
	}
	reply(w, out, nil)
}

// clusterOwnedNamespaces answers the bundles a broker of the cluster owns;
// asked of another broker, it is that broker's answer (307 there).
func (s *Server) clusterOwnedNamespaces(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("broker")
	for _, info := range s.b.Brokers() {
		if info.ID != id || !info.Alive {
			continue
		}
		if !info.Self {
			http.Redirect(w, r, info.WebURL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		out := map[string]any{}
		for _, bd := range s.b.OwnedBundles() {
			out[bd.String()] = map[string]any{"broker_assignment": "shared", "is_controlled": false, "is_active": true}
		}
		reply(w, out, nil)
		return
	}
	httpError(w, http.StatusNotFound, "Broker id '"+id+"' not found in available brokers.")
}

// runtimeConfiguration answers the broker's settings by Pulsar's names, as
// strings: those pulsarsim has, the broker-level policies among them, with
// the settings changed at run time that pulsarsim applies; then the other
// settings changed at run time, as they were set.
func (s *Server) runtimeConfiguration(w http.ResponseWriter, r *http.Request) {
	p := s.b.BrokerPolicies()
	a := s.b.BrokerAutoTopicCreation()
	itoa := strconv.Itoa
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	in := p.InactiveTopics
	conf := map[string]string{}
	for name, value := range s.b.DynamicConfig() {
		conf[name] = value
	}
	maps.Copy(conf, map[string]string{
		"clusterName":                         s.b.ClusterName(),
		"isRunningStandalone":                 "true",
		"schemaCompatibilityStrategy":         string(*p.SchemaCompatibilityStrategy),
		"isAllowAutoUpdateSchemaEnabled":      strconv.FormatBool(*p.AllowAutoUpdateSchema),
		"isSchemaValidationEnforced":          strconv.FormatBool(*p.SchemaValidationEnforced),
		"ttlDurationDefaultInSeconds":         itoa(*p.MessageTTLSeconds),
		"allowAutoTopicCreation":              strconv.FormatBool(a.Allow),
		"allowAutoTopicCreationType":          string(a.Type),
		"defaultNumPartitions":                itoa(a.DefaultNumPartitions),
		"maxNumPartitionsPerPartitionedTopic": itoa(s.b.MaxPartitionsPerTopic()),
		"defaultNumberOfNamespaceBundles":     itoa(s.b.DefaultNamespaceBundles()),

		"dispatchThrottlingRatePerTopicInMsg":                  itoa(p.DispatchRate.Messages),
		"dispatchThrottlingRatePerTopicInByte":                 i64(p.DispatchRate.Bytes),
		"dispatchThrottlingRatePerSubscriptionInMsg":           itoa(p.SubscriptionDispatchRate.Messages),
		"dispatchThrottlingRatePerSubscriptionInByte":          i64(p.SubscriptionDispatchRate.Bytes),
		"dispatchThrottlingRatePerReplicatorInMsg":             itoa(p.ReplicatorDispatchRate.Messages),
		"dispatchThrottlingRatePerReplicatorInByte":            i64(p.ReplicatorDispatchRate.Bytes),
		"maxPublishRatePerTopicInMessages":                     itoa(p.PublishRate.Messages),
		"maxPublishRatePerTopicInBytes":                        i64(p.PublishRate.Bytes),
		"subscribeThrottlingRatePerConsumer":                   itoa(p.SubscribeRate.PerConsumer),
		"subscribeRatePeriodPerConsumerInSecond":               itoa(p.SubscribeRate.PeriodSeconds),
		"brokerDeleteInactiveTopicsEnabled":                    strconv.FormatBool(in.DeleteWhileInactive),
		"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": itoa(in.MaxInactiveDurationSeconds),
		"brokerDeleteInactiveTopicsMode":                       string(in.Mode),
	})
	reply(w, conf, nil)
}

// superUserRoute reports whether a route is a cluster, broker, broker
// stats or resource quota route only a super-user may call when
// authorization is on (listing the clusters and the readiness probe are
// open to any role).
func superUserRoute(path string) bool {
	for _, prefix := range []string{"/admin/v2/brokers", "/admin/v2/clusters/", "/admin/v2/broker-stats/", "/admin/v2/resource-quotas"} {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}
