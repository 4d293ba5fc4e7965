package scenarios_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A namespace created with a policies document keeps every policy of it:
// the admin API answers them, and the broker applies them.

// namespaceBodyKeys are the keys of the policies document compared: those
// the creation body sets and the schema policies.
var namespaceBodyKeys = append([]string{"schema_compatibility_strategy", "schema_validation_enforced",
	"is_allow_auto_update_schema", "compaction_threshold", "autoTopicCreationOverride"}, nsDocKeys...)

// createdWithPolicies creates a namespace with a policies document and
// describes what the admin API answers and what pulsar-client-go meets:
// one producer per topic (max_producers_per_topic), partitioned topics of 2
// on first use (autoTopicCreationOverride).
func createdWithPolicies(t *testing.T, tg *scenarios.Target, admin string) []string {
	ns := "public/" + strings.TrimPrefix(tg.Topic("nsbody"), "persistent://public/default/")
	body := `{"max_producers_per_topic":1,"max_consumers_per_topic":3,"message_ttl_in_seconds":600,` +
		`"retention_policies":{"retentionTimeInMinutes":60,"retentionSizeInMB":10},` +
		`"backlog_quota_map":{"destination_storage":{"limitSize":1073741824,"limitTime":-1,"policy":"producer_exception"}},` +
		`"deduplicationEnabled":true,"compaction_threshold":1048576,"schema_compatibility_strategy":"FORWARD",` +
		`"schema_validation_enforced":true,"is_allow_auto_update_schema":false,` +
		`"publishMaxMessageRate":{"standalone":{"publishThrottlingRateInMsg":1000,"publishThrottlingRateInByte":-1}},` +
		// Both maps, as Pulsar's dispatchRate endpoint writes them:
		// pulsarsim keeps one rate for the two.
		`"topicDispatchRate":{"standalone":{"dispatchThrottlingRateInMsg":500,"dispatchThrottlingRateInByte":-1,"relativeToPublishRate":false,"ratePeriodInSecond":1}},` +
		`"clusterDispatchRate":{"standalone":{"dispatchThrottlingRateInMsg":500,"dispatchThrottlingRateInByte":-1,"relativeToPublishRate":false,"ratePeriodInSecond":1}},` +
		`"autoTopicCreationOverride":{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":2}}`
	var out []string
	status, answer := adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+ns, body)
	out = append(out, fmt.Sprintf("create: %d %s", status, answer))
	status, answer = adminCall(t, "GET", admin+"/admin/v2/namespaces/"+ns, "")
	out = append(out, fmt.Sprintf("policies: %d %s", status, keptKeys(t, answer, namespaceBodyKeys)))
	for _, p := range []string{"maxProducersPerTopic", "messageTTL", "retention", "deduplication", "autoTopicCreation",
		"schemaCompatibilityStrategy", "schemaValidationEnforced", "isAllowAutoUpdateSchema", "compactionThreshold"} {
		status, answer := adminCall(t, "GET", admin+"/admin/v2/namespaces/"+ns+"/"+p, "")
		out = append(out, fmt.Sprintf("GET %s: %d %s", p, status, answer))
	}
	client := tg.Client()
	topic := "persistent://" + ns + "/t"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer after %s: %v", strings.Join(out, "\n"), err)
	}
	defer p.Close()
	parts, _ := client.TopicPartitions(topic)
	out = append(out, fmt.Sprintf("a producer's topic: %d partitions", len(parts)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic + "-partition-0"})
	out = append(out, "a second producer on a partition: "+strings.ReplaceAll(brokerPart(err), ns, "{ns}"))
	return out
}

// keptKeys re-encodes a JSON object with only keys, sorted, or tells why
// it cannot.
func keptKeys(t *testing.T, body string, keys []string) string {
	return canonicalKeys(t, []byte(body), keys)
}

// TestDifferentialNamespaceCreatedWithPolicies compares what both brokers
// keep and apply of a namespace's creation body.
func TestDifferentialNamespaceCreatedWithPolicies(t *testing.T) {
	sameStoryOnBoth(t, createdWithPolicies)
}
