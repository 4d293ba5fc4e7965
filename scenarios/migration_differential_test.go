package scenarios_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// migrationScript is what the cluster migration comparison asks both
// brokers, of the run's clusters only: migrating the broker's own cluster
// would move every topic of the real broker away, and the comparisons after
// this one with them.
func migrationScript() []metaStep {
	const m = "/admin/v2/clusters/m-{run}"
	const none = "/admin/v2/clusters/none-{run}"
	return []metaStep{
		{"GET", m + "/migrate", ""},
		{"PUT", m, `{"serviceUrl":"http://m:8080"}`},
		{"GET", m + "/migrate", ""},
		{"POST", m + "/migrate?migrated=false", `{"serviceUrl":"http://green:8080","brokerServiceUrl":"pulsar://green:6650"}`},
		{"GET", m + "/migrate", ""},
		{"GET", m, ""},
		{"POST", m + "/migrate?migrated=TRUE", `{"serviceUrlTls":"https://g:8443","brokerServiceUrlTls":"pulsar+ssl://g:6651"}`},
		{"GET", m + "/migrate", ""},
		{"POST", m + "/migrate?migrated=yes", `{"serviceUrl":5,"unknown":1}`},
		{"GET", m + "/migrate", ""},
		{"POST", m + "/migrate", `{}`},
		{"GET", m + "/migrate", ""},
		{"POST", m + "/migrate?migrated=true", `[]`},
		{"POST", m + "/migrate?migrated=true", `{bad`},
		{"POST", m + "/migrate?migrated=true", ``},
		{"POST", m + "/migrate?migrated=true", `null`},
		{"GET", m + "/migrate", ""},
		{"POST", none + "/migrate?migrated=true", `{"brokerServiceUrl":"pulsar://g:6650"}`},
		{"GET", none + "/migrate", ""},
		{"GET", none, ""},
		{"DELETE", m, ""},
		{"GET", m + "/migrate", ""},
	}
}

// The cluster policies that blue-green migration writes
// (/admin/v2/clusters/{cluster}/migrate), compared request by request with
// a real Pulsar: kept whether or not the cluster exists, and after it is
// deleted; the URLs replaced whole; migrated read as Java reads a boolean.
func TestDifferentialClusterMigration(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	run := newMetaRun()
	t.Cleanup(func() { adminCall(t, "DELETE", realAdmin+"/admin/v2/clusters/m-"+run, "") })
	got := runMetaSteps(t, sim.Sim.AdminURL(), run, migrationScript())
	want := runMetaSteps(t, realAdmin, run, migrationScript())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("%d answers, the same on both", len(got))
}
