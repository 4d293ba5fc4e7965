package scenarios_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// bundleBacklogStory clears the backlog of a namespace's bundle and drops
// a subscription from it, as the per-bundle admin endpoints do: on the
// bundle of a topic with a backlog (owned), on a bundle none of its topics
// fall in (owned by nobody), on a range that is no bundle, and in a
// namespace that does not exist.
func bundleBacklogStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	ns := fmt.Sprintf("public/bundle-backlog-%x", rand.Uint64())
	if status, body := adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+ns, `{"bundles":{"numBundles":4}}`); status != http.StatusNoContent {
		t.Fatalf("create %s: %d %s", ns, status, body)
	}
	topic := ns + "/t"
	tpath := admin + "/admin/v2/persistent/" + topic
	for _, step := range []struct{ method, url, body string }{
		{"PUT", tpath, ""},
		{"PUT", tpath + "/subscription/s", `{"ledgerId":-1,"entryId":-1}`},
		{"PUT", tpath + "/subscription/other", `{"ledgerId":-1,"entryId":-1}`},
		{"POST", admin + "/topics/persistent/" + topic, `{"messages":[{"payload":"YQ=="},{"payload":"Yg=="}]}`},
	} {
		if status, body := adminCall(t, step.method, step.url, step.body); status/100 != 2 {
			t.Fatalf("%s %s: %d %s", step.method, step.url, status, body)
		}
	}
	status, bundle := adminCall(t, "GET", admin+"/lookup/v2/topic/persistent/"+topic+"/bundle", "")
	if status != http.StatusOK {
		t.Fatalf("bundle of %s: %d %s", topic, status, bundle)
	}
	// An empty bundle, and a range inside it that is no bundle: not the
	// topic's, nor that of the namespace's __change_events, which Pulsar
	// creates, and so owns its bundle, as the namespace's first topic loads.
	_, events := adminCall(t, "GET", admin+"/lookup/v2/topic/persistent/"+ns+"/__change_events/bundle", "")
	var empty, inside string
	for _, c := range [][2]string{{"0x00000000_0x40000000", "0x00000000_0x30000000"},
		{"0x40000000_0x80000000", "0x40000000_0x70000000"}, {"0x80000000_0xc0000000", "0x80000000_0xb0000000"}} {
		if c[0] != bundle && c[0] != events {
			empty, inside = c[0], c[1]
			break
		}
	}
	mask := strings.NewReplacer(ns, "<ns>", bundle, "<its bundle>", empty, "<an empty bundle>", inside, "<a range inside it>")
	backlog := func(sub string) string {
		var stats struct {
			Subscriptions map[string]struct {
				MsgBacklog int `json:"msgBacklog"`
			} `json:"subscriptions"`
		}
		status, body := adminCall(t, "GET", tpath+"/stats", "")
		if status != http.StatusOK || json.Unmarshal([]byte(body), &stats) != nil {
			t.Fatalf("stats of %s: %d %s", topic, status, body)
		}
		s, ok := stats.Subscriptions[sub]
		if !ok {
			return "no " + sub
		}
		return fmt.Sprintf("%s backlog %d", sub, s.MsgBacklog)
	}
	var notes []string
	ask := func(path string) {
		status, body := adminCall(t, "POST", admin+"/admin/v2/namespaces/"+path, "")
		if status == http.StatusInternalServerError {
			body = "(a server error)" // Java's stack trace
		}
		notes = append(notes, fmt.Sprintf("POST %s -> %d %s; %s, %s", mask.Replace(path), status, mask.Replace(body),
			backlog("s"), backlog("other")))
	}
	ask(ns + "/" + empty + "/clearBacklog")
	ask(ns + "/" + empty + "/unsubscribe/s")
	ask(ns + "/" + inside + "/clearBacklog")
	ask("public/bundle-backlog-missing/" + empty + "/clearBacklog")
	ask(ns + "/" + bundle + "/clearBacklog/nosuch")
	ask(ns + "/" + bundle + "/clearBacklog/s")
	ask(ns + "/" + bundle + "/unsubscribe/nosuch")
	ask(ns + "/" + bundle + "/unsubscribe/s")
	ask(ns + "/" + bundle + "/clearBacklog")
	return notes
}

// TestDifferentialBundleBacklogAndUnsubscribe compares bundleBacklogStory on
// pulsarsim and on the real broker.
func TestDifferentialBundleBacklogAndUnsubscribe(t *testing.T) {
	sameStoryOnBoth(t, bundleBacklogStory)
}
