package scenarios_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// What the admin API answers where the request names something that is not
// there or not of its kind, and where its body does not parse, compared
// with Pulsar 4.0.8: the status, the reason (Pulsar words a missing
// namespace differently by endpoint) and, for a body Jackson cannot read,
// Jersey's plain-text message with its location. Jackson's "(through
// reference chain: ...)" suffix, which names Pulsar's Java classes, is cut
// from the real broker's answers: pulsarsim leaves it out.

// rawAdminCall sends a request and returns its status, content type and
// body.
func rawAdminCall(t *testing.T, method, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return resp.StatusCode, ctype, strings.TrimSpace(string(out))
}

// missingTargetsStory asks for things that are not there: a namespace's
// policies updated and the namespace deleted, the partitions of a topic
// nobody created, a partitioned topic terminated, the last message id of
// a non-persistent topic.
func missingTargetsStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	ns := fmt.Sprintf("public/missing-%x", rand.Uint64())
	local := strings.TrimPrefix(tg.Topic("answers-missing"), "persistent://")
	parted := strings.TrimPrefix(tg.Topic("answers-parted"), "persistent://")
	np := "non-persistent://" + strings.TrimPrefix(tg.Topic("answers-np"), "persistent://")
	mask := strings.NewReplacer(ns, "<ns>", local, "<topic>", parted, "<partitioned>",
		strings.TrimPrefix(np, "non-persistent://"), "<np>")
	var notes []string
	ask := func(method, path, body string) {
		status, _, out := rawAdminCall(t, method, admin+path, body)
		notes = append(notes, fmt.Sprintf("%s %s %s -> %d %s", method, mask.Replace(path), body, status, mask.Replace(out)))
	}
	nsPath := "/admin/v2/namespaces/" + ns
	for _, p := range []struct{ policy, body string }{
		{"messageTTL", "10"},
		{"retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":1}`},
		{"maxProducersPerTopic", "3"},
		{"maxSubscriptionsPerTopic", "3"},
		{"replicatorDispatchRate", "{}"},
		{"delayedDelivery", `{"active":true,"tickTime":1000}`},
		{"backlogQuota", `{"limitSize":10,"limitTime":-1,"policy":"producer_request_hold"}`},
		{"deduplication", "true"},
	} {
		ask("POST", nsPath+"/"+p.policy, p.body)
		ask("DELETE", nsPath+"/"+p.policy, "")
	}
	ask("DELETE", nsPath, "")

	ask("GET", "/admin/v2/persistent/"+local+"/partitions", "")
	ask("GET", "/admin/v2/non-persistent/"+local+"/partitions", "")
	ask("PUT", "/admin/v2/persistent/"+parted+"/partitions", "2")
	ask("GET", "/admin/v2/persistent/"+parted+"-partition-1/partitions", "")
	ask("GET", "/admin/v2/persistent/"+parted+"-partition-2/partitions", "")
	ask("POST", "/admin/v2/persistent/"+parted+"/terminate", "")

	// A non-persistent topic exists while a consumer holds it.
	c, err := tg.Client().Subscribe(pulsar.ConsumerOptions{Topic: np, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	awaitPermits(t, admin, np, "s")
	ask("GET", "/admin/v2/non-persistent/"+strings.TrimPrefix(np, "non-persistent://")+"/lastMessageId", "")
	return notes
}

// TestDifferentialAdminAnswersForMissingTargets compares missingTargetsStory
// on pulsarsim and on the real broker.
func TestDifferentialAdminAnswersForMissingTargets(t *testing.T) {
	sameStoryOnBoth(t, missingTargetsStory)
}

// badBodiesStory sends bodies that do not parse, or hold a value of the
// wrong type, to a namespace's policies, a partitioned topic's creation,
// a tenant's creation and a subscription's reset.
func badBodiesStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	var notes []string
	topic := strings.TrimPrefix(tg.Topic("answers-bodies"), "persistent://")
	if status, body := adminCall(t, "PUT", admin+"/admin/v2/persistent/"+topic, ""); status != http.StatusNoContent {
		t.Fatalf("create %s: %d %s", topic, status, body)
	}
	ns := "/admin/v2/namespaces/public/default/"
	for _, c := range []struct{ method, path, body string }{
		{"POST", ns + "messageTTL", "ten"},
		{"POST", ns + "messageTTL", `"ten"`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes":"x"}`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes":1`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes":,}`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes":#}`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes" 1}`},
		{"POST", ns + "retention", `{"retentionTimeInMinutes":1 "retentionSizeInMB":2}`},
		{"POST", ns + "dispatchRate", `{"dispatchThrottlingRateInMsg":"a"}`},
		{"POST", ns + "deduplication", "maybe"},
		{"POST", ns + "deduplication", `"maybe"`},
		{"PUT", "/admin/v2/persistent/" + topic + "-parted/partitions", "abc"},
		{"PUT", "/admin/v2/tenants/answers-bad-tenant", `{"allowedClusters":"standalone"}`},
		{"PUT", "/admin/v2/persistent/" + topic + "/subscription/s", `{"ledgerId":"x"}`},
	} {
		status, ctype, out := rawAdminCall(t, c.method, admin+c.path, c.body)
		if i := strings.Index(out, " (through reference chain:"); i >= 0 {
			out = out[:i]
		}
		out = strings.ReplaceAll(out, "java.util.HashSet", "<a Java collection>")
		out = strings.ReplaceAll(out, "java.util.ArrayList", "<a Java collection>")
		notes = append(notes, fmt.Sprintf("%s %s %s -> %d %s %s", c.method, strings.ReplaceAll(c.path, topic, "<topic>"),
			c.body, status, ctype, out))
	}
	return notes
}

// TestDifferentialAdminBodyErrorsAreJacksons compares badBodiesStory on
// pulsarsim and on the real broker.
func TestDifferentialAdminBodyErrorsAreJacksons(t *testing.T) {
	sameStoryOnBoth(t, badBodiesStory)
}

// A body that does not parse is answered in Jackson's words, never Go's,
// on pulsarsim alone (the differential test above pins the words).
func TestAdminBodyErrorsNameNoGoType(t *testing.T) {
	sim := scenarios.SimTarget(t)
	for _, body := range []string{"ten", `{"retentionTimeInMinutes":"x"}`, `{"retentionTimeInMinutes":1`, "[1,2]"} {
		status, ctype, out := rawAdminCall(t, "POST", sim.Sim.AdminURL()+"/admin/v2/namespaces/public/default/retention", body)
		if status != http.StatusBadRequest || ctype != "text/plain" {
			t.Errorf("%s: %d %s %q, want a 400 in plain text", body, status, ctype, out)
		}
		for _, goism := range []string{"Go struct", "strconv", "json:", "invalid character"} {
			if strings.Contains(out, goism) {
				t.Errorf("%s: %q names Go's %q", body, out, goism)
			}
		}
	}
}
