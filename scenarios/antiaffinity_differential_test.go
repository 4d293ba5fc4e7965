package scenarios_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// antiAffinityStory sets the anti-affinity group of a namespace and of one
// that does not exist, and looks the group's namespaces up by cluster, as
// the admin API's lookup answers it: without a tenant, with an empty
// group, for a cluster that does not exist, in another letter case, and
// for a tenant that does not exist.
func antiAffinityStory(t *testing.T, _ *scenarios.Target, admin string) []string {
	id := fmt.Sprintf("%x", rand.Uint64())
	ns, ghost, group := "public/affine-"+id, "public/ghost-"+id, "group-"+id
	if status, body := adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+ns, ""); status != http.StatusNoContent {
		t.Fatalf("create %s: %d %s", ns, status, body)
	}
	mask := strings.NewReplacer(ns, "<ns>", ghost, "<ghost>", group, "<group>", strings.ToUpper(group), "<GROUP>", "nosuch-"+id, "<no tenant>")
	var notes []string
	ask := func(method, path, body string) {
		status, out := adminCall(t, method, admin+path, body)
		notes = append(notes, fmt.Sprintf("%s %s %s -> %d %s", method, mask.Replace(path), mask.Replace(body), status, mask.Replace(out)))
	}
	ask("POST", "/admin/v2/namespaces/"+ns+"/antiAffinity", group)
	ask("POST", "/admin/v2/namespaces/"+ghost+"/antiAffinity", group)
	ask("GET", "/admin/v2/namespaces/"+ns+"/antiAffinity", "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/"+group+"?tenant=public", "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/"+strings.ToUpper(group)+"?tenant=public", "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/"+group, "")
	ask("GET", "/admin/v2/namespaces/nocluster/antiAffinity/"+group, "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/%20?tenant=public", "")
	ask("GET", "/admin/v2/namespaces/nocluster/antiAffinity/"+group+"?tenant=public", "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/"+group+"?tenant=nosuch-"+id, "")
	ask("DELETE", "/admin/v2/namespaces/"+ns+"/antiAffinity", "")
	ask("DELETE", "/admin/v2/namespaces/"+ghost+"/antiAffinity", "")
	ask("GET", "/admin/v2/namespaces/standalone/antiAffinity/"+group+"?tenant=public", "")
	return notes
}

// TestDifferentialAntiAffinityNamespaces compares antiAffinityStory on
// pulsarsim and on the real broker.
func TestDifferentialAntiAffinityNamespaces(t *testing.T) {
	sameStoryOnBoth(t, antiAffinityStory)
}
