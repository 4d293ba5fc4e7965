package admin_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/google/go-cmp/cmp"

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
	// An unset policy is an empty body, which pulsaradmin reads as -1.
	if ttl, err := a.Topics().GetMessageTTL(tn); err != nil || ttl != -1 {
		t.Fatalf("the topic's own TTL: %d, %v; want -1 (unset)", ttl, err)
	}
	if status, body := call(t, base, "GET", "/admin/v2/persistent/public/default/policy/messageTTL?applied=true", ""); status != http.StatusOK || string(body) != "90" {
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
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = new(broker.SchemaAlwaysCompatible) }); err != nil {
		t.Fatal(err)
	}
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

// policyCase is one policy's endpoints and a value to set through them.
type policyCase struct {
	nsPath, topicPath string
	body              string // what a POST sends
	want              string // what a GET answers after it
	unsetTopic        int    // the status of a topic GET while unset
}

var policyCases = []policyCase{
	{"maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer", `100`, `100`, 200},
	{"maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription", `1000`, `1000`, 200},
	{"maxProducersPerTopic", "maxProducers", `3`, `3`, 200},
	{"maxConsumersPerTopic", "maxConsumers", `4`, `4`, 200},
	{"maxConsumersPerSubscription", "maxConsumersPerSubscription", `"5"`, `5`, 204},
	{"maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic", `6`, `6`, 204},
	{"retention", "retention", `{"retentionTimeInMinutes":60,"retentionSizeInMB":100}`,
		`{"retentionTimeInMinutes":60,"retentionSizeInMB":100}`, 200},
	{"dispatchRate", "dispatchRate", `{"dispatchThrottlingRateInMsg":10,"dispatchThrottlingRateInByte":1000,"ratePeriodInSecond":2}`,
		`{"dispatchThrottlingRateInMsg":10,"dispatchThrottlingRateInByte":1000,"relativeToPublishRate":false,"ratePeriodInSecond":2}`, 200},
	{"subscriptionDispatchRate", "subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":11}`,
		`{"dispatchThrottlingRateInMsg":11,"dispatchThrottlingRateInByte":0,"relativeToPublishRate":false,"ratePeriodInSecond":0}`, 200},
	{"publishRate", "publishRate", `{"publishThrottlingRateInMsg":12}`,
		`{"publishThrottlingRateInMsg":12,"publishThrottlingRateInByte":-1}`, 204},
	{"deduplication", "deduplicationEnabled", `true`, `true`, 200},
	{"delayedDelivery", "delayedDelivery", `{"active":false,"tickTime":500}`,
		`{"tickTime":500,"active":false,"maxDeliveryDelayInMillis":0}`, 200},
	{"persistence", "persistence", `{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`,
		`{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1,"managedLedgerMaxMarkDeleteRate":0.0}`, 200},
	{"subscribeRate", "subscribeRate", `{"subscribeThrottlingRatePerConsumer":3}`,
		`{"subscribeThrottlingRatePerConsumer":3,"ratePeriodInSecond":30}`, 200},
	{"inactiveTopicPolicies", "inactiveTopicPolicies", `{"inactiveTopicDeleteMode":"delete_when_subscriptions_caught_up","maxInactiveDurationSeconds":120}`,
		`{"inactiveTopicDeleteMode":"delete_when_subscriptions_caught_up","maxInactiveDurationSeconds":120,"deleteWhileInactive":false}`, 200},
}

// Every policy set at either level reads back as Pulsar writes it, shows in
// the broker's own policies of that level, and reads as unset (an empty
// body) once deleted.
func TestEveryPolicyReadsBackAtBothLevelsAndUnsetsOnDelete(t *testing.T) {
	b, _, base := startAdmin(t)
	if err := b.CreateTopic("persistent://public/default/pol"); err != nil {
		t.Fatal(err)
	}
	const ns, topic = "/admin/v2/namespaces/public/default/", "/admin/v2/persistent/public/default/pol/"
	for _, c := range policyCases {
		for _, level := range []struct {
			path  string
			own   func() (broker.Policies, error)
			unset int
		}{
			{ns + c.nsPath, func() (broker.Policies, error) { return b.NamespacePolicies("public/default") }, 200},
			{topic + c.topicPath, func() (broker.Policies, error) { return b.TopicPolicies("pol") }, c.unsetTopic},
		} {
			t.Run(level.path, func(t *testing.T) {
				before, _ := level.own()
				if status, body := call(t, base, "GET", level.path, ""); status != level.unset || len(body) != 0 {
					t.Fatalf("unset: %d %q, want %d and no body", status, body, level.unset)
				}
				if status, body := call(t, base, "POST", level.path, c.body); status != http.StatusNoContent {
					t.Fatalf("POST %s: %d %s", c.body, status, body)
				}
				if status, body := call(t, base, "GET", level.path, ""); status != 200 || strings.TrimSpace(string(body)) != c.want {
					t.Fatalf("GET: %d %s, want %s", status, body, c.want)
				}
				if after, _ := level.own(); cmp.Equal(before, after) {
					t.Fatalf("the broker's policies did not change: %+v", after)
				}
				if status, body := call(t, base, "DELETE", level.path, ""); status != http.StatusNoContent {
					t.Fatalf("DELETE: %d %s", status, body)
				}
				if after, _ := level.own(); !cmp.Equal(before, after) {
					t.Fatalf("after DELETE: %+v, want %+v", after, before)
				}
			})
		}
	}
}

// A topic GET with ?applied answers the value in force: the namespace's
// when the topic sets none, the broker's when neither does.
func TestAppliedPolicyFallsBackToNamespaceThenBroker(t *testing.T) {
	b, a, base := startAdmin(t)
	tn := topicName(t, "persistent://public/default/applied")
	if err := a.Topics().Create(tn, 0); err != nil {
		t.Fatal(err)
	}
	const path = "/admin/v2/persistent/public/default/applied/maxUnackedMessagesOnConsumer?applied=true"
	get := func() string {
		t.Helper()
		status, body := call(t, base, "GET", path, "")
		if status != 200 {
			t.Fatalf("GET applied: %d %s", status, body)
		}
		return strings.TrimSpace(string(body))
	}
	if got := get(); got != "50000" {
		t.Fatalf("broker default %s, want 50000", got)
	}
	if status, body := call(t, base, "POST", "/admin/v2/namespaces/public/default/maxUnackedMessagesPerConsumer", "7"); status != 204 {
		t.Fatalf("namespace limit: %d %s", status, body)
	}
	if got := get(); got != "7" {
		t.Fatalf("namespace's %s, want 7", got)
	}
	// pulsar-rs's admin client sets this one per topic (it used to be a 404).
	if err := a.Topics().SetMaxUnackMessagesPerConsumer(tn, 3); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != "3" {
		t.Fatalf("topic's %s, want 3", got)
	}
	if p, _ := b.AppliedPolicies(tn.String()); *p.MaxUnackedMessagesPerConsumer != 3 {
		t.Fatalf("the broker applies %d", *p.MaxUnackedMessagesPerConsumer)
	}
	status, body := call(t, base, "GET", "/admin/v2/persistent/public/default/applied/backlogQuotaMap?applied=true", "")
	want := `{"destination_storage":{"limit":-1,"limitSize":-1,"limitTime":-1,"policy":"producer_request_hold"},` +
		`"message_age":{"limit":-1,"limitSize":-1,"limitTime":-1,"policy":"producer_request_hold"}}`
	if status != 200 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("applied backlog quotas: %d %s, want %s", status, body, want)
	}
}

// Backlog quotas are set and removed one type at a time and read as a map;
// pulsar-client-go's own backlog-quota test sets one this way.
func TestBacklogQuotasByType(t *testing.T) {
	b, a, base := startAdmin(t)
	if err := a.Namespaces().CreateNamespace("public/quotas"); err != nil {
		t.Fatal(err)
	}
	err := a.Namespaces().SetBacklogQuota("public/quotas", utils.NewBacklogQuota(10*1024, -1, utils.ProducerException),
		utils.DestinationStorage)
	if err != nil {
		t.Fatal(err)
	}
	// The older field name "limit", with the number quoted, as in the
	// client's send-timeout test.
	if status, body := call(t, base, "POST", "/admin/v2/namespaces/public/quotas/backlogQuota?backlogQuotaType=message_age",
		`{"limit": "0", "limitTime": 30, "policy": "consumer_backlog_eviction"}`); status != http.StatusNoContent {
		t.Fatalf("message_age quota: %d %s", status, body)
	}
	m, err := a.Namespaces().GetBacklogQuotaMap("public/quotas")
	if err != nil {
		t.Fatal(err)
	}
	want := map[utils.BacklogQuotaType]utils.BacklogQuota{
		utils.DestinationStorage: {LimitSize: 10 * 1024, LimitTime: -1, Policy: utils.ProducerException},
		utils.MessageAge:         {LimitSize: 0, LimitTime: 30, Policy: utils.ConsumerBacklogEviction},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Fatalf("quota map (-want +got):\n%s", diff)
	}
	pol, _ := b.NamespacePolicies("public/quotas")
	if q := pol.BacklogQuota; q == nil || q.LimitBytes != 10*1024 || q.Policy != broker.ProducerException {
		t.Fatalf("the broker's size quota: %+v", q)
	}
	if err := a.Namespaces().RemoveBacklogQuota("public/quotas"); err != nil {
		t.Fatal(err)
	}
	if pol, _ := b.NamespacePolicies("public/quotas"); pol.BacklogQuota != nil || pol.MessageAgeBacklogQuota == nil {
		t.Fatalf("after removing the default type: %+v, %+v", pol.BacklogQuota, pol.MessageAgeBacklogQuota)
	}
}
