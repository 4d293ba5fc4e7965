package scenarios_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// clusterAnswers asks the cluster and broker endpoints that tools poll and
// describes the answers, with the broker's own addresses replaced by
// placeholders.
func clusterAnswers(t *testing.T, admin, pulsarURL string) []string {
	host := strings.TrimPrefix(admin, "http://")
	var out []string
	for _, path := range []string{"/admin/v2/clusters", "/admin/v2/clusters/standalone", "/admin/v2/clusters/elsewhere",
		"/admin/v2/brokers/health", "/admin/v2/brokers/health?topicVersion=V2", "/admin/v2/brokers/ready",
		"/admin/v2/brokers/version", "/admin/v2/brokers", "/admin/v2/brokers/standalone", "/admin/v2/brokers/leaderBroker",
		"/admin/v2/brokers/standalone/nope:1/ownedNamespaces", "/admin/v2/clusters/standalone/failureDomains",
		"/admin/v2/brokers/configuration/values"} {
		status, body := adminCall(t, "GET", admin+path, "")
		body = strings.NewReplacer(admin, "ADMIN", pulsarURL, "PULSAR", host, "HOST").Replace(body)
		var doc map[string]any
		if json.Unmarshal([]byte(body), &doc) == nil {
			// Pulsar writes object keys in its own order.
			canon, _ := json.Marshal(doc)
			body = string(canon)
		}
		out = append(out, path+" "+strings.TrimSpace(body)+" "+statusText(status))
	}
	// CI setups create the standalone cluster first: a conflict; a body
	// that does not parse is refused first (Jackson's words differ).
	status, body := adminCall(t, "PUT", admin+"/admin/v2/clusters/standalone", `{"serviceUrl":"http://localhost:8080/"}`)
	out = append(out, "PUT /admin/v2/clusters/standalone "+body+" "+statusText(status))
	status, _ = adminCall(t, "PUT", admin+"/admin/v2/clusters/standalone", `{bad`)
	out = append(out, "PUT /admin/v2/clusters/standalone {bad "+statusText(status))
	return out
}

func statusText(status int) string { return fmt.Sprintf("(%d)", status) }

// TestDifferentialClusterEndpoints compares the cluster and broker endpoints
// with Pulsar's.
func TestDifferentialClusterEndpoints(t *testing.T) {
	url := oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	got := clusterAnswers(t, sim.Sim.AdminURL(), sim.URL)
	want := clusterAnswers(t, realAdmin, url)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}
