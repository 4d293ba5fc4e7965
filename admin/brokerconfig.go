package admin

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The broker's dynamic configuration (broker/dynamicconfig.go), its
// internal configuration, its stats (broker-stats) and the load manager's
// resource quotas, as a Pulsar standalone answers them.

func (s *Server) routeBrokerConfig() {
	m := s.mux
	const c = "/admin/v2/brokers/configuration"
	m.HandleFunc("GET "+c, func(w http.ResponseWriter, r *http.Request) { reply(w, broker.DynamicConfigNames(), nil) })
	m.HandleFunc("GET "+c+"/values", func(w http.ResponseWriter, r *http.Request) { reply(w, s.b.DynamicConfig(), nil) })
	m.HandleFunc("POST "+c+"/{name}/{value}", s.setDynamicConfig)
	m.HandleFunc("DELETE "+c+"/{name}", s.deleteDynamicConfig)
	for _, p := range []string{c, c + "/values", c + "/runtime"} {
		for _, method := range []string{"POST", "PUT", "DELETE"} {
			m.HandleFunc(method+" "+p, methodNotAllowed)
		}
	}
	m.HandleFunc("GET "+c+"/{name}", methodNotAllowed)
	m.HandleFunc("POST "+c+"/{name}", methodNotAllowed)
	m.HandleFunc("GET /admin/v2/brokers/internal-configuration", s.internalConfiguration)
	const st = "/admin/v2/broker-stats"
	m.HandleFunc("GET "+st+"/metrics", s.brokerStatsMetrics)
	m.HandleFunc("GET "+st+"/mbeans", func(w http.ResponseWriter, r *http.Request) { reply(w, []any{}, nil) })
	m.HandleFunc("GET "+st+"/topics", s.brokerStatsTopics)
	m.HandleFunc("GET "+st+"/load-report", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	m.HandleFunc("GET "+st+"/bookieops", s.bookieOps)
	m.HandleFunc("GET "+st+"/allocator-stats/{allocator}", s.allocatorStats)
	m.HandleFunc("GET /admin/v2/resource-quotas", func(w http.ResponseWriter, r *http.Request) {
		reply(w, quotaDoc(s.b.ResourceQuota("")), nil)
	})
	m.HandleFunc("POST /admin/v2/resource-quotas", s.setDefaultQuota)
	const q = "/admin/v2/resource-quotas/{tenant}/{ns}/{bundle}"
	for _, method := range []string{"GET", "POST", "DELETE"} {
		s.clusterMux.HandleFunc(method+" "+q, s.bundleQuota)
	}
}

// setDynamicConfig sets a setting at run time: 200 without a body.
func (s *Server) setDynamicConfig(w http.ResponseWriter, r *http.Request) {
	err := s.b.SetDynamicConfig(r.PathValue("name"), r.PathValue("value"))
	switch {
	case errors.Is(err, broker.ErrInvalidDynamicValue):
		err = errStatus(http.StatusPreconditionFailed, " Invalid dynamic-config value")
	case errors.Is(err, broker.ErrNotDynamic):
		err = errStatus(http.StatusPreconditionFailed, "Can't update non-dynamic configuration")
	}
	okReply(w, err)
}

// deleteDynamicConfig removes a setting set at run time: 200 without a
// body, set or not.
func (s *Server) deleteDynamicConfig(w http.ResponseWriter, r *http.Request) {
	err := s.b.DeleteDynamicConfig(r.PathValue("name"))
	if errors.Is(err, broker.ErrNotDynamic) {
		err = errStatus(http.StatusPreconditionFailed, "Can't delete non-dynamic configuration")
	}
	okReply(w, err)
}

// internalConfiguration answers Pulsar's InternalConfigurationData: the
// metadata stores pulsarsim keeps in memory, as Pulsar names an in-memory
// store.
func (s *Server) internalConfiguration(w http.ResponseWriter, r *http.Request) {
	const store = "memory:local"
	reply(w, map[string]string{"zookeeperServers": store, "configurationStoreServers": store,
		"metadataStoreUrl": store, "configurationMetadataStoreUrl": store, "ledgersRootPath": "/ledgers"}, nil)
}

// metricsEntry is one of Pulsar's Metrics: values by name, and the
// dimensions they are of.
type metricsEntry struct {
	Metrics    map[string]any    `json:"metrics"`
	Dimensions map[string]string `json:"dimensions"`
}

// brokerStatsMetrics answers the broker's metrics as Pulsar's
// broker-stats/metrics lists them: the connections, the health, the topic
// loads; pulsarsim has no managed-ledger cache and no JVM to report.
func (s *Server) brokerStatsMetrics(w http.ResponseWriter, r *http.Request) {
	host := s.brokerID(r)
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	dims := func(metric string) map[string]string {
		return map[string]string{"broker": host, "cluster": s.b.ClusterName(), "metric": metric}
	}
	conns := len(s.b.Connections())
	out := []metricsEntry{
		{Metrics: map[string]any{"brk_active_connections": conns}, Dimensions: dims("broker_connection")},
		{Metrics: map[string]any{"brk_health": 1}, Dimensions: dims("broker_health")},
		{Metrics: map[string]any{"brk_topic_load_failed_count": 0.0}, Dimensions: dims("pulsar_topic_load_times")},
	}
	reply(w, out, nil)
}

// brokerStatsTopics answers the stats of the topics this broker has
// loaded, by namespace, bundle and domain, as Pulsar's
// broker-stats/topics nests them.
func (s *Server) brokerStatsTopics(w http.ResponseWriter, r *http.Request) {
	out := map[string]map[string]map[string]map[string]topicStatsJSON{}
	for _, topic := range s.b.LoadedTopics() {
		tn, err := broker.ParseTopicName(topic)
		if err != nil {
			continue
		}
		st, err := s.b.TopicStats(topic)
		if err != nil {
			continue
		}
		bd, err := s.b.BundleOf(topic)
		if err != nil {
			continue
		}
		ns := tn.NamespaceName()
		if out[ns] == nil {
			out[ns] = map[string]map[string]map[string]topicStatsJSON{}
		}
		if out[ns][bd.Range()] == nil {
			out[ns][bd.Range()] = map[string]map[string]topicStatsJSON{}
		}
		domain := "persistent"
		if !strings.HasPrefix(topic, "persistent://") {
			domain = "non-persistent"
		}
		if out[ns][bd.Range()][domain] == nil {
			out[ns][bd.Range()][domain] = map[string]topicStatsJSON{}
		}
		out[ns][bd.Range()][domain][topic] = topicStatsDoc(st, false)
	}
	reply(w, out, nil)
}

// bookieOps answers the ledger operations of the persistent topics this
// broker has loaded, by namespace, as Pulsar's broker-stats/bookieops
// counts them: pulsarsim has no bookies, so they are all 0.
func (s *Server) bookieOps(w http.ResponseWriter, r *http.Request) {
	out := map[string]map[string]map[string]int{}
	for _, topic := range s.b.LoadedTopics() {
		tn, err := broker.ParseTopicName(topic)
		if err != nil || !strings.HasPrefix(topic, "persistent://") {
			continue
		}
		ns := tn.NamespaceName()
		if out[ns] == nil {
			out[ns] = map[string]map[string]int{}
		}
		ops := map[string]int{}
		for _, kind := range []string{"data", "cursor"} {
			for _, op := range []string{"Create", "Open", "Close", "Delete"} {
				ops[kind+"Ledger"+op+"Op"] = 0
			}
		}
		out[ns][topic] = ops
	}
	reply(w, out, nil)
}

// allocatorStats answers the stats of Pulsar's two buffer allocators,
// "default" and "ml-cache": pulsarsim pools no buffers, so they have no
// arena and use no memory. Any other name is Pulsar's 406.
func (s *Server) allocatorStats(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("allocator")
	if name != "default" && name != "ml-cache" {
		httpError(w, http.StatusNotAcceptable, "Invalid allocator name : "+name)
		return
	}
	reply(w, map[string]any{"numDirectArenas": 0, "numHeapArenas": 0, "numThreadLocalCaches": 0,
		"normalCacheSize": 0, "smallCacheSize": 0, "usedDirectMemory": 0, "usedHeapMemory": 0,
		"directArenas": []any{}, "heapArenas": []any{}}, nil)
}

// javaDouble is a JSON number written as Java writes a double: 40.0, not
// 40.
type javaDouble float64

func (d javaDouble) MarshalJSON() ([]byte, error) {
	v := float64(d)
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return []byte(strconv.FormatFloat(v, 'f', 1, 64)), nil
	}
	return []byte(strconv.FormatFloat(v, 'g', -1, 64)), nil
}

// quotaJSON is Pulsar's ResourceQuota.
type quotaJSON struct {
	MsgRateIn    javaDouble `json:"msgRateIn"`
	MsgRateOut   javaDouble `json:"msgRateOut"`
	BandwidthIn  javaDouble `json:"bandwidthIn"`
	BandwidthOut javaDouble `json:"bandwidthOut"`
	Memory       javaDouble `json:"memory"`
	Dynamic      bool       `json:"dynamic"`
}

func quotaDoc(q broker.ResourceQuota) quotaJSON {
	return quotaJSON{javaDouble(q.MsgRateIn), javaDouble(q.MsgRateOut), javaDouble(q.BandwidthIn),
		javaDouble(q.BandwidthOut), javaDouble(q.Memory), q.Dynamic}
}

// readResourceQuota reads a ResourceQuota body: nil for none; a field not given
// is 0 (dynamic: true), as Pulsar's constructor leaves it.
func readResourceQuota(r *http.Request) (*broker.ResourceQuota, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(body)); t == "" || t == "null" {
		return nil, nil
	}
	in := struct {
		MsgRateIn, MsgRateOut, BandwidthIn, BandwidthOut, Memory float64
		Dynamic                                                  *bool
	}{}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badBody(body, err)
	}
	q := broker.ResourceQuota{MsgRateIn: in.MsgRateIn, MsgRateOut: in.MsgRateOut, BandwidthIn: in.BandwidthIn,
		BandwidthOut: in.BandwidthOut, Memory: in.Memory, Dynamic: in.Dynamic == nil || *in.Dynamic}
	return &q, nil
}

func (s *Server) setDefaultQuota(w http.ResponseWriter, r *http.Request) {
	q, err := readResourceQuota(r)
	if err == nil {
		s.b.SetResourceQuota("", q)
	}
	reply(w, nil, err)
}

// bundleQuota gets, sets or removes a bundle's resource quota, once the
// namespace and the bundle are checked as Pulsar checks them.
func (s *Server) bundleQuota(w http.ResponseWriter, r *http.Request) {
	var q *broker.ResourceQuota
	var err error
	if r.Method == http.MethodPost {
		if q, err = readResourceQuota(r); err != nil {
			reply(w, nil, err)
			return
		}
	}
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "Namespace does not exist")
	}
	if err == nil {
		err = s.checkBundleRange(ns, r.PathValue("bundle"))
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	bundle := ns + "/" + r.PathValue("bundle")
	switch r.Method {
	case http.MethodGet:
		reply(w, quotaDoc(s.b.ResourceQuota(bundle)), nil)
	case http.MethodPost:
		if q == nil {
			d := broker.DefaultResourceQuota
			q = &d
		}
		s.b.SetResourceQuota(bundle, q)
		w.WriteHeader(http.StatusNoContent)
	default:
		s.b.SetResourceQuota(bundle, nil)
		w.WriteHeader(http.StatusNoContent)
	}
}

// checkBundleRange checks that rng names a bundle of ns, with Pulsar's
// reasons.
func (s *Server) checkBundleRange(ns, rng string) error {
	bd, err := broker.ParseBundle(ns, rng)
	if err != nil {
		return errStatus(http.StatusPreconditionFailed, "Invalid bundle range: "+rng)
	}
	for _, have := range s.b.Bundles(ns) {
		if have.Lower != bd.Lower {
			continue
		}
		if have.Upper != bd.Upper {
			return errStatus(http.StatusPreconditionFailed, "Invalid upper boundary for bundle "+ns+"/"+rng+
				". Expected upper boundary of "+ns+"/"+have.Range())
		}
		return nil
	}
	return errStatus(http.StatusPreconditionFailed, "Invalid lower boundary for bundle "+ns+"/"+rng)
}
