package scenarios_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The admin API of policies and namespaces, compared request by request
// with a real Pulsar: the same script of GET, POST and DELETE requests, good
// and bad, in a namespace of its own, and the same answers.

// adminStep is one request of the script; {ns} and {topic} are replaced by
// the run's namespace and topic paths.
type adminStep struct{ method, path, body string }

// policyScript is what the differential test asks both brokers.
func policyScript() []adminStep {
	const nsp, tp = "/admin/v2/namespaces/{ns}/", "/admin/v2/persistent/{ns}/t/"
	steps := []adminStep{
		{"PUT", "/admin/v2/namespaces/{ns}", ""},
		{"PUT", "/admin/v2/persistent/{ns}/t", ""},
		{"PUT", tp + "subscription/keep", ""},
		{"GET", nsp + "backlogQuotaMap", ""},
		{"GET", tp + "backlogQuotaMap?applied=true", ""},
	}
	type policy struct {
		nsPath, topicPath, good string
		bad                     []string
	}
	for _, p := range []policy{
		{"maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer", "100", []string{"-1", "", "x"}},
		{"maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription", "1000", []string{"-1", ""}},
		{"maxProducersPerTopic", "maxProducers", "3", []string{"-1", ""}},
		{"maxConsumersPerTopic", "maxConsumers", "4", []string{"-1", ""}},
		{"maxConsumersPerSubscription", "maxConsumersPerSubscription", `"5"`, []string{"-1", ""}},
		{"maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic", "6", []string{"-1", ""}},
		{"retention", "retention", `{"retentionTimeInMinutes":60,"retentionSizeInMB":100}`,
			[]string{`{"retentionTimeInMinutes":-2,"retentionSizeInMB":1}`, `{"retentionTimeInMinutes":0,"retentionSizeInMB":1}`, ""}},
		{"dispatchRate", "dispatchRate", `{"dispatchThrottlingRateInMsg":10,"dispatchThrottlingRateInByte":1000,"ratePeriodInSecond":2}`,
			[]string{`{"dispatchThrottlingRateInMsg":-5}`, "", "x", `{"dispatchThrottlingRateInMsg":"abc"}`}},
		{"subscriptionDispatchRate", "subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":11}`,
			[]string{"", "x", `{"ratePeriodInSecond":[1]}`}},
		{"publishRate", "publishRate", `{"publishThrottlingRateInMsg":12}`,
			[]string{"", `{"publishThrottlingRateInMsg":-7}`, "x", `{"publishThrottlingRateInByte":"many"}`}},
		{"replicatorDispatchRate", "replicatorDispatchRate", `{"dispatchThrottlingRateInMsg":7}`,
			[]string{`{"dispatchThrottlingRateInMsg":-3}`, "", "x"}},
		{"deduplication", "deduplicationEnabled", "true", []string{""}},
		{"delayedDelivery", "delayedDelivery", `{"active":false,"tickTime":500}`, []string{`{"active":true,"tickTime":-1}`, ""}},
	} {
		for _, lvl := range []struct{ path, applied string }{{nsp + p.nsPath, ""}, {tp + p.topicPath, "?applied=true"}} {
			steps = append(steps, adminStep{"GET", lvl.path, ""})
			if lvl.applied != "" {
				steps = append(steps, adminStep{"GET", lvl.path + lvl.applied, ""})
			}
			steps = append(steps, adminStep{"POST", lvl.path, p.good}, adminStep{"GET", lvl.path, ""})
			for _, b := range p.bad {
				steps = append(steps, adminStep{"POST", lvl.path, b}, adminStep{"GET", lvl.path, ""})
			}
			steps = append(steps, adminStep{"DELETE", lvl.path, ""}, adminStep{"GET", lvl.path, ""})
		}
	}
	steps = append(steps,
		// TTL: a body at namespace level, a query parameter at topic level.
		adminStep{"POST", nsp + "messageTTL", "30"}, adminStep{"POST", nsp + "messageTTL", "-1"},
		adminStep{"GET", nsp + "messageTTL", ""}, adminStep{"POST", tp + "messageTTL?messageTTL=0", ""},
		adminStep{"GET", tp + "messageTTL", ""}, adminStep{"GET", tp + "messageTTL?applied=true", ""},
		adminStep{"POST", tp + "messageTTL?messageTTL=-1", ""}, adminStep{"POST", tp + "messageTTL", ""},
		adminStep{"GET", tp + "messageTTL", ""},
		// Backlog quotas by type, and their limits against retention.
		adminStep{"POST", nsp + "backlogQuota", `{"limit": "10240", "policy": "producer_request_hold"}`},
		adminStep{"POST", nsp + "backlogQuota?backlogQuotaType=message_age", `{"limitTime":100,"policy":"consumer_backlog_eviction"}`},
		adminStep{"POST", nsp + "backlogQuota", `{"limitSize":5,"policy":"nope"}`},
		adminStep{"POST", nsp + "backlogQuota?backlogQuotaType=nope", `{"limitSize":5,"policy":"producer_exception"}`},
		adminStep{"GET", nsp + "backlogQuotaMap", ""},
		adminStep{"POST", nsp + "retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":1}`},
		adminStep{"DELETE", nsp + "backlogQuota", ""},
		adminStep{"POST", nsp + "retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":1}`},
		adminStep{"POST", nsp + "backlogQuota", `{"limitSize":2097152,"policy":"producer_exception"}`},
		adminStep{"GET", tp + "backlogQuotaMap?applied=true", ""},
		adminStep{"POST", tp + "retention", `{"retentionTimeInMinutes":2,"retentionSizeInMB":2}`},
		adminStep{"POST", tp + "backlogQuota", `{"limitSize":3145728,"policy":"producer_exception"}`},
		adminStep{"POST", tp + "backlogQuota?backlogQuotaType=message_age", `{"limitTime":60,"policy":"producer_exception"}`},
		adminStep{"POST", tp + "backlogQuota", `{"limitSize":5}`},
		adminStep{"POST", tp + "backlogQuota", `{"limitSize":1024,"policy":"producer_exception"}`},
		adminStep{"GET", tp + "backlogQuotaMap", ""},
		adminStep{"POST", tp + "backlogQuota", ""},
		adminStep{"GET", tp + "backlogQuotaMap", ""},
		adminStep{"GET", "/admin/v2/namespaces/{ns}", ""},
		// One subscription's dispatch rate: set, unchanged by a rate without
		// a limit, applied over the topic's subscription rate, removed.
		adminStep{"GET", tp + "s1/dispatchRate", ""}, adminStep{"GET", tp + "s1/dispatchRate?applied=true", ""},
		adminStep{"POST", tp + "s1/dispatchRate", `{"dispatchThrottlingRateInMsg":7}`},
		adminStep{"GET", tp + "s1/dispatchRate", ""}, adminStep{"GET", tp + "s1/dispatchRate?applied=true", ""},
		adminStep{"POST", tp + "s1/dispatchRate", `{"dispatchThrottlingRateInMsg":-3}`}, adminStep{"GET", tp + "s1/dispatchRate", ""},
		adminStep{"POST", tp + "s1/dispatchRate", `{"dispatchThrottlingRateInMsg":0}`}, adminStep{"GET", tp + "s1/dispatchRate", ""},
		adminStep{"POST", tp + "s1/dispatchRate", ""}, adminStep{"GET", tp + "s1/dispatchRate", ""},
		adminStep{"POST", tp + "s1/dispatchRate", "x"},
		adminStep{"POST", tp + "s1/dispatchRate", `{"dispatchThrottlingRateInMsg":"abc"}`},
		adminStep{"POST", tp + "s1/dispatchRate", `{"dispatchThrottlingRateInMsg":-3,"dispatchThrottlingRateInByte":100,"ratePeriodInSecond":-1}`},
		adminStep{"GET", tp + "s1/dispatchRate", ""},
		adminStep{"POST", tp + "subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":11}`},
		adminStep{"GET", tp + "s2/dispatchRate?applied=true", ""},
		adminStep{"DELETE", tp + "s1/dispatchRate", ""}, adminStep{"GET", tp + "s1/dispatchRate", ""},
		adminStep{"GET", tp + "s1/dispatchRate?applied=true", ""},
		adminStep{"DELETE", tp + "subscriptionDispatchRate", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}/none/s1/dispatchRate", ""},
		adminStep{"POST", "/admin/v2/persistent/{ns}/none/s1/dispatchRate", `{"dispatchThrottlingRateInMsg":7}`},
		adminStep{"DELETE", "/admin/v2/persistent/{ns}/none/s1/dispatchRate", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}/t-partition-0/s1/dispatchRate", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none/t/s1/dispatchRate", ""},
		adminStep{"DELETE", tp + "subscription/dispatchRate", ""},
		adminStep{"PUT", tp + "subscription/s3", ""}, adminStep{"POST", tp + "s3/dispatchRate", `{"dispatchThrottlingRateInByte":5000}`},
		adminStep{"DELETE", tp + "subscription/s3", ""}, adminStep{"GET", tp + "s3/dispatchRate", ""},
		// Topics that do not exist, partitions, namespaces that do not exist.
		adminStep{"GET", "/admin/v2/persistent/{ns}/none/maxProducers", ""},
		adminStep{"POST", "/admin/v2/persistent/{ns}/none/maxProducers", "-1"},
		adminStep{"POST", "/admin/v2/persistent/{ns}/t-partition-0/maxProducers", "3"},
		adminStep{"POST", "/admin/v2/namespaces/{ns}-none/maxProducersPerTopic", "3"},
		adminStep{"POST", "/admin/v2/namespaces/{ns}-none/maxProducersPerTopic", "-1"},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none/t/maxProducers", ""},
		adminStep{"PUT", "/admin/v2/persistent/{ns}-none/t", ""},
		adminStep{"PUT", "/admin/v2/persistent/{ns}-none/p/partitions", "2"},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none/partitioned", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none/t/stats", ""},
		adminStep{"GET", "/admin/v2/persistent/{ns}-none/t/subscriptions", ""},
		adminStep{"PUT", "/admin/v2/persistent/{ns}-none/t/subscription/s", ""},
		adminStep{"DELETE", "/admin/v2/persistent/{ns}-none/t", ""},
		adminStep{"GET", "/lookup/v2/topic/persistent/{ns}-none/t", ""},
		adminStep{"GET", "/admin/v2/namespaces/{ns}-none", ""},
	)
	return steps
}

// nsDocKeys are the keys of a namespace's policies document compared (a
// real Pulsar writes many more that pulsarsim does not serve).
var nsDocKeys = []string{"backlog_quota_map", "topicDispatchRate", "clusterDispatchRate", "subscriptionDispatchRate",
	"replicatorDispatchRate",
	"publishMaxMessageRate", "message_ttl_in_seconds", "retention_policies", "deduplicationEnabled",
	"delayed_delivery_policies", "max_producers_per_topic", "max_consumers_per_topic", "replication_clusters",
	"max_consumers_per_subscription", "max_unacked_messages_per_consumer", "max_unacked_messages_per_subscription",
	"max_subscriptions_per_topic",
	// storedpolicies_differential_test.go's
	"offload_policies", "offload_threshold", "offload_threshold_in_seconds", "persistence", "clusterSubscribeRate",
	"schema_auto_update_compatibility_strategy", "encryption_required", "subscription_auth_mode",
	"inactive_topic_policies", "auth_policies"}

// runAdminScript sends the script to the admin API at base and describes
// each answer: the status, and the body as canonical JSON (or "no body")
// for a success, Pulsar's reason for a refusal. A 400's reason is left out:
// Pulsar answers a body it cannot parse with its JSON parser's own words, in
// plain text.
func runAdminScript(t *testing.T, base, ns string) []string {
	return runAdminSteps(t, base, ns, policyScript())
}

// runAdminSteps sends steps to the admin API at base and describes each
// answer, as runAdminScript does.
func runAdminSteps(t *testing.T, base, ns string, steps []adminStep) []string {
	return runAdminStepsReasons(t, base, ns, steps, false)
}

// runAdminStepsReasons is runAdminSteps; with badRequestReasons, a 400's
// reason is kept too when it is one (a JSON reason that does not report an
// unparsable or empty body: Pulsar answers those with Jersey's or its
// parser's words, in plain text).
func runAdminStepsReasons(t *testing.T, base, ns string, steps []adminStep, badRequestReasons bool) []string {
	var out []string
	for _, s := range steps {
		path := strings.ReplaceAll(s.path, "{ns}", ns)
		req, err := http.NewRequest(s.method, base+path, bytes.NewBufferString(s.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		line := fmt.Sprintf("%s %s %s -> %d", s.method, s.path, s.body, resp.StatusCode)
		var r400 struct{ Reason string }
		switch {
		case badRequestReasons && resp.StatusCode == http.StatusBadRequest && json.Unmarshal(body, &r400) == nil &&
			r400.Reason != "" && !strings.HasPrefix(r400.Reason, "Invalid JSON body") &&
			r400.Reason != "The request entity cannot be empty.":
			line += " " + strings.ReplaceAll(r400.Reason, ns, "{ns}")
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode >= 500:
		case resp.StatusCode >= 300:
			var r struct{ Reason string }
			switch {
			case json.Unmarshal(body, &r) != nil && resp.StatusCode == http.StatusNotFound,
				strings.HasPrefix(r.Reason, "Not found: "):
				// Jersey's HTML page for a path or parameter it cannot
				// route, which pulsarsim answers in JSON.
				line += " (no route)"
			case r.Reason == "":
				line += " (not JSON)"
			default:
				line += " " + strings.ReplaceAll(r.Reason, ns, "{ns}")
			}
		case len(bytes.TrimSpace(body)) == 0:
			line += " no body"
		default:
			line += " " + canonicalJSON(t, body, path == "/admin/v2/namespaces/"+ns)
		}
		out = append(out, line)
	}
	return out
}

// canonicalJSON re-encodes a JSON body with sorted keys; for a namespace's
// policies document, only nsDocKeys.
func canonicalJSON(t *testing.T, body []byte, nsDoc bool) string {
	if nsDoc {
		return canonicalKeys(t, body, nsDocKeys)
	}
	return canonicalKeys(t, body, nil)
}

// canonicalKeys re-encodes a JSON body with sorted keys; for an object,
// only keys when they are given.
func canonicalKeys(t *testing.T, body []byte, keys []string) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "(not JSON) " + string(body)
	}
	if m, ok := v.(map[string]any); ok && keys != nil {
		kept := map[string]any{}
		for _, k := range keys {
			if x, ok := m[k]; ok {
				kept[k] = x
			}
		}
		v = kept
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDifferentialPolicyEndpoints sends the same script of policy and
// namespace requests to both brokers and compares every answer.
func TestDifferentialPolicyEndpoints(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	ns := "public/" + strings.TrimPrefix(scenarios.RemoteTarget(t, "", "").Topic("pol"), "persistent://public/default/")
	got := runAdminScript(t, sim.Sim.AdminURL(), ns)
	want := runAdminScript(t, realAdmin, ns)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("%d answers, the same on both", len(got))
}
