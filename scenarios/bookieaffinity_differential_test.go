package scenarios_test

import (
	"fmt"
	"testing"

	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// bookieAffinityStory sets, reads and removes namespaces' bookie affinity
// groups through pulsaradmin, then asks the endpoint what other tools
// might: before any local policy is written, after an anti-affinity group
// (another local policy) is, bodies of the wrong shape, a missing
// namespace, a namespace deleted and created again.
func bookieAffinityStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	a, err := padmin.New(&config.Config{WebServiceURL: admin})
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces of their own: a real broker keeps what other runs wrote.
	run := newMetaRun()
	ns := func(name string) string { return "public/" + name + "-" + run }
	var notes []string
	for _, n := range []string{"affinity", "affinity-anti"} {
		if err := a.Namespaces().CreateNamespace(ns(n)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(what, n string) {
		g, err := a.Namespaces().GetBookieAffinityGroup(ns(n))
		switch {
		case err != nil:
			notes = append(notes, what+": "+err.Error())
		case g == nil:
			notes = append(notes, what+": none")
		default:
			notes = append(notes, fmt.Sprintf("%s: primary %q secondary %q", what, g.BookkeeperAffinityGroupPrimary, g.BookkeeperAffinityGroupSecondary))
		}
	}
	get("before any local policy", "affinity")
	if err := a.Namespaces().SetBookieAffinityGroup(ns("affinity"), utils.BookieAffinityGroupData{
		BookkeeperAffinityGroupPrimary: "rack-a", BookkeeperAffinityGroupSecondary: "rack-b"}); err != nil {
		t.Fatal(err)
	}
	get("set", "affinity")
	if err := a.Namespaces().DeleteBookieAffinityGroup(ns("affinity")); err != nil {
		t.Fatal(err)
	}
	get("deleted", "affinity")
	if err := a.Namespaces().SetNamespaceAntiAffinityGroup(ns("affinity-anti"), "g1"); err != nil {
		t.Fatal(err)
	}
	get("after an anti-affinity group", "affinity-anti")

	base := admin + "/admin/v2/namespaces/"
	for _, c := range []struct{ method, ns, body string }{
		{"POST", "affinity", `{"bookkeeperAffinityGroupPrimary":5}`},
		{"GET", "affinity", ""},
		{"POST", "affinity", `{"unknown":1}`},
		{"GET", "affinity", ""},
		{"POST", "affinity", ``},
		{"GET", "affinity", ""},
		{"POST", "affinity", `null`},
		{"POST", "affinity", `[1]`},
		{"POST", "affinity", `"s"`},
		{"POST", "affinity", `5`},
		{"POST", "affinity", `x`},
		{"POST", "affinity", `{"bookkeeperAffinityGroupPrimary":{}}`},
		{"GET", "affinity-missing", ""},
		{"POST", "affinity-missing", `{}`},
		{"DELETE", "affinity-missing", ""},
	} {
		status, body := propertiesCall(t, c.method, base+ns(c.ns)+"/persistence/bookieAffinity", "", c.body)
		notes = append(notes, fmt.Sprintf("%s <%s> %s -> %d %s", c.method, c.ns, c.body, status, body))
	}
	if err := a.Namespaces().SetBookieAffinityGroup(ns("affinity"), utils.BookieAffinityGroupData{
		BookkeeperAffinityGroupPrimary: "rack-a"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"affinity", "affinity-anti"} {
		if err := a.Namespaces().DeleteNamespace(ns(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Namespaces().CreateNamespace(ns("affinity")); err != nil {
		t.Fatal(err)
	}
	get("created again", "affinity")
	if err := a.Namespaces().DeleteNamespace(ns("affinity")); err != nil {
		t.Fatal(err)
	}
	return notes
}

// TestDifferentialBookieAffinityGroups runs bookieAffinityStory on pulsarsim
// and on a real Pulsar, and compares the notes.
func TestDifferentialBookieAffinityGroups(t *testing.T) {
	sameStoryOnBoth(t, bookieAffinityStory)
}
