package admin_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A policy set through the broker's API shows at the admin endpoints, and one
// set through the endpoints shows in the broker's API.
func TestPolicySetThroughTheAPIIsSeenByTheEndpointsAndBack(t *testing.T) {
	b, a, base := startAdmin(t)
	tn := topicName(t, "persistent://public/default/policy")
	if err := b.CreateTopic(tn.String()); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.MessageTTLSeconds = new(90) }); err != nil {
		t.Fatal(err)
	}
	if ttl, err := a.Namespaces().GetNamespaceMessageTTL("public/default"); err != nil || ttl != 90 {
		t.Fatalf("namespace TTL at the endpoint: %d, %v; want 90", ttl, err)
	}
	status, body := call(t, base, "GET", "/admin/v2/namespaces/public/default", "")
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); status != http.StatusOK || err != nil || doc["message_ttl_in_seconds"] != 90.0 {
		t.Fatalf("namespace policies: %d %s", status, body)
	}
	if ttl, err := a.Topics().GetMessageTTL(tn); err != nil || ttl != 0 {
		t.Fatalf("the topic's own TTL: %d, %v; want 0 (unset)", ttl, err)
	}
	if status, body := call(t, base, "GET", "/admin/v2/persistent/public/default/policy/messageTTL?applied=true", ""); status != http.StatusOK || string(body) != "90\n" {
		t.Fatalf("applied TTL: %d %q, want the namespace's 90", status, body)
	}

	if err := a.Topics().SetMessageTTL(tn, 15); err != nil {
		t.Fatal(err)
	}
	own, err := b.TopicPolicies(tn.String())
	if err != nil || own.MessageTTLSeconds == nil || *own.MessageTTLSeconds != 15 {
		t.Fatalf("topic policies after the endpoint set 15: %+v, %v", own, err)
	}
	if applied, _ := b.AppliedPolicies(tn.String()); *applied.MessageTTLSeconds != 15 {
		t.Fatalf("applied TTL %d, want the topic's 15", *applied.MessageTTLSeconds)
	}
	if err := a.Namespaces().RemoveNamespaceMessageTTL("public/default"); err != nil {
		t.Fatal(err)
	}
	if ns, _ := b.NamespacePolicies("public/default"); ns.MessageTTLSeconds != nil {
		t.Fatalf("namespace TTL after the endpoint removed it: %d", *ns.MessageTTLSeconds)
	}
	if status, _ := call(t, base, "POST", "/admin/v2/persistent/public/default/policy/messageTTL", ""); status != http.StatusNoContent {
		t.Fatalf("a topic TTL POST without a value: %d, want 204 (it removes the TTL, as in Pulsar)", status)
	}
	if own, _ := b.TopicPolicies(tn.String()); own.MessageTTLSeconds != nil {
		t.Fatalf("topic TTL after a POST without a value: %d", *own.MessageTTLSeconds)
	}
}

func TestSchemaVersionsListed(t *testing.T) {
	b, a, _ := startAdmin(t)
	const topic = "persistent://public/default/versions"
	for _, typ := range []string{"STRING", "INT64"} {
		if _, err := b.PutSchema(topic, broker.Schema{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := a.Schemas().GetAllSchemas(topic)
	if err != nil || len(list) != 2 || list[0].Version != 0 || list[1].Version != 1 || string(list[1].SchemaInfo.Type) != "INT64" {
		t.Fatalf("schemas %+v, %v", list, err)
	}
}
