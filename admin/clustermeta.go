package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Cluster metadata kept in the configuration store (broker/clustermeta.go):
// clusters other than the broker's own, created, updated and deleted as
// Pulsar does; every cluster's peers and failure domains. The broker's own
// cluster answers its own URLs until somebody writes it.

func (s *Server) routeClusterMeta() {
	s.mux.HandleFunc("POST /admin/v2/clusters/{cluster}", s.updateCluster)
	s.mux.HandleFunc("DELETE /admin/v2/clusters/{cluster}", s.deleteCluster)
	m := s.clusterMux
	const c = "/admin/v2/clusters/{cluster}"
	m.HandleFunc("GET "+c+"/peers", s.getPeers)
	m.HandleFunc("POST "+c+"/peers", s.setPeers)
	m.HandleFunc("GET "+c+"/failureDomains", s.listFailureDomains)
	m.HandleFunc("GET "+c+"/failureDomains/{domain}", s.getFailureDomain)
	m.HandleFunc("POST "+c+"/failureDomains/{domain}", s.setFailureDomain)
	m.HandleFunc("DELETE "+c+"/failureDomains/{domain}", s.deleteFailureDomain)
	m.HandleFunc("PUT "+c+"/failureDomains/{domain}", methodNotAllowed)
	s.routeMigration()
}

// clusterName is Pulsar's NamedEntity: letters, digits and -=:._ only.
var clusterName = regexp.MustCompile(`^[-=:.\w]*$`)

// clusterStringFields and clusterBoolFields are the fields of Pulsar's
// ClusterData but peerClusterNames and proxyProtocol; the booleans are
// always written (false by default).
var (
	clusterStringFields = []string{"serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls",
		"proxyServiceUrl", "authenticationPlugin", "authenticationParameters", "brokerClientTlsTrustStoreType",
		"brokerClientTlsTrustStore", "brokerClientTlsTrustStorePassword", "brokerClientTlsKeyStoreType",
		"brokerClientTlsKeyStore", "brokerClientTlsKeyStorePassword", "brokerClientTrustCertsFilePath",
		"brokerClientKeyFilePath", "brokerClientCertificateFilePath", "brokerClientSslFactoryPlugin",
		"brokerClientSslFactoryPluginParams", "listenerName"}
	clusterBoolFields = []string{"brokerClientTlsEnabled", "tlsAllowInsecureConnection", "brokerClientTlsEnabledWithKeyStore"}
)

// clusterURLChecks are Pulsar's checks of a cluster's URLs, in its order:
// the field, the schemes it allows, and the reason of a refusal.
var clusterURLChecks = []struct {
	field   string
	schemes []string
	reason  string
}{
	{"serviceUrl", []string{"http"}, "Illegal service url, example: http://pulsar.example.com:8080"},
	{"serviceUrlTls", []string{"https"}, "Illegal service tls url, example: https://pulsar.example.com:8443"},
	{"brokerServiceUrl", []string{"pulsar"}, "Illegal broker service url, example: pulsar://pulsar.example.com:6650"},
	{"brokerServiceUrlTls", []string{"pulsar+ssl"}, "Illegal broker service tls url, example: pulsar+ssl://pulsar.example.com:6651"},
	{"proxyServiceUrl", []string{"pulsar", "pulsar+ssl"}, "Illegal proxy service url, example: pulsar+ssl://ats-proxy.example.com:4443 or pulsar://ats-proxy.example.com:4080"},
}

// readClusterData reads a ClusterData body: ok false for no body (or
// null); a body that does not parse is a 400.
func readClusterData(r *http.Request) (d broker.ClusterData, ok bool, err error) {
	body, err := readBody(r, 1<<20)
	if err != nil {
		return d, false, err
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || string(t) == "null" {
		return d, false, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return d, false, badBody(body, err)
	}
	d.Fields = map[string]any{}
	for _, k := range clusterStringFields {
		if v, ok := raw[k]; ok && string(v) != "null" {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v) // a number or boolean, as Jackson coerces it
			}
			d.Fields[k] = s
		}
	}
	for _, k := range clusterBoolFields {
		if v, ok := raw[k]; ok && string(v) != "null" {
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return d, false, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `boolean` for "+k)
			}
			d.Fields[k] = b
		}
	}
	if v, ok := raw["proxyProtocol"]; ok {
		var p string
		if json.Unmarshal(v, &p) == nil && p == "SNI" {
			d.Fields["proxyProtocol"] = p // any other value is read as null
		}
	}
	if v, ok := raw["peerClusterNames"]; ok && string(v) != "null" {
		if d.Peers, err = readStringSet(v); err != nil {
			return d, false, err
		}
	}
	return d, true, nil
}

// checkClusterURLs checks a cluster's URLs as Pulsar does: a refusal is a
// 400.
func checkClusterURLs(d broker.ClusterData) error {
	for _, c := range clusterURLChecks {
		if u, _ := d.Fields[c.field].(string); u != "" && !javaURIWithScheme(u, c.schemes) {
			return errStatus(http.StatusBadRequest, c.reason)
		}
	}
	return nil
}

// readStringSet reads a JSON list of strings as Jackson reads a set of
// them: numbers and booleans as their text, each once in the order given;
// nil for null.
func readStringSet(b []byte) ([]string, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, badBody(b, err)
	}
	if raw == nil {
		return nil, nil
	}
	out := []string{}
	for _, e := range raw {
		var s string
		if json.Unmarshal(e, &s) != nil {
			if t := strings.TrimSpace(string(e)); t != "" && t[0] != '{' && t[0] != '[' {
				s = t
			} else {
				return nil, errStatus(http.StatusBadRequest, "Cannot deserialize a set of strings from "+t)
			}
		}
		out = append(out, s)
	}
	return uniqueStrings(out), nil
}

func uniqueStrings(in []string) []string {
	out := []string{}
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// javaURIWithScheme reports whether u parses as a URI as Java's URI does
// and has one of schemes (exactly, case included).
func javaURIWithScheme(u string, schemes []string) bool {
	if strings.ContainsAny(u, " \"<>\\^`{|}") {
		return false
	}
	scheme, rest, ok := strings.Cut(u, ":")
	if !ok || rest == "" || !uriScheme.MatchString(scheme) {
		return false
	}
	if rest == "//" {
		return false // "http://": an authority is expected
	}
	return contains(schemes, scheme)
}

// clusterDoc is a cluster's data as Pulsar writes it.
func (s *Server) clusterDoc(r *http.Request, d broker.ClusterData) map[string]any {
	if d.Initial {
		doc := s.ownClusterDoc(r)
		if d.Peers != nil {
			doc["peerClusterNames"] = d.Peers
		}
		return doc
	}
	doc := map[string]any{}
	for k, v := range d.Fields {
		doc[k] = v
	}
	for _, k := range clusterBoolFields {
		if _, ok := doc[k]; !ok {
			doc[k] = false
		}
	}
	if d.Peers != nil {
		doc["peerClusterNames"] = d.Peers
	}
	return doc
}

// createCluster creates a cluster's metadata: Pulsar checks the name
// (412), then the body (400), then that the cluster is new (409).
func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("cluster")
	d, ok, err := readClusterData(r) // Jersey reads the body first
	switch {
	case err != nil:
	case !clusterName.MatchString(name):
		err = errStatus(http.StatusPreconditionFailed, "Cluster name is not valid")
	case !ok:
		err = errStatus(http.StatusBadRequest, "cluster data is required")
	default:
		err = checkClusterURLs(d)
	}
	if err == nil {
		err = s.b.CreateCluster(name, d)
	}
	okReply(w, clusterError(err, "Cluster does not exist"))
}

// updateCluster replaces a cluster's metadata (peers included).
func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request) {
	d, ok, err := readClusterData(r)
	if err == nil && !ok {
		// Pulsar fails on the missing body with a NullPointerException.
		err = errStatus(http.StatusInternalServerError, "cluster data is required")
	}
	if err == nil {
		err = checkClusterURLs(d)
	}
	if err == nil {
		err = s.b.UpdateCluster(r.PathValue("cluster"), d)
	}
	okReply(w, clusterError(err, "Cluster does not exist"))
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) {
	reply(w, nil, clusterError(s.b.DeleteCluster(r.PathValue("cluster")), "Cluster does not exist"))
}

// okReply answers 200 without a body, as Pulsar's Response.ok(), or err.
func okReply(w http.ResponseWriter, err error) {
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// clusterError gives the cluster metadata's errors Pulsar's statuses;
// notFound is the endpoint's words for a cluster that does not exist.
func clusterError(err error, notFound string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, broker.ErrClusterNotFound):
		return errStatus(http.StatusNotFound, notFound)
	case errors.Is(err, broker.ErrClusterExists):
		return errStatus(http.StatusConflict, "Cluster already exists")
	case errors.Is(err, broker.ErrClusterNotEmpty), errors.Is(err, broker.ErrInvalidPeer):
		return errStatus(http.StatusPreconditionFailed, err.Error())
	case errors.Is(err, broker.ErrBrokerInOtherDomain):
		return errStatus(http.StatusConflict, err.Error())
	}
	return err
}

// clusterGone is Pulsar's 412 for a cluster that does not exist, on the
// endpoints of its failure domains and isolation policies.
func clusterGone(err error, cluster string) error {
	if errors.Is(err, broker.ErrClusterNotFound) {
		return errStatus(http.StatusPreconditionFailed, "Cluster "+cluster+" does not exist.")
	}
	return clusterError(err, "")
}

func (s *Server) getPeers(w http.ResponseWriter, r *http.Request) {
	d, ok := s.b.Cluster(r.PathValue("cluster"))
	if !ok {
		httpError(w, http.StatusNotFound, "Cluster does not exist")
		return
	}
	if d.Peers == nil {
		w.Header().Set("Content-Type", "application/json")
		return // Pulsar answers null as an empty 200
	}
	reply(w, d.Peers, nil)
}

func (s *Server) setPeers(w http.ResponseWriter, r *http.Request) {
	var peers []string
	body, err := readBody(r, 1<<20)
	if t := bytes.TrimSpace(body); err == nil && len(t) > 0 {
		peers, err = readStringSet(t)
	}
	if err == nil {
		err = s.b.SetPeerClusters(r.PathValue("cluster"), peers)
	}
	reply(w, nil, clusterError(err, "Cluster does not exist"))
}

// failureDomainDoc is a failure domain as Pulsar writes it: {} without a
// list of brokers.
func failureDomainDoc(fd broker.FailureDomain) map[string]any {
	if fd.Brokers == nil {
		return map[string]any{}
	}
	return map[string]any{"brokers": fd.Brokers}
}

// listFailureDomains answers a cluster's failure domains, {} for a cluster
// that does not exist (Pulsar does not check it here).
func (s *Server) listFailureDomains(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{}
	for name, fd := range s.b.FailureDomains(r.PathValue("cluster")) {
		out[name] = failureDomainDoc(fd)
	}
	reply(w, out, nil)
}

func (s *Server) getFailureDomain(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("domain")
	fd, err := s.b.FailureDomain(cluster, name)
	if errors.Is(err, broker.ErrFailureDomainNotFound) {
		err = errStatus(http.StatusNotFound, "Domain "+name+" for cluster "+cluster+" does not exist")
	}
	if err != nil {
		reply(w, nil, clusterGone(err, cluster))
		return
	}
	reply(w, failureDomainDoc(fd), nil)
}

// setFailureDomain writes a failure domain; without a body Pulsar writes
// nothing and answers 204.
func (s *Server) setFailureDomain(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	body, err := readBody(r, 1<<20)
	if err != nil {
		reply(w, nil, err)
		return
	}
	t := bytes.TrimSpace(body)
	if string(t) == "null" {
		httpError(w, http.StatusInternalServerError, "Failure domain data is null")
		return
	}
	var fd struct {
		Brokers []string `json:"brokers"`
	}
	if len(t) > 0 {
		if err := json.Unmarshal(t, &fd); err != nil {
			reply(w, nil, badBody(t, err))
			return
		}
	}
	if _, ok := s.b.Cluster(cluster); !ok {
		reply(w, nil, clusterGone(broker.ErrClusterNotFound, cluster))
		return
	}
	if len(t) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	reply(w, nil, clusterGone(s.b.SetFailureDomain(cluster, r.PathValue("domain"), broker.FailureDomain{Brokers: fd.Brokers}), cluster))
}

// deleteFailureDomain deletes a failure domain: 200 without a body.
func (s *Server) deleteFailureDomain(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("domain")
	err := s.b.DeleteFailureDomain(cluster, name)
	if errors.Is(err, broker.ErrFailureDomainNotFound) {
		err = errStatus(http.StatusNotFound, "Domain-name "+name+" or cluster "+cluster+" does not exist")
	}
	okReply(w, clusterGone(err, cluster))
}
