package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
)

// call sends one request to the admin API and returns its status and body.
func call(t *testing.T, base, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// brokerState is what the admin API can change, as plain values.
type brokerState struct {
	Tenants         []string
	Topics          []string
	Subscriptions   []string
	NamespacePolicy broker.Policies
	TopicPolicy     broker.Policies
	Schemas         []broker.Schema
	Partitions      int
	MarkDelete      int64
}

func stateOf(t *testing.T, b *broker.Broker) brokerState {
	t.Helper()
	var st brokerState
	var err error
	st.Tenants = b.Tenants()
	st.Topics = b.Topics()
	if st.Subscriptions, err = b.Subscriptions("t"); err != nil {
		t.Fatal(err)
	}
	if st.NamespacePolicy, err = b.NamespacePolicies("public/default"); err != nil {
		t.Fatal(err)
	}
	if st.TopicPolicy, err = b.TopicPolicies("t"); err != nil {
		t.Fatal(err)
	}
	if st.Schemas, err = b.Schemas("t"); err != nil {
		t.Fatal(err)
	}
	if st.Partitions, err = b.PartitionedMetadata("parted"); err != nil {
		t.Fatal(err)
	}
	snap, _ := b.Subscription("persistent://public/default/t", "s")
	st.MarkDelete = snap.MarkDelete.Entry
	return st
}

// Requests Pulsar refuses get its status code and a JSON reason, and change
// nothing. The codes were checked against Pulsar 4.0.8 (where Pulsar's own
// answer is a plain-text or HTML body, pulsarsim still answers JSON).
func TestBadRequestsGetPulsarsStatusAndChangeNothing(t *testing.T) {
	b, _, base := startAdmin(t)
	if err := b.CreateTopic("t"); err != nil {
		t.Fatal(err)
	}
	if err := b.CreatePartitionedTopic("parted", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish("t", broker.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.MessageTTLSeconds = new(30) }); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTopicPolicies("t", func(p *broker.Policies) {
		p.MessageTTLSeconds = new(5)
		p.Retention = &broker.Retention{Minutes: 1, SizeMB: 1}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutSchema("t", broker.Schema{Type: "STRING"}); err != nil {
		t.Fatal(err)
	}
	cons := subscribe(t, b, "t", "s")
	defer cons.Close()

	const topic = "/admin/v2/persistent/public/default/t"
	const ns = "/admin/v2/namespaces/public/default"
	const schema = "/admin/v2/schemas/public/default/t"
	const nsStrategy = "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy"
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed subscription body", "PUT", topic + "/subscription/new", `{bad`, 400},
		{"mistyped subscription body", "PUT", topic + "/subscription/new", `{"ledgerId":"x","entryId":0}`, 400},
		{"array as subscription body", "PUT", topic + "/subscription/new", `[1]`, 400},
		{"existing subscription", "PUT", topic + "/subscription/s", ``, 409},
		{"subscription with a consumer", "DELETE", topic + "/subscription/s", ``, 412},
		{"unknown subscription", "DELETE", topic + "/subscription/none", ``, 404},
		{"subscription of an unknown topic", "DELETE", "/admin/v2/persistent/public/default/none/subscription/s", ``, 404},
		{"subscriptions of an unknown topic", "GET", "/admin/v2/persistent/public/default/none/subscriptions", ``, 404},
		{"stats of an unknown topic", "GET", "/admin/v2/persistent/public/default/none/stats", ``, 404},
		{"stats of a partitioned topic's name", "GET", "/admin/v2/persistent/public/default/parted/stats", ``, 404},
		{"unload of an unknown topic", "PUT", "/admin/v2/persistent/public/default/none/unload", ``, 404},
		{"delete of an unknown topic", "DELETE", "/admin/v2/persistent/public/default/none", ``, 404},
		{"existing topic", "PUT", topic, ``, 409},
		{"compaction of an unknown topic", "PUT", "/admin/v2/persistent/public/default/none/compaction", ``, 404},
		{"compaction status of an unknown topic", "GET", "/admin/v2/persistent/public/default/none/compaction", ``, 404},
		{"compaction status of a partitioned topic's name", "GET", "/admin/v2/persistent/public/default/parted/compaction", ``, 404},
		{"compaction of a non-persistent topic", "PUT", "/admin/v2/non-persistent/public/default/t/compaction", ``, 404},
		{"negative namespace compaction threshold", "PUT", ns + "/compactionThreshold", `-5`, 412},
		{"namespace compaction threshold not a number", "PUT", ns + "/compactionThreshold", `x`, 400},
		{"empty namespace compaction threshold", "PUT", ns + "/compactionThreshold", ``, 400},
		{"negative topic compaction threshold", "POST", topic + "/compactionThreshold", `-1`, 412},
		{"empty topic compaction threshold", "POST", topic + "/compactionThreshold", ``, 400},
		{"compaction threshold of a partition", "POST", "/admin/v2/persistent/public/default/parted-partition-0/compactionThreshold", `5`, 412},
		{"negative namespace TTL", "POST", "/admin/v2/namespaces/public/default/messageTTL", `-1`, 412},
		{"namespace TTL not a number", "POST", "/admin/v2/namespaces/public/default/messageTTL", `abc`, 400},
		{"TTL of an unknown namespace", "POST", "/admin/v2/namespaces/public/none/messageTTL", `5`, 404},
		{"negative topic TTL", "POST", topic + "/messageTTL?messageTTL=-1", ``, 412},
		{"topic TTL not a number", "POST", topic + "/messageTTL?messageTTL=abc", ``, 404},
		{"TTL of an unknown topic", "POST", "/admin/v2/persistent/public/default/none/messageTTL?messageTTL=5", ``, 404},
		{"malformed partition count", "PUT", "/admin/v2/persistent/public/default/p2/partitions", `{bad`, 400},
		{"zero partitions", "PUT", "/admin/v2/persistent/public/default/p2/partitions", `0`, 406},
		{"fewer partitions", "POST", "/admin/v2/persistent/public/default/parted/partitions", `2`, 422},
		{"partitions of a non-partitioned topic", "POST", topic + "/partitions", `4`, 409},
		{"malformed schema", "POST", "/admin/v2/schemas/public/default/t/schema", `{bad`, 400},
		{"unknown schema type", "POST", "/admin/v2/schemas/public/default/t/schema", `{"type":"NOPE","schema":""}`, 500},
		{"message id not a number", "GET", topic + "/ledger/abc/entry/0", ``, 404},
		// Pulsar's managed ledger throws, unexpected to the REST handler.
		{"message beyond the topic", "GET", topic + "/ledger/1/entry/99", ``, 500},
		{"malformed tenant", "PUT", "/admin/v2/tenants/acme", `{bad`, 400},
		{"negative namespace producer limit", "POST", ns + "/maxProducersPerTopic", `-1`, 412},
		{"negative namespace consumer limit", "POST", ns + "/maxConsumersPerTopic", `-1`, 412},
		{"negative namespace subscription consumer limit", "POST", ns + "/maxConsumersPerSubscription", `-1`, 412},
		{"negative namespace subscription limit", "POST", ns + "/maxSubscriptionsPerTopic", `-1`, 412},
		{"negative namespace unacked limit", "POST", ns + "/maxUnackedMessagesPerConsumer", `-5`, 412},
		{"negative namespace subscription unacked limit", "POST", ns + "/maxUnackedMessagesPerSubscription", `-5`, 412},
		{"namespace limit not a number", "POST", ns + "/maxProducersPerTopic", `{bad`, 400},
		{"namespace limit without a body", "POST", ns + "/maxProducersPerTopic", ``, 400},
		{"namespace deduplication not a bool", "POST", ns + "/deduplication", `maybe`, 400},
		{"namespace retention below -1", "POST", ns + "/retention", `{"retentionTimeInMinutes":-2,"retentionSizeInMB":1}`, 400},
		{"namespace retention with one limit 0", "POST", ns + "/retention", `{"retentionTimeInMinutes":0,"retentionSizeInMB":1}`, 400},
		{"malformed namespace dispatch rate", "POST", ns + "/dispatchRate", `{bad`, 400},
		{"malformed namespace publish rate", "POST", ns + "/publishRate", `[1]`, 400},
		{"malformed namespace delayed delivery", "POST", ns + "/delayedDelivery", `{"active":"x"}`, 400},
		{"namespace quota without a policy", "POST", ns + "/backlogQuota", `{"limitSize":5,"policy":"nope"}`, 400},
		{"namespace quota of an unknown type", "POST", ns + "/backlogQuota?backlogQuotaType=nope", `{"limitSize":5,"policy":"producer_exception"}`, 404},
		{"namespace quota without a body", "POST", ns + "/backlogQuota", ``, 500},
		{"limit of an unknown namespace", "POST", "/admin/v2/namespaces/public/none/maxProducersPerTopic", `3`, 404},
		{"quotas of an unknown namespace", "GET", "/admin/v2/namespaces/public/none/backlogQuotaMap", ``, 404},
		{"negative topic producer limit", "POST", topic + "/maxProducers", `-1`, 412},
		{"negative topic consumer limit", "POST", topic + "/maxConsumers", `-1`, 412},
		{"negative topic subscription consumer limit", "POST", topic + "/maxConsumersPerSubscription", `-1`, 412},
		{"negative topic subscription limit", "POST", topic + "/maxSubscriptionsPerTopic", `-1`, 412},
		{"negative topic unacked limit", "POST", topic + "/maxUnackedMessagesOnConsumer", `-1`, 412},
		{"negative topic subscription unacked limit", "POST", topic + "/maxUnackedMessagesOnSubscription", `-1`, 412},
		{"topic limit not a number", "POST", topic + "/maxConsumers", `"x"`, 400},
		{"topic limit without a body", "POST", topic + "/maxConsumers", ``, 400},
		{"topic retention below -1", "POST", topic + "/retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":-3}`, 400},
		{"topic quota without a policy", "POST", topic + "/backlogQuota", `{"limitSize":5}`, 400},
		{"topic quota over its retention", "POST", topic + "/backlogQuota", `{"limitSize":2097152,"policy":"producer_exception"}`, 412},
		{"topic age quota over its retention", "POST", topic + "/backlogQuota?backlogQuotaType=message_age", `{"limitTime":120,"policy":"producer_exception"}`, 412},
		{"malformed topic quota", "POST", topic + "/backlogQuota", `{bad`, 400},
		{"limit of an unknown topic", "POST", "/admin/v2/persistent/public/default/none/maxProducers", `3`, 404},
		{"limit of a topic in an unknown namespace", "GET", "/admin/v2/persistent/public/none/t/maxProducers", ``, 404},
		{"limit of a partition", "POST", "/admin/v2/persistent/public/default/parted-partition-0/maxProducers", `3`, 412},
		{"quotas of a partition", "GET", "/admin/v2/persistent/public/default/parted-partition-0/backlogQuotaMap", ``, 412},
		{"topic in an unknown namespace", "PUT", "/admin/v2/persistent/public/none/t", ``, 404},
		{"partitioned topic in an unknown namespace", "PUT", "/admin/v2/persistent/public/none/p/partitions", `2`, 404},
		{"stats in an unknown namespace", "GET", "/admin/v2/persistent/public/none/t/stats", ``, 404},
		{"subscription in an unknown namespace", "PUT", "/admin/v2/persistent/public/none/t/subscription/s", ``, 404},
		{"topics of an unknown namespace", "GET", "/admin/v2/persistent/public/none", ``, 404},
		{"partitioned topics of an unknown namespace", "GET", "/admin/v2/persistent/public/none/partitioned", ``, 404},
		{"lookup in an unknown namespace", "GET", "/lookup/v2/topic/persistent/public/none/t", ``, 404},
		{"namespace of an unknown tenant", "PUT", "/admin/v2/namespaces/none/ns", ``, 404},
		{"strategy as an object", "PUT", nsStrategy, `{}`, 400},
		{"strategy not JSON", "PUT", nsStrategy, `BACKWARD`, 400},
		{"strategy of an unknown namespace", "PUT", "/admin/v2/namespaces/public/none/schemaCompatibilityStrategy", `"FULL"`, 404},
		{"strategy by POST", "POST", nsStrategy, `"FULL"`, 405},
		{"namespace strategy deleted", "DELETE", nsStrategy, ``, 412},
		{"validation without a body", "POST", "/admin/v2/namespaces/public/default/schemaValidationEnforced", ``, 400},
		{"validation not a boolean", "POST", "/admin/v2/namespaces/public/default/schemaValidationEnforced", `"yes"`, 400},
		{"auto update not JSON", "POST", "/admin/v2/namespaces/public/default/isAllowAutoUpdateSchema", `x`, 400},
		{"topic strategy of an unknown topic", "PUT", "/admin/v2/persistent/public/default/none/schemaCompatibilityStrategy", `"FULL"`, 404},
		{"topic strategy as an array", "PUT", topic + "/schemaCompatibilityStrategy", `[1]`, 400},
		{"topic validation of an unknown topic", "POST", "/admin/v2/persistent/public/default/none/schemaValidationEnforced", `true`, 404},
		{"topic validation deleted", "DELETE", topic + "/schemaValidationEnforced", ``, 405},
		{"incompatible schema", "POST", schema + "/schema", `{"type":"INT32","schema":""}`, 409},
		{"malformed schema definition", "POST", schema + "/schema", `{"type":"AVRO","schema":"not json"}`, 422},
		{"schema without a type", "POST", schema + "/schema", `{"schema":""}`, 500},
		{"client-side schema type", "POST", schema + "/schema", `{"type":"AUTO_CONSUME","schema":""}`, 422},
		{"incompatible schema checked", "POST", schema + "/compatibility", `{"type":"INT32","schema":""}`, 500},
		{"malformed compatibility body", "POST", schema + "/compatibility", `{bad`, 400},
		{"malformed version body", "POST", schema + "/version", `{bad`, 400},
		{"unknown cluster", "GET", "/admin/v2/clusters/elsewhere", ``, 404},
		{"health check of an unknown topic version", "GET", "/admin/v2/brokers/health?topicVersion=V3", ``, 404},
		{"health check by POST", "POST", "/admin/v2/brokers/health", ``, 405},
		{"owned namespaces of another broker", "GET", "/admin/v2/brokers/standalone/nope:1/ownedNamespaces", ``, 404},
		{"schema in an unknown namespace", "POST", "/admin/v2/schemas/public/none/t/schema", `{"type":"STRING","schema":""}`, 404},
		{"invalid namespace name", "PUT", "/admin/v2/namespaces/public/bad%20name", ``, 412},
		{"terminate a non-persistent topic", "POST", "/admin/v2/non-persistent/public/default/t/terminate", ``, 406},
		{"terminate an unknown topic", "POST", "/admin/v2/persistent/public/default/none/terminate", ``, 404},
	}
	before := stateOf(t, b)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := call(t, base, c.method, c.path, c.body)
			if status != c.status {
				t.Fatalf("%s %s: status %d (%s), want %d", c.method, c.path, status, body, c.status)
			}
			var reason struct{ Reason string }
			if err := json.Unmarshal(body, &reason); err != nil || reason.Reason == "" {
				// A body Jackson cannot read is answered in its words,
				// in plain text; never in Go's.
				jackson := strings.HasPrefix(string(body), "Unrecognized token") ||
					strings.HasPrefix(string(body), "Cannot ") || strings.HasPrefix(string(body), "Unexpected ")
				if status != http.StatusBadRequest || !jackson || strings.Contains(string(body), "Go struct") {
					t.Fatalf("body %q is neither a JSON reason nor Jackson's words: %v", body, err)
				}
			}
			if diff := cmp.Diff(before, stateOf(t, b)); diff != "" {
				t.Fatalf("the refused request changed the broker (-before +after):\n%s", diff)
			}
		})
	}
}

// subscribe attaches a real consumer to topic's subscription sub.
func subscribe(t *testing.T, b *broker.Broker, topic, sub string) pulsar.Consumer {
	t.Helper()
	cons, err := newClient(t, b).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
	if err != nil {
		t.Fatal(err)
	}
	return cons
}
