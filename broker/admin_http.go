package broker

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The admin HTTP API: the subset of Pulsar's REST API (/admin/v2, /lookup/v2)
// that pulsar-client-go's tests and its pulsaradmin package use most. Errors
// are JSON objects {"reason": "..."} with the status codes Pulsar uses: 404
// for a missing tenant, namespace, topic or subscription, 409 for one that
// exists already, 412 for a request the current state forbids.

// AdminHandler returns the broker's admin HTTP API. Serve it with net/http,
// e.g. on 127.0.0.1:8080 as a Pulsar standalone does.
func (b *Broker) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	a := &adminAPI{b: b}
	// Tenants and namespaces.
	mux.HandleFunc("GET /admin/v2/tenants", a.listTenants)
	mux.HandleFunc("PUT /admin/v2/tenants/{tenant}", a.createTenant)
	mux.HandleFunc("GET /admin/v2/tenants/{tenant}", a.getTenant)
	mux.HandleFunc("DELETE /admin/v2/tenants/{tenant}", a.deleteTenant)
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}", a.listNamespaces)
	mux.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{ns}", a.createNamespace)
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}", a.getNamespacePolicies)
	mux.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{ns}", a.deleteNamespace)
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}/topics", a.namespaceTopics)
	mux.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}/messageTTL", a.getNamespaceTTL)
	mux.HandleFunc("POST /admin/v2/namespaces/{tenant}/{ns}/messageTTL", a.setNamespaceTTL)
	mux.HandleFunc("DELETE /admin/v2/namespaces/{tenant}/{ns}/messageTTL", a.removeNamespaceTTL)
	// Topics.
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}", a.listTopics)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/partitioned", a.listPartitionedTopics)
	mux.HandleFunc("PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}", a.createTopic)
	mux.HandleFunc("DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}", a.deleteTopic)
	mux.HandleFunc("PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", a.createPartitionedTopic)
	mux.HandleFunc("POST /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", a.updatePartitions)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", a.getPartitions)
	mux.HandleFunc("DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions", a.deletePartitionedTopic)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/stats", a.topicStats)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitioned-stats", a.partitionedStats)
	mux.HandleFunc("PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}/unload", a.unloadTopic)
	mux.HandleFunc("POST /admin/v2/{domain}/{tenant}/{ns}/{topic}/terminate", a.terminateTopic)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/subscriptions", a.listSubscriptions)
	mux.HandleFunc("PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}", a.createSubscription)
	mux.HandleFunc("DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}", a.deleteSubscription)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/ledger/{ledger}/entry/{entry}", a.messageByID)
	mux.HandleFunc("GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/messageTTL", a.getTopicTTL)
	mux.HandleFunc("POST /admin/v2/{domain}/{tenant}/{ns}/{topic}/messageTTL", a.setTopicTTL)
	mux.HandleFunc("DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/messageTTL", a.removeTopicTTL)
	// Schemas.
	mux.HandleFunc("GET /admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.getSchema)
	mux.HandleFunc("GET /admin/v2/schemas/{tenant}/{ns}/{topic}/schema/{version}", a.getSchema)
	mux.HandleFunc("POST /admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.postSchema)
	mux.HandleFunc("DELETE /admin/v2/schemas/{tenant}/{ns}/{topic}/schema", a.deleteSchema)
	// Lookups.
	mux.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}", a.lookup)
	mux.HandleFunc("GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle", a.bundle)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	return mux
}

// adminAPI serves the admin HTTP API of one broker.
type adminAPI struct{ b *Broker }

// apiError is an error with the HTTP status Pulsar answers it with.
type apiError struct {
	status int
	reason string
}

func (e *apiError) Error() string { return e.reason }

func errStatus(status int, reason string) error { return &apiError{status, reason} }

// httpError writes Pulsar's error body.
func httpError(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": reason})
}

// reply writes err as an error response, or v as JSON (nothing but 204 when
// v is nil).
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			httpError(w, ae.status, ae.reason)
			return
		}
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// topicFromPath parses the topic named by the request's {domain}, {tenant},
// {ns} and {topic} path values.
func topicFromPath(r *http.Request) (TopicName, error) {
	domain := r.PathValue("domain")
	if domain == "" {
		domain = "persistent"
	}
	if domain != "persistent" && domain != "non-persistent" {
		return TopicName{}, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
	}
	tn, err := ParseTopicName(domain + "://" + r.PathValue("tenant") + "/" + r.PathValue("ns") + "/" + r.PathValue("topic"))
	if err != nil {
		return TopicName{}, errStatus(http.StatusPreconditionFailed, err.Error())
	}
	return tn, nil
}

// namespaceFromPath returns "tenant/ns" from the request's path values.
func namespaceFromPath(r *http.Request) (string, error) {
	tenant, ns := r.PathValue("tenant"), r.PathValue("ns")
	if !namedEntity.MatchString(tenant) || !namedEntity.MatchString(ns) {
		return "", errStatus(http.StatusPreconditionFailed, "Invalid namespace name: "+tenant+"/"+ns)
	}
	return tenant + "/" + ns, nil
}

// readInt reads a request body holding one JSON number (or a quoted one), or
// partitioned-topic metadata {"partitions": N, …}.
func readInt(r *http.Request) (int, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return 0, errStatus(http.StatusBadRequest, err.Error())
	}
	var meta struct {
		Partitions *int `json:"partitions"`
	}
	if json.Unmarshal(body, &meta) == nil && meta.Partitions != nil {
		return *meta.Partitions, nil
	}
	s := strings.Trim(strings.TrimSpace(string(body)), `"`)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errStatus(http.StatusBadRequest, "Invalid number: "+s)
	}
	return n, nil
}

// boolParam reads a boolean query parameter.
func boolParam(r *http.Request, name string) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return v
}
