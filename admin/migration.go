package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A cluster's blue-green migration (PIP-188, broker/migration.go): POST
// /admin/v2/clusters/{cluster}/migrate?migrated=… with the green cluster's
// URLs writes the cluster's policies, GET reads them, as Pulsar 4.0.8
// answers them.

func (s *Server) routeMigration() {
	const p = "/admin/v2/clusters/{cluster}/migrate"
	s.clusterMux.HandleFunc("POST "+p, s.setMigration)
	s.clusterMux.HandleFunc("GET "+p, s.getMigration)
}

// clusterURLFields are the fields of Pulsar's ClusterPolicies.ClusterUrl,
// in its order.
var clusterURLFields = []string{"serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls"}

// setMigration writes a cluster's policies. As Pulsar 4.0.8 does, it does
// not look for the cluster, takes migrated as Java reads a boolean ("true"
// in any case, anything else false), reads the fields it knows of the
// body (numbers and booleans as their text) and ignores the others; a body
// that is not an object is a 400, none (or null) a 500.
func (s *Server) setMigration(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, 1<<20)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || string(t) == "null" {
		requestFailed(w, r)
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		be := badBody(body, err).(*bodyError)
		be.msg = strings.Replace(be.msg, "`java.util.LinkedHashMap`",
			"`org.apache.pulsar.common.policies.data.ClusterPolicies$ClusterUrl`", 1)
		reply(w, nil, be)
		return
	}
	text := func(k string) string {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			return ""
		}
		var str string
		if json.Unmarshal(v, &str) != nil {
			str = string(v) // a number or boolean, as Jackson coerces it
		}
		return str
	}
	url := broker.ClusterURL{ServiceURL: text("serviceUrl"), ServiceURLTLS: text("serviceUrlTls"),
		BrokerServiceURL: text("brokerServiceUrl"), BrokerServiceURLTLS: text("brokerServiceUrlTls")}
	migrated := strings.EqualFold(r.URL.Query().Get("migrated"), "true")
	s.b.SetClusterMigration(r.PathValue("cluster"), migrated, url)
	w.WriteHeader(http.StatusOK)
}

// getMigration answers a cluster's policies as Pulsar writes them: the
// URLs given, and ClusterUrl's "empty" property, which Pulsar writes
// false. A cluster without policies is a 404, whether it exists or not.
func (s *Server) getMigration(w http.ResponseWriter, r *http.Request) {
	p, ok := s.b.ClusterPolicies(r.PathValue("cluster"))
	if !ok {
		reply(w, nil, errStatus(http.StatusNotFound, "Cluster does not exist"))
		return
	}
	u := p.MigratedClusterURL
	url := map[string]any{"empty": false}
	for i, v := range []string{u.ServiceURL, u.ServiceURLTLS, u.BrokerServiceURL, u.BrokerServiceURLTLS} {
		if v != "" {
			url[clusterURLFields[i]] = v
		}
	}
	reply(w, map[string]any{"migrated": p.Migrated, "migratedClusterUrl": url}, nil)
}

// requestFailed answers as Pulsar's web server does when the request's
// handler fails on a body it cannot use (none): Jetty's HTML page of a
// 500, "Request failed.".
func requestFailed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html;charset=iso-8859-1")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = fmt.Fprintf(w, "<html>\n<head>\n<title>Error 500 Request failed.</title>\n</head>\n<body><h2>HTTP ERROR 500 Request failed.</h2>\n"+
		"<table>\n<tr><th>URI:</th><td>%s</td></tr>\n<tr><th>STATUS:</th><td>500</td></tr>\n"+
		"<tr><th>MESSAGE:</th><td>Request failed.</td></tr>\n</table>\n</body>\n</html>\n", html.EscapeString(r.URL.Path))
}
