package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/google/go-cmp/cmp"
)

// Testcontainers waits for the clusters list to be exactly ["standalone"].
func TestClustersListIsExactlyTheStandalone(t *testing.T) {
	_, _, base := startAdmin(t)
	status, body := call(t, base, "GET", "/admin/v2/clusters", "")
	if status != http.StatusOK || string(body) != `["standalone"]` {
		t.Fatalf("clusters: %d %q", status, body)
	}
}

// CI setups create the standalone cluster before their tests, as on a
// fresh broker; Pulsar answers 409, the cluster being there already.
func TestCreatingTheStandaloneClusterIsAConflict(t *testing.T) {
	_, a, base := startAdmin(t)
	err := a.Clusters().Create(utils.ClusterData{Name: "standalone", ServiceURL: base})
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "Cluster already exists") {
		t.Fatalf("creating standalone: %v", err)
	}
	if status, _ := call(t, base, "PUT", "/admin/v2/clusters/standalone", "{bad"); status != http.StatusBadRequest {
		t.Fatalf("a body that does not parse: %d", status)
	}
}

func TestClusterAndBrokersThroughPulsaradmin(t *testing.T) {
	b, a, base := startAdmin(t)
	cluster, err := a.Clusters().Get("standalone")
	if err != nil || cluster.ServiceURL != base || cluster.BrokerServiceURL != b.URL() {
		t.Fatalf("cluster %+v, %v; want serviceUrl %s, brokerServiceUrl %s", cluster, err, base, b.URL())
	}
	if _, err := a.Clusters().Get("elsewhere"); err == nil {
		t.Fatal("an unknown cluster was found")
	}
	if err := a.Brokers().HealthCheck(); err != nil {
		t.Fatalf("health: %v", err)
	}
	if err := a.Brokers().HealthCheckWithTopicVersion(utils.TopicVersionV2); err != nil {
		t.Fatalf("health V2: %v", err)
	}
	id := base[len("http://"):]
	active, err := a.Brokers().GetActiveBrokers("standalone")
	if err != nil || !cmp.Equal(active, []string{id}) {
		t.Fatalf("active brokers %v, %v; want [%s]", active, err, id)
	}
	leader, err := a.Brokers().GetLeaderBroker()
	if err != nil || leader.BrokerID != id || leader.ServiceURL != base {
		t.Fatalf("leader %+v, %v", leader, err)
	}
	conf, err := a.Brokers().GetRuntimeConfigurations()
	if err != nil || conf["schemaCompatibilityStrategy"] != "FULL" || conf["clusterName"] != "standalone" {
		t.Fatalf("runtime configuration %v, %v", conf, err)
	}
	// A namespace's bundle is owned once it has a topic.
	p, err := newClient(t, b).CreateProducer(pulsar.ProducerOptions{Topic: "owned"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	owned, err := a.Brokers().GetOwnedNamespaces("standalone", id)
	if st, ok := owned["public/default/0x00000000_0xffffffff"]; err != nil || !ok || !st.IsActive {
		t.Fatalf("owned namespaces %+v, %v", owned, err)
	}
	for path, want := range map[string]string{"/admin/v2/brokers/ready": "ok", "/admin/v2/brokers/version": "4.0.8",
		"/admin/v2/brokers/health": "ok"} {
		if status, body := call(t, base, "GET", path, ""); status != http.StatusOK || string(body) != want {
			t.Errorf("%s: %d %q, want %q", path, status, body, want)
		}
	}
}
