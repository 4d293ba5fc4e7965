package scenarios_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// TestSubscriptionPermissionsAndPrefixModeGateSubscribe checks, through
// pulsar-client-go with authorization on, a namespace's subscription
// permissions and its Prefix subscription auth mode as Pulsar 4.0.8
// applies them: a subscription granted to other roles only is refused, in
// Prefix mode a subscription not named after the role is refused, and a
// super-user may use any.
func TestSubscriptionPermissionsAndPrefixModeGateSubscribe(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	admin := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequest(method, b.AdminURL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+b.Token("admin"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	admin("PUT", "/admin/v2/namespaces/public/gated",
		`{"auth_policies":{"namespace_auth":{"alice":["consume"],"bob":["consume"]}}}`)
	admin("POST", "/admin/v2/namespaces/public/gated/permissions/subscription/audit", `["bob"]`)
	const topic = "persistent://public/gated/t"
	subscribe := func(role, sub string) error {
		c := b.Client(func(o *pulsar.ClientOptions) {
			o.Authentication = pulsar.NewAuthenticationToken(b.Token(role))
			o.OperationTimeout = 3 * time.Second
		})
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
		if err == nil {
			cons.Close()
		}
		return err
	}
	if err := subscribe("alice", "audit"); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("alice on bob's subscription: %v, want AuthorizationError", err)
	}
	for _, s := range []struct{ role, sub string }{{"bob", "audit"}, {"alice", "anything"}, {"admin", "audit"}} {
		if err := subscribe(s.role, s.sub); err != nil {
			t.Fatalf("%s on %s: %v", s.role, s.sub, err)
		}
	}
	admin("POST", "/admin/v2/namespaces/public/gated/subscriptionAuthMode", `"Prefix"`)
	err := subscribe("alice", "anything")
	if err == nil || !strings.Contains(err.Error(), "The subscription name needs to be prefixed by the authentication role, like alice-xxxx") {
		t.Fatalf("alice on a subscription without her prefix: %v", err)
	}
	for _, s := range []struct{ role, sub string }{{"alice", "alice-1"}, {"admin", "anything"}} {
		if err := subscribe(s.role, s.sub); err != nil {
			t.Fatalf("%s on %s in Prefix mode: %v", s.role, s.sub, err)
		}
	}
}
