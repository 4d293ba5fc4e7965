package scenarios_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The broker's dynamic configuration, internal configuration and stats,
// and the resource quotas, compared with a real Pulsar.

// brokerConfigScript is what the comparison asks both brokers. The
// settings it changes do nothing a standalone's other tests see, and it
// removes them again.
func brokerConfigScript() []metaStep {
	const c = "/admin/v2/brokers/configuration"
	const q = "/admin/v2/resource-quotas"
	return []metaStep{
		{"GET", c, ""},
		{"GET", c + "/values", ""},
		{"POST", c + "/clientLibraryVersionCheckEnabled/false", ""},
		{"POST", c + "/brokerShutdownTimeoutMs/abc", ""},
		{"POST", c + "/nonexistentKey/5", ""},
		{"POST", c + "/clusterName/foo", ""},
		{"POST", c + "/loadManagerClassName/foo.Bar", ""},
		{"GET", c + "/values", ""},
		{"DELETE", c + "/clientLibraryVersionCheckEnabled", ""},
		{"DELETE", c + "/maxTopicsPerNamespace", ""},
		{"DELETE", c + "/nonexistentKey", ""},
		{"DELETE", c + "/clusterName", ""},
		{"GET", c + "/values", ""},
		{"DELETE", c + "/brokerShutdownTimeoutMs", ""},
		{"GET", c + "/values", ""},
		{"GET", c + "/clusterName", ""},
		{"POST", c, ""},
		{"GET", "/admin/v2/broker-stats/allocator-stats/nope", ""},
		{"GET", "/admin/v2/broker-stats/load-report", ""},
		{"GET", "/admin/v2/broker-stats/nope", ""},
		{"GET", "/status.html", ""},
		// Resource quotas: the default, and a bundle's.
		{"GET", q, ""},
		{"GET", q + "/public/default/0x00000000_0x40000000", ""},
		{"GET", q, ""},
		{"POST", q, `x`},
		{"PUT", "/admin/v2/namespaces/public/q-{run}", ""},
		{"GET", q + "/public/q-{run}/0x00000000_0x40000000", ""},
		{"POST", q + "/public/q-{run}/0x00000000_0x40000000", `{"msgRateIn":1,"msgRateOut":2,"bandwidthIn":3,"bandwidthOut":4,"memory":5,"dynamic":false}`},
		{"GET", q + "/public/q-{run}/0x00000000_0x40000000", ""},
		{"GET", q + "/public/q-{run}/0x40000000_0x80000000", ""},
		{"GET", q + "/public/q-{run}/0x00000000_0x10000000", ""},
		{"GET", q + "/public/q-{run}/0x00000000_0xffffffff", ""},
		{"GET", q + "/public/q-{run}/bad", ""},
		{"GET", q + "/public/none-{run}/0x00000000_0x40000000", ""},
		{"DELETE", q + "/public/q-{run}/0x00000000_0x40000000", ""},
		{"GET", q + "/public/q-{run}/0x00000000_0x40000000", ""},
		{"DELETE", "/admin/v2/namespaces/public/q-{run}", ""},
	}
}

// TestDifferentialBrokerConfiguration sends the same script of dynamic
// configuration, broker stats and resource quota requests to both brokers
// and compares every answer; then the shapes of the answers whose values
// are a JVM's.
func TestDifferentialBrokerConfiguration(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	run := newMetaRun()
	// A persistent topic loaded on each, for the per-topic stats.
	for _, admin := range []string{sim.Sim.AdminURL(), realAdmin} {
		topic := admin + "/admin/v2/persistent/public/default/stats-loaded-" + run
		adminCall(t, "PUT", topic, "")
		t.Cleanup(func() { adminCall(t, "DELETE", topic, "") })
	}
	got := runMetaSteps(t, sim.Sim.AdminURL(), run, brokerConfigScript())
	want := runMetaSteps(t, realAdmin, run, brokerConfigScript())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	gotShapes, wantShapes := brokerStatsShapes(t, sim.Sim.AdminURL()), brokerStatsShapes(t, realAdmin)
	if diff := cmp.Diff(wantShapes, gotShapes); diff != "" {
		t.Fatalf("the shapes differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("%d answers and %d shapes, the same on both", len(got), len(gotShapes))
}

// brokerStatsShapes describes the answers whose values are the broker's
// own (a JVM's memory pools and allocators, its metadata store's URL): the
// JSON type, and the keys that both brokers write.
func brokerStatsShapes(t *testing.T, base string) []string {
	get := func(path string) any {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		return v
	}
	keys := func(v any) string {
		m, ok := v.(map[string]any)
		if !ok {
			return "not an object"
		}
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	var out []string
	out = append(out, "internal-configuration "+keys(get("/admin/v2/brokers/internal-configuration")))
	out = append(out, "allocator default "+keys(get("/admin/v2/broker-stats/allocator-stats/default")))
	out = append(out, "allocator ml-cache "+keys(get("/admin/v2/broker-stats/allocator-stats/ml-cache")))
	_, isObject := get("/admin/v2/broker-stats/topics").(map[string]any)
	out = append(out, "topics an object: "+boolWord(isObject))
	ops := map[string]bool{}
	for _, topics := range get("/admin/v2/broker-stats/bookieops").(map[string]any) {
		for _, counters := range topics.(map[string]any) {
			ops[keys(counters)] = true
		}
	}
	out = append(out, "bookieops counters "+strings.Join(slices.Sorted(maps.Keys(ops)), " | "))
	for _, list := range []string{"mbeans", "metrics"} {
		entries, ok := get("/admin/v2/broker-stats/" + list).([]any)
		shape := "a list of {dimensions, metrics}"
		for _, e := range entries {
			if keys(e) != "dimensions,metrics" {
				shape = "an entry " + keys(e)
			}
		}
		if !ok {
			shape = "not a list"
		}
		out = append(out, list+" "+shape)
	}
	var named []string
	for _, e := range get("/admin/v2/broker-stats/metrics").([]any) {
		dims, _ := e.(map[string]any)["dimensions"].(map[string]any)
		if name, ok := dims["metric"].(string); ok && name != "jvm_metrics" {
			named = append(named, name+" of "+keys(dims))
		}
	}
	slices.Sort(named)
	return append(out, named...)
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestDifferentialDynamicAutoTopicCreation turns topic creation on first
// use off at run time, then on again, and tells what a pulsar-client-go
// producer of a new topic meets each time: the setting applies to the
// running broker. (A real broker applies a dynamic setting when its
// metadata store tells it, a few milliseconds later: the story waits for
// the runtime configuration to show it.)
func TestDifferentialDynamicAutoTopicCreation(t *testing.T) {
	sameStoryOnBoth(t, func(t *testing.T, tg *scenarios.Target, admin string) []string {
		const c = "/admin/v2/brokers/configuration"
		t.Cleanup(func() { adminCall(t, "DELETE", admin+c+"/allowAutoTopicCreation", "") })
		client := tg.Client()
		var story []string
		produce := func(name string) string {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: tg.Topic(name), SendTimeout: 5 * time.Second})
			if err != nil {
				if errors.Is(err, pulsar.ErrTopicNotfound) || strings.Contains(err.Error(), "TopicNotFound") {
					return "topic not found"
				}
				return "failed: " + err.Error()
			}
			p.Close()
			return "created"
		}
		for _, step := range []struct{ method, path, want string }{
			{"POST", c + "/allowAutoTopicCreation/false", "false"},
			{"DELETE", c + "/allowAutoTopicCreation", "true"},
		} {
			st, body := adminCall(t, step.method, admin+step.path, "")
			story = append(story, step.method+" "+step.path+" -> "+http.StatusText(st)+" "+body)
			waitRuntime(t, admin, "allowAutoTopicCreation", step.want)
			story = append(story, "a producer of a new topic: "+produce("dyn-"+step.want))
		}
		return story
	})
}

// waitRuntime waits up to 10 s for the broker's runtime configuration to
// show value for name.
func waitRuntime(t *testing.T, admin, name, value string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := adminCall(t, "GET", admin+"/admin/v2/brokers/configuration/runtime", "")
		var conf map[string]string
		if json.Unmarshal([]byte(body), &conf) == nil && conf[name] == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s", name, value)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDifferentialUnknownRoutes sends paths of three segments (and topic
// paths) whose first segment is no topic domain: both brokers answer them
// as unknown routes, not as namespaces that do not exist, and a topic
// domain's own paths still reach the namespace.
func TestDifferentialUnknownRoutes(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	var steps []metaStep
	for _, p := range []string{"foo/public/default", "brokers/a/b", "clusters/a/b", "tenants/a/b", "broker-stats/a/b",
		"resource-quotas/a/b", "foo/public/default/t/stats", "clusters/standalone/x", "foo/public/default/partitioned",
		"persistent/public/none-{run}", "non-persistent/public/none-{run}", "namespaces/public/none-{run}"} {
		steps = append(steps, metaStep{"GET", "/admin/v2/" + p, ""})
	}
	steps = append(steps, metaStep{"PUT", "/admin/v2/foo/public/default/t", ""},
		metaStep{"DELETE", "/admin/v2/brokers/public/default/t", ""})
	run := newMetaRun()
	got := runMetaSteps(t, sim.Sim.AdminURL(), run, steps)
	want := runMetaSteps(t, realAdmin, run, steps)
	sameOnBoth(t, want, got)
}

// dynamicPolicySettings are settings a standalone applies at run time as
// the broker-level defaults of topic policies, with values large enough to
// throttle nothing else the oracle runs.
var dynamicPolicySettings = [][2]string{
	{"dispatchThrottlingRatePerTopicInMsg", "70000"},
	{"dispatchThrottlingRatePerTopicInByte", "700000000"},
	{"dispatchThrottlingRateRelativeToPublishRate", "true"},
	{"dispatchThrottlingRatePerSubscriptionInMsg", "50000"},
	{"dispatchThrottlingRatePerReplicatorInByte", "900000000"},
	{"maxPublishRatePerTopicInMessages", "110000"},
	{"subscribeThrottlingRatePerConsumer", "3000"},
	{"subscribeRatePeriodPerConsumerInSecond", "9"},
	{"brokerDeleteInactiveTopicsEnabled", "false"},
	{"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", "77"},
	{"brokerDeleteInactiveTopicsMode", "delete_when_subscriptions_caught_up"},
	{"defaultNumberOfNamespaceBundles", "6"},
	{"isAllowAutoUpdateSchemaEnabled", "false"},
}

// TestDifferentialDynamicBrokerPolicies sets, at run time, the settings
// that are the broker-level defaults of topic policies, the default bundle
// count and auto-update of schemas, and compares what both brokers then
// apply: the applied policies of a topic loaded before and of one created
// after, the bundles of a namespace created after, whether a namespace
// created before or after lets a producer register a new schema; then the
// same once the settings are removed again.
func TestDifferentialDynamicBrokerPolicies(t *testing.T) {
	sameStoryOnBoth(t, func(t *testing.T, tg *scenarios.Target, admin string) []string {
		const c = "/admin/v2/brokers/configuration"
		t.Cleanup(func() {
			for _, kv := range dynamicPolicySettings {
				adminCall(t, "DELETE", admin+c+"/"+kv[0], "")
			}
		})
		client := tg.Client()
		suffix := strings.TrimPrefix(tg.Topic("dyn"), "persistent://public/default/dyn")
		var story []string
		get := func(what, path string) {
			st, body := adminCall(t, "GET", admin+path, "")
			story = append(story, what+": "+http.StatusText(st)+" "+canonicalKeys(t, []byte(body), nil))
		}
		applied := func(when, topic string) {
			path := "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
			for _, p := range []string{"dispatchRate", "subscriptionDispatchRate", "replicatorDispatchRate",
				"publishRate", "subscribeRate", "inactiveTopicPolicies"} {
				get(when+" "+p, path+"/"+p+"?applied=true")
			}
		}
		produce := func(topic string, schema pulsar.Schema) string {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: schema, SendTimeout: 5 * time.Second})
			if err != nil {
				return "refused"
			}
			p.Close()
			return "created"
		}
		schemaStory := func(when, topic string) {
			a := produce(topic, pulsar.NewJSONSchema(`{"type":"record","name":"R","fields":[{"name":"A","type":"int"}]}`, nil))
			b := produce(topic, pulsar.NewJSONSchema(`{"type":"record","name":"R","fields":[{"name":"A","type":"int"},{"name":"B","type":["null","string"],"default":null}]}`, nil))
			story = append(story, when+": a first schema "+a+", a second "+b)
		}
		loaded := tg.Topic("dyn-loaded")
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: loaded})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		nsBefore := "public/dyn-before" + suffix
		adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+nsBefore, "")
		for _, kv := range dynamicPolicySettings {
			st, _ := adminCall(t, "POST", admin+c+"/"+kv[0]+"/"+kv[1], "")
			story = append(story, "set "+kv[0]+": "+http.StatusText(st))
		}
		last := dynamicPolicySettings[len(dynamicPolicySettings)-1]
		waitRuntime(t, admin, last[0], last[1])
		applied("loaded before", loaded)
		created := tg.Topic("dyn-created")
		adminCall(t, "PUT", admin+"/admin/v2/persistent/"+strings.TrimPrefix(created, "persistent://"), "")
		applied("created after", created)
		nsAfter := "public/dyn-after" + suffix
		adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+nsAfter, "")
		get("bundles of a namespace created after", "/admin/v2/namespaces/"+nsAfter+"/bundles")
		get("auto update of a namespace created before", "/admin/v2/namespaces/"+nsBefore+"/isAllowAutoUpdateSchema")
		get("auto update of a namespace created after", "/admin/v2/namespaces/"+nsAfter+"/isAllowAutoUpdateSchema")
		schemaStory("namespace created before", "persistent://"+nsBefore+"/schema")
		schemaStory("namespace created after", "persistent://"+nsAfter+"/schema")
		for _, kv := range dynamicPolicySettings {
			adminCall(t, "DELETE", admin+c+"/"+kv[0], "")
		}
		waitRuntime(t, admin, last[0], "true")
		applied("after removing them", loaded)
		nsLast := "public/dyn-last" + suffix
		adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+nsLast, "")
		get("bundles once removed", "/admin/v2/namespaces/"+nsLast+"/bundles")
		return story
	})
}
