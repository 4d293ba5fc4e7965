package admin_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A subscription's own dispatch rate is stored on its topic, read back
// alone or as applied (falling back to the topic's subscription rate), and
// removed; a rate without a limit changes nothing.
func TestSubscriptionDispatchRateEndpoint(t *testing.T) {
	b, _, base := startAdmin(t)
	const topic = "persistent://public/default/sub-rate"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	const path = "/admin/v2/persistent/public/default/sub-rate/s1/dispatchRate"
	expect := func(method, path, body string, status int, want string) {
		t.Helper()
		got, out := call(t, base, method, path, body)
		if got != status || string(out) != want {
			t.Fatalf("%s %s %s: %d %s, want %d %s", method, path, body, got, out, status, want)
		}
	}
	expect("GET", path, "", http.StatusOK, "")
	expect("GET", path+"?applied=true", "", http.StatusOK,
		`{"dispatchThrottlingRateInMsg":0,"dispatchThrottlingRateInByte":0,"relativeToPublishRate":false,"ratePeriodInSecond":1}`)
	expect("POST", path, `{"dispatchThrottlingRateInMsg":7}`, http.StatusNoContent, "")
	want := `{"dispatchThrottlingRateInMsg":7,"dispatchThrottlingRateInByte":0,"relativeToPublishRate":false,"ratePeriodInSecond":0}`
	expect("GET", path, "", http.StatusOK, want)
	own, err := b.TopicPolicies(topic)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]broker.DispatchRate{"s1": {Messages: 7}}, own.SubscriptionDispatchRates); diff != "" {
		t.Fatalf("the topic's policies (-want +got):\n%s", diff)
	}
	for _, unchanged := range []string{`{"dispatchThrottlingRateInMsg":-3}`, `{"dispatchThrottlingRateInMsg":0}`, "", "null"} {
		expect("POST", path, unchanged, http.StatusNoContent, "")
		expect("GET", path, "", http.StatusOK, want)
	}
	expect("POST", path, "x", http.StatusBadRequest, "Unrecognized token 'x': was expecting (JSON String, Number, Array, "+
		"Object or token 'null', 'true' or 'false')\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 2]")

	// Another subscription reads the topic's subscription rate as applied.
	expect("POST", "/admin/v2/persistent/public/default/sub-rate/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":11}`, http.StatusNoContent, "")
	expect("GET", "/admin/v2/persistent/public/default/sub-rate/s2/dispatchRate?applied=true", "", http.StatusOK,
		`{"dispatchThrottlingRateInMsg":11,"dispatchThrottlingRateInByte":0,"relativeToPublishRate":false,"ratePeriodInSecond":0}`)
	expect("DELETE", path, "", http.StatusNoContent, "")
	expect("GET", path, "", http.StatusOK, "")
	if own, _ := b.TopicPolicies(topic); own.SubscriptionDispatchRates != nil {
		t.Fatalf("after the DELETE the topic still holds %v", own.SubscriptionDispatchRates)
	}

	// The topic is checked as for every topic policy.
	expect("GET", "/admin/v2/persistent/public/default/none/s1/dispatchRate", "", http.StatusNotFound,
		`{"reason":"Topic persistent://public/default/none not found"}`)
	expect("POST", "/admin/v2/persistent/public/default/sub-rate-partition-0/s1/dispatchRate", `{"dispatchThrottlingRateInMsg":7}`,
		http.StatusPreconditionFailed, `{"reason":"Not allowed to set/get topic policy for a partition"}`)
}

// The subscription routes keep their paths beside the per-subscription
// policy route, which shares their shape.
func TestSubscriptionRoutesBesideTheSubscriptionPolicyRoute(t *testing.T) {
	b, _, base := startAdmin(t)
	const topic = "persistent://public/default/sub-routes"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	if status, out := call(t, base, "PUT", "/admin/v2/persistent/public/default/sub-routes/subscription/dispatchRate", ""); status != http.StatusNoContent {
		t.Fatalf("creating a subscription named dispatchRate: %d %s", status, out)
	}
	if status, out := call(t, base, "GET", "/admin/v2/persistent/public/default/sub-routes/subscription/s", ""); status != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a subscription route: %d %s, want 405", status, out)
	}
	if status, out := call(t, base, "GET", "/admin/v2/persistent/public/default/sub-routes/s/nothing", ""); status != http.StatusNotFound {
		t.Fatalf("GET of no route: %d %s, want 404", status, out)
	}
	if status, out := call(t, base, "DELETE", "/admin/v2/persistent/public/default/sub-routes/subscription/dispatchRate", ""); status != http.StatusNoContent {
		t.Fatalf("deleting the subscription named dispatchRate: %d %s", status, out)
	}
	if st, err := b.TopicStats(topic); err != nil || len(st.Subscriptions) != 0 {
		t.Fatalf("subscriptions left: %v, %v", st.Subscriptions, err)
	}
}
