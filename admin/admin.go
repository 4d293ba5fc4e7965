// Package admin is pulsarsim's admin REST API: the subset of Pulsar's REST
// API (/admin/v2, /lookup/v2) that pulsar-client-go's tests and its
// pulsaradmin package use most, served over the broker's exported API.
//
// Errors are JSON objects {"reason": "..."} with the status codes Pulsar
// uses: 404 for a missing tenant, namespace, topic or subscription, 409 for
// one that exists already, 412 for a request the current state forbids, 400
// for a body that does not parse. A request that fails changes nothing.
package admin

import (
	"net/http"
	"sync"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Server serves the admin REST API of one broker. It is an http.Handler:
// serve it with net/http, e.g. on 127.0.0.1:8080 as a Pulsar standalone
// does.
type Server struct {
	b   *broker.Broker
	mux *http.ServeMux
	// clusterMux routes the requests under a cluster's path and the
	// resource quotas' (clustermeta.go, isolation.go, brokerconfig.go).
	clusterMux *http.ServeMux
	// webURL and webTLSURL are the admin API's own addresses, when known
	// (WithWebServiceURLs).
	webURL, webTLSURL string
	// served are the partitions the REST producer has looked up
	// (restproducer.go).
	served restServed
	// localMu guards offloaded, the topics asked to offload (offload.go),
	// which an admin server of the topic's owner answers.
	localMu   sync.Mutex
	offloaded map[string]bool
}

// Option configures a Server.
type Option func(*Server)

// WithHandler serves h for the requests that match pattern (a
// net/http.ServeMux pattern, e.g. "/view/"), beside the REST API.
func WithHandler(pattern string, h http.Handler) Option {
	return func(s *Server) { s.mux.Handle(pattern, h) }
}

// New returns the admin REST API of b, configured by opts.
func New(b *broker.Broker, opts ...Option) *Server {
	s := &Server{b: b, mux: http.NewServeMux(), clusterMux: http.NewServeMux()}
	s.routeNamespaces()
	s.routeTopics()
	s.routeTopicProperties()
	s.routeBookieAffinity()
	s.routeCursors()
	s.routeTopicMaintenance()
	s.routePolicies()
	s.routeNamespaceExtras()
	s.routeNamespaceProperties()
	s.routeEntryFilters()
	s.routeTopicOffload()
	s.routeCompaction()
	s.routeSchemas()
	s.routeSchemaPolicies()
	s.routeAutoTopicCreation()
	s.routeCluster()
	s.routeBundles()
	s.routeMetrics()
	s.routeSecurity()
	s.routeTransactions()
	s.routeDisabledServices()
	s.routeRESTProducer()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	for _, o := range opts {
		o(s)
	}
	return s
}

// ServeHTTP answers one request.
// With authentication or authorization on, the request's role must be
// allowed what its route does (security.go). On a broker with a data
// directory, the answer to a request that may change something leaves once
// the change is durable (a small answer waits in the server's buffer).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serveSecured(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		_ = s.b.WaitDurable()
	}
}

func (s *Server) routeNamespaces() {
	m := s.mux
	m.HandleFunc("GET /admin/v2/tenants", s.listTenants)
	m.HandleFunc("PUT /admin/v2/tenants/{tenant}", s.createTenant)
	m.HandleFunc("GET /admin/v2/tenants/{tenant}", s.getTenant)
	m.HandleFunc("DELETE /admin/v2/tenants/{tenant}", s.deleteTenant)
	m.HandleFunc("GET /admin/v2/namespaces/{tenant}", s.listNamespaces)
	m.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{ns}", s.createNamespace)
	m.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}", s.getNamespacePolicies)
	m.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{ns}", s.deleteNamespace)
	m.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}/topics", s.namespaceTopics)
}

func (s *Server) routeTopics() {
	m := s.mux
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	m.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}", s.listTopics)
	m.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/partitioned", s.listPartitionedTopics)
	m.HandleFunc("PUT "+topic, s.inNamespace(s.createTopicWithBody))
	m.HandleFunc("DELETE "+topic, s.deleteTopic)
	m.HandleFunc("PUT "+topic+"/partitions", s.inNamespace(s.createPartitionedTopic))
	m.HandleFunc("POST "+topic+"/partitions", s.updatePartitions)
	m.HandleFunc("GET "+topic+"/partitions", s.inNamespace(s.getPartitions))
	m.HandleFunc("DELETE "+topic+"/partitions", s.deletePartitionedTopic)
	m.HandleFunc("GET "+topic+"/stats", s.inNamespace(s.topicStats))
	m.HandleFunc("GET "+topic+"/partitioned-stats", s.inNamespace(s.partitionedStats))
	m.HandleFunc("GET "+topic+"/internalStats", s.inNamespace(s.topicInternalStats))
	m.HandleFunc("GET "+topic+"/partitioned-internalStats", s.inNamespace(s.partitionedInternalStats))
	m.HandleFunc("PUT "+topic+"/unload", s.inNamespace(s.unloadTopic))
	m.HandleFunc("POST "+topic+"/terminate", s.inNamespace(s.terminateTopic))
	m.HandleFunc("GET "+topic+"/subscriptions", s.inNamespace(s.listSubscriptions))
	m.HandleFunc("PUT "+topic+"/subscription/{sub}", s.inNamespace(s.createSubscription))
	m.HandleFunc("DELETE "+topic+"/subscription/{sub}", s.inNamespace(s.deleteSubscription))
	m.HandleFunc("GET "+topic+"/subscription/{sub}/properties", s.inNamespace(s.subscriptionProperties))
	m.HandleFunc("PUT "+topic+"/subscription/{sub}/properties", s.inNamespace(s.setSubscriptionProperties))
	m.HandleFunc("GET "+topic+"/ledger/{ledger}/entry/{entry}", s.inNamespace(s.messageByID))
	m.HandleFunc("GET "+topic+"/subscription/{sub}/position/{position}", s.inNamespace(s.peekMessage))
	m.HandleFunc("GET "+topic+"/examinemessage", s.inNamespace(s.examineMessage))
	m.HandleFunc("GET "+topic+"/lastMessageId", s.inNamespace(s.lastMessageID))
	m.HandleFunc("GET "+topic+"/messageid/{timestamp}", s.inNamespace(s.messageIDByTime))
}

// inNamespace answers a topic request whose namespace does not exist with
// Pulsar's 404 "Namespace not found", before h looks at the topic (Pulsar
// checks the namespace's bundle first for these).
func (s *Server) inNamespace(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns := r.PathValue("tenant") + "/" + r.PathValue("ns")
		if broker.ValidateNamespaceName(ns) == nil && !s.b.NamespaceExists(ns) {
			httpError(w, http.StatusNotFound, "Namespace not found")
			return
		}
		if s.redirectToOwner(w, r) {
			return
		}
		h(w, r)
	}
}

func (s *Server) routeSchemas() {
	m := s.mux
	const topic = "/admin/v2/schemas/{tenant}/{ns}/{topic}"
	m.HandleFunc("GET "+topic+"/schema", s.getSchema)
	m.HandleFunc("GET "+topic+"/schema/{version}", s.getSchema)
	m.HandleFunc("GET "+topic+"/schemas", s.getSchemas)
	m.HandleFunc("POST "+topic+"/schema", s.postSchema)
	m.HandleFunc("DELETE "+topic+"/schema", s.deleteSchema)
	m.HandleFunc("POST "+topic+"/compatibility", s.schemaCompatibility)
	m.HandleFunc("POST "+topic+"/version", s.schemaVersion)
	m.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", s.inNamespace(s.lookup))
	m.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle", s.bundle)
}
