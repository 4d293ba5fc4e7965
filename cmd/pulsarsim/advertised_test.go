package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// With an advertised address, the broker is named by it everywhere Pulsar
// names a broker: the cluster's serviceUrl, the broker list, the leader, the
// owned namespaces by broker id and the HTTP lookup.
func TestTheAdvertisedAddressNamesTheBrokerInTheAdminAPI(t *testing.T) {
	_, admin := startStandalone(t, "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-advertised-address", "localhost")
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	id := "localhost:" + u.Port()
	get := func(path string) (int, string) {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var cluster struct {
		ServiceURL string `json:"serviceUrl"`
	}
	_, body := get("/admin/v2/clusters/standalone")
	if json.Unmarshal([]byte(body), &cluster); cluster.ServiceURL != "http://"+id {
		t.Errorf("cluster serviceUrl %q, want http://%s", cluster.ServiceURL, id)
	}
	if _, body := get("/admin/v2/brokers/standalone"); body != `["`+id+`"]` {
		t.Errorf("brokers %s, want [%q]", body, id)
	}
	if _, body := get("/admin/v2/brokers/leaderBroker"); !strings.Contains(body, `"brokerId":"`+id+`"`) {
		t.Errorf("leader %s, want broker id %s", body, id)
	}
	if status, body := get("/admin/v2/brokers/standalone/" + id + "/ownedNamespaces"); status != http.StatusOK {
		t.Errorf("owned namespaces of %s: %d %s", id, status, body)
	}
	if status, _ := get("/admin/v2/brokers/standalone/127.0.0.1:" + u.Port() + "/ownedNamespaces"); status != http.StatusNotFound {
		t.Errorf("owned namespaces of the listening address: %d, want 404 (not a broker id)", status)
	}
	if _, body := get("/lookup/v2/topic/persistent/public/default/advertised"); !strings.Contains(body, `"httpUrl":"http://`+id+`"`) {
		t.Errorf("lookup %s, want httpUrl http://%s", body, id)
	}
}
