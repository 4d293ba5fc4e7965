package admin_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/broker"
)

// pulsaradmin creates, reads, updates and deletes a cluster other than the
// standalone, its peers and its failure domains.
func TestClusterMetadataThroughPulsaradmin(t *testing.T) {
	_, a, _ := startAdmin(t)
	c := a.Clusters()
	if err := c.Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080", BrokerServiceURL: "pulsar://east:6650"}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, c.Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080"}), 409)
	wantStatus(t, c.Create(utils.ClusterData{Name: "west", ServiceURL: "ftp://west"}), 400)
	got, err := c.Get("east")
	if err != nil || got.ServiceURL != "http://east:8080" || got.BrokerServiceURL != "pulsar://east:6650" {
		t.Fatalf("east: %+v, %v", got, err)
	}
	if err := c.Update(utils.ClusterData{Name: "east", ServiceURL: "http://east2:8080"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get("east"); err != nil || got.ServiceURL != "http://east2:8080" || got.BrokerServiceURL != "" {
		t.Fatalf("east updated: %+v, %v", got, err)
	}
	if err := c.UpdatePeerClusters("east", []string{"standalone"}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, c.UpdatePeerClusters("east", []string{"nowhere"}), 412)
	if peers, err := c.GetPeerClusters("east"); err != nil || !slices.Equal(peers, []string{"standalone"}) {
		t.Fatalf("peers: %v, %v", peers, err)
	}
	if list, err := c.List(); err != nil || !slices.Equal(list, []string{"east", "standalone"}) {
		t.Fatalf("clusters: %v, %v", list, err)
	}
	fd := utils.FailureDomainData{ClusterName: "east", DomainName: "rack1", BrokerList: []string{"b2:8080", "b1:8080"}}
	if err := c.CreateFailureDomain(fd); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, c.CreateFailureDomain(utils.FailureDomainData{ClusterName: "east", DomainName: "rack2", BrokerList: []string{"b1:8080"}}), 409)
	wantStatus(t, c.CreateFailureDomain(utils.FailureDomainData{ClusterName: "nowhere", DomainName: "rack1"}), 412)
	if got, err := c.GetFailureDomain("east", "rack1"); err != nil || !slices.Equal(got.BrokerList, []string{"b1:8080", "b2:8080"}) {
		t.Fatalf("rack1: %+v, %v", got, err)
	}
	if all, err := c.ListFailureDomains("east"); err != nil || len(all) != 1 {
		t.Fatalf("failure domains: %v, %v", all, err)
	}
	if err := c.DeleteFailureDomain(fd); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetFailureDomain("east", "rack1")
	wantStatus(t, err, 404)
	if err := c.Delete("east"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get("east")
	wantStatus(t, err, 404)
}

// POST /clusters/standalone rewrites the standalone's own data; its peers
// keep its URLs until then.
func TestUpdatingTheStandaloneCluster(t *testing.T) {
	b, a, base := startAdmin(t)
	c := a.Clusters()
	if err := c.Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080"}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdatePeerClusters("standalone", []string{"east"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get("standalone")
	if err != nil || got.ServiceURL != base || got.BrokerServiceURL != b.URL() || !slices.Equal(got.PeerClusterNames, []string{"east"}) {
		t.Fatalf("standalone with a peer: %+v, %v", got, err)
	}
	if err := c.Update(utils.ClusterData{Name: "standalone", ServiceURL: "http://moved:8080", BrokerServiceURL: "pulsar://moved:6650"}); err != nil {
		t.Fatal(err)
	}
	got, err = c.Get("standalone")
	if err != nil || got.ServiceURL != "http://moved:8080" || got.BrokerServiceURL != "pulsar://moved:6650" || got.PeerClusterNames != nil {
		t.Fatalf("standalone updated: %+v, %v", got, err)
	}
}

// The brokers of a cluster share its configuration store: a cluster
// created, and a setting changed at run time, through one broker's admin
// API are seen through the other's, and the setting applies on both.
func TestClusterMetadataIsSharedByTheBrokersOfACluster(t *testing.T) {
	cl := broker.NewCluster(2)
	t.Cleanup(func() { _ = cl.Close() })
	if err := cl.Listen(); err != nil {
		t.Fatal(err)
	}
	var admins []padmin.Client
	for i := range 2 {
		srv := httptest.NewServer(admin.New(cl.Broker(i)))
		t.Cleanup(srv.Close)
		a, err := padmin.New(&config.Config{WebServiceURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		admins = append(admins, a)
	}
	if err := admins[0].Clusters().Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080"}); err != nil {
		t.Fatal(err)
	}
	if got, err := admins[1].Clusters().Get("east"); err != nil || got.ServiceURL != "http://east:8080" {
		t.Fatalf("east through the other broker: %+v, %v", got, err)
	}
	if err := admins[0].Brokers().UpdateDynamicConfiguration("allowAutoTopicCreation", "false"); err != nil {
		t.Fatal(err)
	}
	values, err := admins[1].Brokers().GetAllDynamicConfigurations()
	if err != nil || values["allowAutoTopicCreation"] != "false" {
		t.Fatalf("values through the other broker: %v, %v", values, err)
	}
	for i, a := range admins {
		conf, err := a.Brokers().GetRuntimeConfigurations()
		if err != nil || conf["allowAutoTopicCreation"] != "false" {
			t.Fatalf("broker %d runtime: %v, %v", i, conf["allowAutoTopicCreation"], err)
		}
	}
	wantStatus(t, admins[1].Brokers().UpdateDynamicConfiguration("clusterName", "other"), 412)
	if err := admins[1].Brokers().DeleteDynamicConfiguration("allowAutoTopicCreation"); err != nil {
		t.Fatal(err)
	}
	if conf, err := admins[0].Brokers().GetRuntimeConfigurations(); err != nil || conf["allowAutoTopicCreation"] != "true" {
		t.Fatalf("runtime after the delete: %v, %v", conf["allowAutoTopicCreation"], err)
	}
}

// The settings of topic creation on first use, changed at run time, apply
// to the next topic a pulsar-client-go producer names: off, then
// partitioned with three partitions, then back to the broker's own.
func TestDynamicAutoTopicCreationAppliesToTheRunningBroker(t *testing.T) {
	b, a, base := startAdmin(t)
	client := newClient(t, b)
	produce := func(topic string) error {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err == nil {
			p.Close()
		}
		return err
	}
	br := a.Brokers()
	if err := br.UpdateDynamicConfiguration("allowAutoTopicCreation", "false"); err != nil {
		t.Fatal(err)
	}
	if err := produce("off"); err == nil || !strings.Contains(err.Error(), "TopicNotFound") {
		t.Fatalf("a producer of a new topic with creation off: %v", err)
	}
	for _, kv := range [][2]string{{"allowAutoTopicCreation", "true"}, {"allowAutoTopicCreationType", "partitioned"}, {"defaultNumPartitions", "3"}} {
		if err := br.UpdateDynamicConfiguration(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := produce("three"); err != nil {
		t.Fatal(err)
	}
	if status, body := call(t, base, "GET", "/admin/v2/persistent/public/default/three/partitions", ""); status != 200 || !strings.Contains(string(body), `"partitions":3`) {
		t.Fatalf("the new topic's partitions: %d %s", status, body)
	}
	for _, k := range []string{"allowAutoTopicCreationType", "defaultNumPartitions"} {
		if err := br.DeleteDynamicConfiguration(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := produce("plain"); err != nil {
		t.Fatal(err)
	}
	if status, body := call(t, base, "GET", "/admin/v2/persistent/public/default/plain/partitions", ""); status != 200 || !strings.Contains(string(body), `"partitions":0`) {
		t.Fatalf("the plain topic's partitions: %d %s", status, body)
	}
}

// As on a real 4.0.8 (seen on the wire), a cluster's failure domains
// outlive it and keep its name in the list of clusters, and come back with
// it.
func TestDeletedClusterKeepsItsFailureDomainsAsPulsarDoes(t *testing.T) {
	_, a, _ := startAdmin(t)
	c := a.Clusters()
	if err := c.Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateFailureDomain(utils.FailureDomainData{ClusterName: "east", DomainName: "rack1", BrokerList: []string{"b1:8080"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("east"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("east"); err == nil {
		t.Fatal("the deleted cluster is still there")
	}
	if list, err := c.List(); err != nil || !slices.Equal(list, []string{"east", "standalone"}) {
		t.Fatalf("clusters after the delete: %v, %v", list, err)
	}
	if err := c.Create(utils.ClusterData{Name: "east", ServiceURL: "http://east:8080"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetFailureDomain("east", "rack1"); err != nil || !slices.Equal(got.BrokerList, []string{"b1:8080"}) {
		t.Fatalf("rack1 after the cluster came back: %+v, %v", got, err)
	}
}

// As on a real 4.0.8 (asked by hand): a migration written for a cluster
// that does not exist puts its name in the list of clusters, though the
// cluster itself is still not found.
func TestClusterWithOnlyAMigrationIsListedAsPulsarLists(t *testing.T) {
	_, a, base := startAdmin(t)
	body := `{"serviceUrl":"http://green:8080","brokerServiceUrl":"pulsar://green:6650"}`
	if status, got := call(t, base, "POST", "/admin/v2/clusters/blue/migrate?migrated=true", body); status != 200 {
		t.Fatalf("migrate a cluster that does not exist: %d %s", status, got)
	}
	if list, err := a.Clusters().List(); err != nil || !slices.Equal(list, []string{"blue", "standalone"}) {
		t.Fatalf("clusters after the migration: %v, %v", list, err)
	}
	if _, err := a.Clusters().Get("blue"); err == nil {
		t.Fatal("the migrated cluster exists")
	}
}
