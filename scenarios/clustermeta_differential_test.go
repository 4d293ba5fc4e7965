package scenarios_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The admin API of the configuration store's cluster metadata (clusters,
// peers, failure domains, namespace isolation policies), of the broker's
// dynamic configuration and stats, and of the resource quotas, compared
// request by request with a real Pulsar. Names carry the run's id: a real
// broker keeps what a run creates.

// metaStep is one request; {run} in its path and body is the run's id.
type metaStep struct{ method, path, body string }

// describeAnswer describes an answer for the comparison: the status, the
// reason of a refusal (but a 400's words for a body that does not parse,
// which Pulsar's JSON reader answers in plain text, and a 405's, which
// Jersey answers in HTML), the body of a success as canonical JSON with
// every list of strings sorted (Pulsar writes its sets in JVM hash order)
// and kept to what the run made (a real broker keeps the clusters of other
// runs). The broker's own id (host:port of its admin API) is written
// {broker}.
func describeAnswer(t *testing.T, status int, body []byte, run, self string) string {
	text := strings.ReplaceAll(string(body), self, "{broker}")
	text = strings.ReplaceAll(text, run, "{run}")
	switch {
	case status == http.StatusMethodNotAllowed:
		return "405"
	case status >= 300:
		var r struct{ Reason string }
		if json.Unmarshal([]byte(text), &r) != nil || r.Reason == "" {
			if status == http.StatusNotFound {
				return "404 (no route)"
			}
			return fmt.Sprint(status)
		}
		if strings.HasPrefix(r.Reason, "Not found: ") {
			return "404 (no route)"
		}
		if status == http.StatusBadRequest && (strings.HasPrefix(r.Reason, "Cannot deserialize") || strings.HasPrefix(r.Reason, "Invalid JSON body")) {
			return "400"
		}
		return fmt.Sprintf("%d %s", status, r.Reason)
	case len(bytes.TrimSpace(body)) == 0:
		return fmt.Sprintf("%d no body", status)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return fmt.Sprintf("%d (not JSON) %s", status, text)
	}
	out, err := json.Marshal(sortStringLists(v))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %s", status, out)
}

// sortStringLists sorts every list of strings in v, and keeps of a list of
// cluster names only the run's and the standalone's.
func sortStringLists(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = sortStringLists(e)
		}
	case []any:
		strs := []string{}
		for i, e := range x {
			x[i] = sortStringLists(e)
			if s, ok := e.(string); ok {
				strs = append(strs, s)
			}
		}
		if len(strs) == len(x) && len(x) > 0 {
			slices.Sort(strs)
			out := []any{}
			for _, s := range strs {
				out = append(out, s)
			}
			return out
		}
	}
	return v
}

// runMetaSteps sends steps to the admin API at base and describes each
// answer.
func runMetaSteps(t *testing.T, base, run string, steps []metaStep) []string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range steps {
		path := strings.ReplaceAll(s.path, "{run}", run)
		body := strings.ReplaceAll(s.body, "{run}", run)
		req, err := http.NewRequest(s.method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case path == "/admin/v2/clusters":
			answer = runClusters(t, answer, run)
		case strings.HasSuffix(path, "/failureDomains"):
			answer = runDomains(t, answer, run)
		}
		out = append(out, fmt.Sprintf("%s %s %s -> %s", s.method, s.path, s.body,
			describeAnswer(t, resp.StatusCode, answer, run, u.Host)))
	}
	return out
}

// runClusters keeps of a list of clusters the standalone's and the run's.
func runClusters(t *testing.T, body []byte, run string) []byte {
	var names []string
	if json.Unmarshal(body, &names) != nil {
		return body
	}
	kept := []string{}
	for _, n := range names {
		if n == "standalone" || strings.Contains(n, run) {
			kept = append(kept, n)
		}
	}
	out, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runDomains keeps of a map of failure domains the run's.
func runDomains(t *testing.T, body []byte, run string) []byte {
	var domains map[string]any
	if json.Unmarshal(body, &domains) != nil {
		return body
	}
	for name := range domains {
		if !strings.Contains(name, run) {
			delete(domains, name)
		}
	}
	out, err := json.Marshal(domains)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// clusterMetaScript is what the cluster metadata comparison asks both
// brokers: {c} is the run's cluster.
func clusterMetaScript() []metaStep {
	const c = "/admin/v2/clusters/c-{run}"
	const none = "/admin/v2/clusters/none-{run}"
	const sa = "/admin/v2/clusters/standalone"
	const policy = `{"namespaces":["tc-{run}/.*"],"primary":["x.*"],"secondary":[],"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"1","usage_threshold":"80"}}}`
	steps := []metaStep{
		{"GET", "/admin/v2/clusters", ""},
		{"GET", "/admin/v2/clusters/standalone/peers", ""},
		{"PUT", c, `{"serviceUrl":"http://c2:8080","brokerServiceUrl":"pulsar://c2:6650"}`},
		{"PUT", c, `{"serviceUrl":"http://c2:8080"}`},
		{"GET", c, ""},
		{"GET", "/admin/v2/clusters", ""},
		{"POST", c, `{"serviceUrl":"http://c2b:8080","proxyProtocol":"SNI","listenerName":"l","brokerClientTlsEnabled":true,"authenticationPlugin":"p","unknown":1}`},
		{"GET", c, ""},
		{"POST", c, `{"proxyProtocol":"BAD","serviceUrl":""}`},
		{"GET", c, ""},
		{"POST", none, `{"serviceUrl":"http://x:8080"}`},
		{"DELETE", none, ""},
		{"GET", none, ""},
		{"PUT", none, ""},
		{"PUT", none, "null"},
		{"PUT", none, "x"},
		{"PUT", none, "[]"},
		{"PUT", none, `{"brokerClientTlsEnabled":"yes"}`},
		{"PUT", "/admin/v2/clusters/bad%2Fname-{run}", "{}"},
		{"PUT", "/admin/v2/clusters/bad%2Fname-{run}", "x"},
		{"PUT", "/admin/v2/clusters/bad%2Fname-{run}", ""},
		{"POST", c, `{"serviceUrl":"notaurl"}`},
	}
	for _, bad := range []string{`{"serviceUrl":"notaurl"}`, `{"serviceUrl":"https://x:1"}`, `{"serviceUrl":"HTTP://x:1"}`,
		`{"serviceUrl":"http://"}`, `{"serviceUrl":"http://a b"}`, `{"serviceUrlTls":"http://x:1"}`,
		`{"brokerServiceUrl":"http://x:1"}`, `{"brokerServiceUrl":"pulsar+ssl://x:1"}`, `{"brokerServiceUrlTls":"pulsar://x:1"}`,
		`{"proxyServiceUrl":"junk"}`, `{"serviceUrl":"ftp://x:1","brokerServiceUrl":"http://x"}`} {
		steps = append(steps, metaStep{"PUT", none, bad})
	}
	steps = append(steps,
		metaStep{"PUT", none + "-ok", `{"serviceUrl":"http://x","brokerServiceUrl":"pulsar://x:1,y:2","serviceUrlTls":"https://x:1","brokerServiceUrlTls":"pulsar+ssl://x:1","proxyServiceUrl":"pulsar+ssl://p:1"}`},
		metaStep{"GET", none + "-ok", ""},
		metaStep{"DELETE", none + "-ok", ""},
		metaStep{"GET", none, ""},
		// Peers.
		metaStep{"GET", c + "/peers", ""},
		metaStep{"POST", c + "/peers", `["standalone"]`},
		metaStep{"GET", c + "/peers", ""},
		metaStep{"POST", c + "/peers", `["c-{run}"]`},
		metaStep{"POST", c + "/peers", `["C-{run}"]`},
		metaStep{"POST", c + "/peers", `["none-{run}"]`},
		metaStep{"POST", c + "/peers", `["standalone","none-{run}"]`},
		metaStep{"POST", c + "/peers", `[1]`},
		metaStep{"POST", c + "/peers", `{}`},
		metaStep{"POST", c + "/peers", `[]`},
		metaStep{"GET", c + "/peers", ""},
		metaStep{"POST", c + "/peers", `["standalone","standalone"]`},
		metaStep{"GET", c, ""},
		metaStep{"POST", c + "/peers", `null`},
		metaStep{"GET", c + "/peers", ""},
		metaStep{"POST", c + "/peers", ``},
		metaStep{"GET", c + "/peers", ""},
		metaStep{"GET", none + "/peers", ""},
		metaStep{"POST", none + "/peers", `["standalone"]`},
		metaStep{"POST", none + "/peers", `["none-{run}"]`},
		// Failure domains, on the standalone: a cluster deleted after a
		// domain was written stays in a real broker's list of clusters
		// for good (below), which would change what other comparisons see.
		metaStep{"GET", sa + "/failureDomains", ""},
		metaStep{"GET", none + "/failureDomains", ""},
		metaStep{"GET", sa + "/failureDomains/d1-{run}", ""},
		metaStep{"POST", sa + "/failureDomains/d1-{run}", `{"brokers":["b1-{run}:8080"]}`},
		metaStep{"GET", sa + "/failureDomains/d1-{run}", ""},
		metaStep{"POST", sa + "/failureDomains/d2-{run}", `{"brokers":["b1-{run}:8080"]}`},
		metaStep{"POST", sa + "/failureDomains/d2-{run}", `{"brokers":["b3-{run}:8080","b2-{run}:8080","b3-{run}:8080"]}`},
		metaStep{"POST", sa + "/failureDomains/d1-{run}", `{"brokers":["b1-{run}:8080","b4-{run}:8080"]}`},
		metaStep{"POST", sa + "/failureDomains/d3-{run}", `{}`},
		metaStep{"POST", sa + "/failureDomains/d4-{run}", `{"brokers":[]}`},
		metaStep{"POST", sa + "/failureDomains/d5-{run}", ``},
		metaStep{"POST", sa + "/failureDomains/d6-{run}", `{"brokers":"x"}`},
		metaStep{"POST", sa + "/failureDomains/d6-{run}", `{"other":1}`},
		metaStep{"PUT", sa + "/failureDomains/d6-{run}", `{}`},
		metaStep{"GET", sa + "/failureDomains", ""},
		metaStep{"GET", sa + "/failureDomains/d5-{run}", ""},
		metaStep{"POST", none + "/failureDomains/d1", `{"brokers":["b1:8080"]}`},
		metaStep{"GET", none + "/failureDomains/d1", ""},
		metaStep{"DELETE", none + "/failureDomains/d1", ""},
		metaStep{"DELETE", sa + "/failureDomains/nope-{run}", ""},
		metaStep{"DELETE", sa + "/failureDomains/d3-{run}", ""},
		metaStep{"GET", sa + "/failureDomains/d3-{run}", ""},
		metaStep{"DELETE", sa + "/failureDomains/d1-{run}", ""},
		metaStep{"DELETE", sa + "/failureDomains/d2-{run}", ""},
		metaStep{"DELETE", sa + "/failureDomains/d4-{run}", ""},
		metaStep{"DELETE", sa + "/failureDomains/d6-{run}", ""},
		metaStep{"GET", sa + "/failureDomains", ""},
		// Namespace isolation policies.
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/p1", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers/x1:80", ""},
		metaStep{"GET", none + "/namespaceIsolationPolicies", ""},
		metaStep{"GET", none + "/namespaceIsolationPolicies/p1", ""},
		metaStep{"GET", none + "/namespaceIsolationPolicies/brokers", ""},
		metaStep{"POST", none + "/namespaceIsolationPolicies/p1", policy},
		metaStep{"DELETE", none + "/namespaceIsolationPolicies/p1", ""},
		metaStep{"DELETE", c + "/namespaceIsolationPolicies/zz", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		metaStep{"DELETE", c, ""},
		metaStep{"PUT", c, `{"serviceUrl":"http://c2:8080"}`},
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p1", policy},
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/p1", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/p2", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers/x1:80", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers/y:80", ""},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p3", `{"namespaces":["a/b"],"primary":["x"],"secondary":["y"],"auto_failover_policy":{"policy_type":"min_available","parameters":{"usage_threshold":"80","min_limit":"2"}},"unload_scope":"none"}`},
		metaStep{"GET", c + "/namespaceIsolationPolicies/p3", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies/brokers/y", ""},
		metaStep{"DELETE", c + "/namespaceIsolationPolicies/p3", ""},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{"namespaces":["a/b"],"primary":["("],"secondary":[],"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"1","usage_threshold":"80"}}}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{"namespaces":["a/b"],"primary":["x"],"secondary":[],"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"x","usage_threshold":"80"}}}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{"namespaces":["a/b"],"primary":["x"],"secondary":[],"auto_failover_policy":{"policy_type":"other","parameters":{}}}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{"namespaces":["a/b"],"primary":["x"],"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"1","usage_threshold":"80"}}}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{"namespaces":[],"primary":["x"],"secondary":[],"auto_failover_policy":{"policy_type":"min_available","parameters":{"min_limit":"1","usage_threshold":"80"}},"unload_scope":"odd"}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `{}`},
		metaStep{"POST", c + "/namespaceIsolationPolicies/p4", `x`},
		metaStep{"GET", c + "/namespaceIsolationPolicies/p4", ""},
		metaStep{"DELETE", c, ""},
		metaStep{"DELETE", c + "/namespaceIsolationPolicies/p1", ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		// A tenant may allow only clusters that exist; a cluster that
		// tenants allow is deleted all the same.
		metaStep{"PUT", "/admin/v2/tenants/tz-{run}", `{"allowedClusters":["none-{run}","standalone"]}`},
		metaStep{"GET", "/admin/v2/tenants/tz-{run}", ""},
		metaStep{"PUT", "/admin/v2/tenants/tc-{run}", `{"allowedClusters":["c-{run}"]}`},
		metaStep{"DELETE", c, ""},
		metaStep{"GET", c, ""},
		metaStep{"GET", c + "/namespaceIsolationPolicies", ""},
		metaStep{"DELETE", c, ""},
		metaStep{"GET", "/admin/v2/clusters", ""},
		metaStep{"DELETE", "/admin/v2/tenants/tc-{run}", ""},
	)
	return steps
}

// TestDifferentialClusterMetadata sends the same script of cluster,
// peer, failure domain and isolation policy requests to both brokers and
// compares every answer.
func TestDifferentialClusterMetadata(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	run := newMetaRun()
	t.Cleanup(func() { cleanClusterMeta(t, realAdmin, run) })
	got := runMetaSteps(t, sim.Sim.AdminURL(), run, clusterMetaScript())
	want := runMetaSteps(t, realAdmin, run, clusterMetaScript())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("%d answers, the same on both", len(got))
}

// cleanClusterMeta removes from the real broker what a run that failed
// half-way may have left there: a cluster still listed, or a failure domain
// of the standalone, would change what the other comparisons see.
func cleanClusterMeta(t *testing.T, admin, run string) {
	c := admin + "/admin/v2/clusters/c-" + run
	for _, p := range []string{"p1", "p3", "p4"} {
		adminCall(t, "DELETE", c+"/namespaceIsolationPolicies/"+p, "")
	}
	for _, path := range []string{c, admin + "/admin/v2/clusters/none-" + run + "-ok",
		admin + "/admin/v2/tenants/tc-" + run} {
		adminCall(t, "DELETE", path, "")
	}
	for i := 1; i <= 6; i++ {
		adminCall(t, "DELETE", fmt.Sprintf("%s/admin/v2/clusters/standalone/failureDomains/d%d-%s", admin, i, run), "")
	}
}

// newMetaRun returns a name part unique to the run.
func newMetaRun() string {
	return strings.TrimPrefix(scenarios.RemoteTarget(nil, "", "").Topic("m"), "persistent://public/default/m-")
}
