package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The settings a Pulsar container takes from its environment (as the
// Python client's failover test sets two standalones up) reach pulsarsim
// through its standalone.conf: the cluster is named by clusterName in the
// admin API and in the producer names the broker makes up.
func TestTheConfigFilesClusterNameNamesTheCluster(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(conf, []byte("clusterName=standalone-0\nadvertisedAddress=localhost\n"+
		"advertisedListeners=external:pulsar://localhost:16650\nbrokerServicePort=0\nwebServicePort=0\n"), 0o600))
	_, admin := startStandalone(t, "-config", conf)
	get := func(path string) string {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if body := get("/admin/v2/clusters"); body != `["standalone-0"]` {
		t.Errorf("clusters %s, want [\"standalone-0\"]", body)
	}
	if body := get("/admin/v2/tenants/public"); !strings.Contains(body, `"allowedClusters":["standalone-0"]`) {
		t.Errorf("tenant public %s, want it allowed on standalone-0", body)
	}
	if body := get("/admin/v2/clusters/standalone"); !strings.Contains(body, "Cluster does not exist") {
		t.Errorf("cluster standalone: %s, want it not to exist", body)
	}
}

func TestAnEmptyClusterNameIsRefused(t *testing.T) {
	err := run([]string{"-cluster-name", "", "-addr", "127.0.0.1:0", "-http", ""})
	if err == nil || !strings.Contains(err.Error(), "-cluster-name") {
		t.Errorf("an empty cluster name: %v, want a refusal naming -cluster-name", err)
	}
}
