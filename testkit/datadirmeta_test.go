package testkit_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// pulsaradminFor returns a pulsaradmin client of b's admin API.
func pulsaradminFor(t *testing.T, b *testkit.Broker) padmin.Client {
	t.Helper()
	a, err := padmin.New(&config.Config{WebServiceURL: b.AdminURL()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// clusterMigration reads a cluster's migration policy over HTTP
// (pulsaradmin has no call for it).
func clusterMigration(t *testing.T, b *testkit.Broker, cluster string) map[string]any {
	t.Helper()
	resp, err := http.Get(b.AdminURL() + "/admin/v2/clusters/" + cluster + "/migrate")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &out) != nil {
		t.Fatalf("GET migrate of %s: %d %s", cluster, resp.StatusCode, body)
	}
	return out
}

// The cluster metadata and the dynamic configuration, written with
// pulsaradmin, are there after a restart and after a crash on the data
// directory, and the dynamic settings pulsarsim applies apply again.
func TestClusterMetadataAndDynamicConfigurationSurviveARestartAndACrash(t *testing.T) {
	for _, stop := range []string{"restart", "crash"} {
		t.Run(stop, func(t *testing.T) {
			b := testkit.Start(t, testkit.WithDataDir(t.TempDir()))
			a := pulsaradminFor(t, b)
			clusters, err := a.Clusters().List()
			if err != nil || len(clusters) != 1 {
				t.Fatalf("clusters of a new standalone: %v, %v", clusters, err)
			}
			own := clusters[0]
			if err := a.Clusters().Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080",
				BrokerServiceURL: "pulsar://east:6650"}); err != nil {
				t.Fatal(err)
			}
			if err := a.Clusters().UpdatePeerClusters(own, []string{"east"}); err != nil {
				t.Fatal(err)
			}
			if err := a.Clusters().CreateFailureDomain(utils.FailureDomainData{ClusterName: own, DomainName: "rack1",
				BrokerList: []string{"b2:8080", "b1:8080"}}); err != nil {
				t.Fatal(err)
			}
			policy := utils.NamespaceIsolationData{Namespaces: []string{"public/default"}, Primary: []string{"b1.*"},
				Secondary: []string{"b2.*"}, AutoFailoverPolicy: utils.AutoFailoverPolicyData{PolicyType: utils.MinAvailable,
					Parameters: map[string]string{"min_limit": "1", "usage_threshold": "80"}}}
			if err := a.NsIsolationPolicy().CreateNamespaceIsolationPolicy(own, "p1", policy); err != nil {
				t.Fatal(err)
			}
			quota := utils.ResourceQuota{MsgRateIn: 10, MsgRateOut: 20, BandwidthIn: 30, BandwidthOut: 40, Memory: 50}
			if err := a.ResourceQuotas().SetDefaultResourceQuota(quota); err != nil {
				t.Fatal(err)
			}
			bundle := b.Bundles("public/default")[0]
			bundleQuota := utils.ResourceQuota{MsgRateIn: 1, MsgRateOut: 2, BandwidthIn: 3, BandwidthOut: 4, Memory: 5}
			if err := a.ResourceQuotas().SetNamespaceBundleResourceQuota("public/default", bundle, bundleQuota); err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(b.AdminURL()+"/admin/v2/clusters/east/migrate?migrated=true", "application/json",
				strings.NewReader(`{"serviceUrl":"http://green:8080","brokerServiceUrl":"pulsar://green:6650"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 204 && resp.StatusCode != 200 {
				t.Fatalf("POST migrate: %d", resp.StatusCode)
			}
			dynamic := map[string]string{"allowAutoTopicCreation": "false", "dispatchThrottlingRatePerTopicInMsg": "7",
				"clientLibraryVersionCheckEnabled": "true"}
			for k, v := range dynamic {
				if err := a.Brokers().UpdateDynamicConfiguration(k, v); err != nil {
					t.Fatal(err)
				}
			}
			tn, err := utils.GetTopicName("persistent://public/default/t")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Topics().Create(*tn, 0); err != nil {
				t.Fatal(err)
			}
			topic := "persistent://public/default/never-created"
			c := b.Client()
			if p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
				p.Close()
				t.Fatal("a producer on a new topic with allowAutoTopicCreation=false was let in")
			}
			c.Close()

			if stop == "crash" {
				b.Crash()
			}
			b.Restart()

			a = pulsaradminFor(t, b)
			clusters, err = a.Clusters().List()
			if slices.Sort(clusters); err != nil || !slices.Equal(clusters, slices.Sorted(slices.Values([]string{own, "east"}))) {
				t.Fatalf("clusters after the %s: %v, %v", stop, clusters, err)
			}
			east, err := a.Clusters().Get("east")
			if err != nil || east.ServiceURL != "http://east:8080" || east.BrokerServiceURL != "pulsar://east:6650" {
				t.Fatalf("cluster east after the %s: %+v, %v", stop, east, err)
			}
			peers, err := a.Clusters().GetPeerClusters(own)
			if err != nil || !slices.Equal(peers, []string{"east"}) {
				t.Fatalf("peers of %s after the %s: %v, %v", own, stop, peers, err)
			}
			fd, err := a.Clusters().GetFailureDomain(own, "rack1")
			if err != nil || !slices.Equal(fd.BrokerList, []string{"b1:8080", "b2:8080"}) {
				t.Fatalf("failure domain after the %s: %+v, %v", stop, fd, err)
			}
			got, err := a.NsIsolationPolicy().GetNamespaceIsolationPolicy(own, "p1")
			if err != nil || !slices.Equal(got.Namespaces, policy.Namespaces) || !slices.Equal(got.Primary, policy.Primary) ||
				!slices.Equal(got.Secondary, policy.Secondary) || got.AutoFailoverPolicy.Parameters["min_limit"] != "1" {
				t.Fatalf("isolation policy after the %s: %+v, %v", stop, got, err)
			}
			if q, err := a.ResourceQuotas().GetDefaultResourceQuota(); err != nil || *q != quota {
				t.Fatalf("default resource quota after the %s: %+v, %v", stop, q, err)
			}
			if q, err := a.ResourceQuotas().GetNamespaceBundleResourceQuota("public/default", bundle); err != nil || *q != bundleQuota {
				t.Fatalf("bundle resource quota after the %s: %+v, %v", stop, q, err)
			}
			if m := clusterMigration(t, b, "east"); m["migrated"] != true {
				t.Fatalf("migration policy of east after the %s: %v", stop, m)
			}
			values, err := a.Brokers().GetAllDynamicConfigurations()
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range dynamic {
				if values[k] != v {
					t.Fatalf("dynamic configuration after the %s: %v, want %s=%s", stop, values, k, v)
				}
			}
			c = b.Client()
			defer c.Close()
			if p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil {
				p.Close()
				t.Fatalf("after the %s a producer on a new topic was let in: allowAutoTopicCreation=false is not applied", stop)
			}
			if r := b.AppliedPolicies("persistent://public/default/t").DispatchRate; r == nil || r.Messages != 7 {
				t.Fatalf("the topic dispatch rate after the %s: %+v, want 7 messages from the dynamic configuration", stop, r)
			}
		})
	}
}
