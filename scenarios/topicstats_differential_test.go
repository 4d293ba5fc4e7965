package scenarios_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A topic's stats (pulsar-admin topics stats) compared with a real Pulsar:
// the same keys, and the same values where both brokers measure the same
// thing. Rates and averages (each broker samples them on its own time),
// names, addresses, ids and timestamps are masked; a timestamp still shows
// whether it was ever set.

// statsLeftOut are the keys of Pulsar 4.0.8's topic stats that pulsarsim
// does not serve (FIDELITY.md says why), at any depth.
var statsLeftOut = map[string]bool{
	"bytesOutInternalCounter": true, "msgChunkPublished": true, "publishRateLimitedTimes": true,
	"ongoingTxnCount": true, "abortedTxnCount": true, "committedTxnCount": true,
	"delayedMessageIndexSizeInBytes": true, "compaction": true, "chunkedMessageRate": true,
	"avgMessagesPerEntry": true,
	"drainingHashesCount": true, "drainingHashesClearedTotal": true, "drainingHashesUnackedMessages": true,
	"dispatchThrottledMsgEventsBySubscriptionLimit": true, "dispatchThrottledBytesEventsBySubscriptionLimit": true,
	"dispatchThrottledMsgEventsByTopicLimit": true, "dispatchThrottledBytesEventsByTopicLimit": true,
	"dispatchThrottledMsgEventsByBrokerLimit": true, "dispatchThrottledBytesEventsByBrokerLimit": true,
}

// statsMasked are keys whose values each broker has of its own.
var statsMasked = map[string]bool{
	"averageMsgSize": true, "messageAckRate": true, "address": true, "producerName": true, "consumerName": true,
	"activeConsumerName": true, "ownerBroker": true, "producerId": true, "clientVersion": true,
	"connectedSince": true,
	// Its bytes depend on how long the ledger id is.
	"nonContiguousDeletedMessagesRangesSerializedSize": true,
}

// maskStats strips what pulsarsim leaves out and masks what differs from
// broker to broker in a decoded stats document.
func maskStats(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if statsLeftOut[k] {
				delete(x, k)
				continue
			}
			x[k] = maskStats(val, k)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = maskStats(val, key)
		}
		return x
	}
	switch {
	case strings.HasPrefix(key, "msgRate") || strings.HasPrefix(key, "msgThroughput"):
		return "rate"
	case strings.HasSuffix(strings.ToLower(key), "timestamp") || strings.HasPrefix(key, "earliestMsgPublishTime"):
		if f, ok := v.(float64); ok && f != 0 {
			return "time"
		}
	case key == "lastAckedTime" || key == "lastConsumedTime":
		if s, ok := v.(string); ok && statsTime.MatchString(s) && !strings.HasPrefix(s, "1970-") {
			return "time"
		}
	case key == "nonContiguousDeletedMessagesRangesSerializedSize":
		if f, ok := v.(float64); ok && f > 0 {
			return "size"
		}
	case statsMasked[key]:
		return "masked"
	}
	return v
}

// stableStats is the masked stats document at path once it has settled.
func stableStats(t *testing.T, base, path, suffix string) string {
	t.Helper()
	return settledJSONNote(t, base, path, suffix, maskStats)
}

// topicStatsStory produces two singles, a batch and two more singles to a
// topic with a Shared subscription acknowledging out of order, one whose
// consumer acknowledges nothing, one without consumers and one whose
// entries expire; a producer stays connected. It notes the stats.
func topicStatsStory(t *testing.T, tg *scenarios.Target, base string) []string {
	topic := tg.Topic("topic-stats")
	suffix := strings.TrimPrefix(topic, "persistent://public/default/topic-stats")
	client := tg.Client()
	latest := pulsar.SubscriptionPositionLatest
	shared := internalStatsSubscribe(t, client, topic, "shared", pulsar.Shared, latest)
	watch := internalStatsSubscribe(t, client, topic, "watch", pulsar.Shared, latest)
	// Subscriptions without consumers come from the admin API: a consumer
	// closed at once may or may not have sent its first FLOW, which the
	// stats time.
	p := topicPath(topic)
	adminJSON(t, http.MethodPut, base+p+"/subscription/idle", nil, nil)
	adminJSON(t, http.MethodPut, base+p+"/subscription/old", nil, nil)
	peekProduce(t, client, topic, false)
	peekProduce(t, client, topic, true)
	peekProduce(t, client, topic, true)
	got := receiveN(t, shared, 7)
	for _, i := range []int{0, 2, 3, 4, 6} { // entries 0, 2 (the batch) and 4
		if err := shared.Ack(got[i]); err != nil {
			t.Fatal(err)
		}
	}
	receiveN(t, watch, 7)
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "stays"})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	notes := []string{stableStats(t, base, p+"/stats", suffix), stableStats(t, base, p+"/stats?getEarliestTimeInBacklog=true", suffix)}

	// Entries older than a second expire on "old" (publish times are a
	// second behind by then on both brokers).
	time.Sleep(1100 * time.Millisecond)
	adminJSON(t, http.MethodPost, base+p+"/subscription/old/expireMessages/1", nil, nil)
	notes = append(notes, stableStats(t, base, p+"/stats", suffix))
	return notes
}

// TestDifferentialTopicStats compares a topic's stats with a real Pulsar's:
// every key but those FIDELITY.md lists as not served, and every value
// both brokers measure alike.
func TestDifferentialTopicStats(t *testing.T) {
	sameStoryOnBoth(t, topicStatsStory)
}
