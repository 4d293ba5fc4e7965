package scenarios_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A topic's internal stats (the managed ledger and its cursors, as
// pulsar-admin topics stats-internal shows them) compared with a real
// Pulsar: the same messages and acknowledgements from pulsar-client-go on
// both, then the same requests. Ledger ids and timestamps are each broker's
// own, so they are masked (a timestamp after checking its form); every
// other key and value is compared as it is.

// statsPosition is a ledger position L:E.
var statsPosition = regexp.MustCompile(`^-?\d+:(-?\d+)$`)

// statsTime is a timestamp as Pulsar's internal stats write one.
var statsTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`)

// rangeLedger is a ledger id in an individually deleted range.
var rangeLedger = regexp.MustCompile(`(\(|\.\.)-?\d+:`)

// ensemble is the bookie address in a ledger's metadata.
var ensemble = regexp.MustCompile(`ensembles=\{0=\[[^\]]*\]\}`)

// ledgerName is the managed ledger's name in a ledger's metadata.
var ledgerName = regexp.MustCompile(`pulsar/managed-ledger=base64:[A-Za-z0-9+/=]*`)

// customMetadata is the ledger metadata's map of custom entries, which
// Pulsar writes in its JVM's hash order: it changes from one broker start to
// the next.
var customMetadata = regexp.MustCompile(`customMetadata=\{[^}]*\}`)

// sortCustomMetadata writes a customMetadata map's entries in sorted order.
func sortCustomMetadata(m string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(m, "customMetadata={"), "}")
	entries := strings.Split(inner, ", ")
	sort.Strings(entries)
	return "customMetadata={" + strings.Join(entries, ", ") + "}"
}

// maskInternalStats masks, in a decoded internal stats document, what
// differs from broker to broker: ledger ids, timestamps, the bookie.
func maskInternalStats(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = maskInternalStats(val, k)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = maskInternalStats(val, key)
		}
		return x
	case float64:
		if (key == "ledgerId" || key == "cursorLedger") && x >= 0 {
			return "L"
		}
		return x
	case string:
		switch {
		case statsPosition.MatchString(x):
			return statsPosition.ReplaceAllString(x, "L:$1")
		case strings.HasSuffix(key, "Timestamp"):
			if statsTime.MatchString(x) {
				return "T"
			}
			return "bad time " + x
		case key == "individuallyDeletedMessages":
			return rangeLedger.ReplaceAllString(x, "${1}L:")
		case key == "metadata":
			// The managed ledger's name holds the run's suffix: decode it.
			x = ledgerName.ReplaceAllStringFunc(x, func(m string) string {
				b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(m, "pulsar/managed-ledger=base64:"))
				if err != nil {
					return m + " (not base64)"
				}
				return "pulsar/managed-ledger=" + string(b)
			})
			x = customMetadata.ReplaceAllStringFunc(x, sortCustomMetadata)
			return ensemble.ReplaceAllString(x, "ensembles={0=[B]}")
		}
	}
	return v
}

// jsonNote is the JSON answer of a GET of path, put through mask (which
// gets each value with its key), with the run's suffix left out.
func jsonNote(t *testing.T, base, path, suffix string, mask func(v any, key string) any) string {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("GET %s: %d %q is not JSON", path, resp.StatusCode, body)
	}
	masked, _ := json.Marshal(mask(doc, ""))
	return fmt.Sprintf("GET %s -> %d %s", strings.ReplaceAll(path, suffix, ""), resp.StatusCode,
		strings.ReplaceAll(string(masked), suffix, ""))
}

// settledJSONNote polls path (jsonNote) until two answers in a row agree
// and returns that answer; 10 s at most. The real broker updates some
// stats, and re-arms its cursors' reads after a dispatch, on its own time.
func settledJSONNote(t *testing.T, base, path, suffix string, mask func(v any, key string) any) string {
	t.Helper()
	prev := jsonNote(t, base, path, suffix, mask)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(150 * time.Millisecond)
		now := jsonNote(t, base, path, suffix, mask)
		if now == prev {
			return now
		}
		prev = now
	}
	t.Fatalf("GET %s never settled; last: %s", path, prev)
	return ""
}

// internalStatsNote is one internal stats answer, masked.
func internalStatsNote(t *testing.T, base, path, suffix string) string {
	t.Helper()
	return jsonNote(t, base, path, suffix, maskInternalStats)
}

// stableNote is an internal stats answer once it has settled.
func stableNote(t *testing.T, base, path, suffix string) string {
	t.Helper()
	return settledJSONNote(t, base, path, suffix, maskInternalStats)
}

// receiveN receives n messages.
func receiveN(t *testing.T, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []pulsar.Message
	for range n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, m)
	}
	return out
}

// internalStatsSubscribe subscribes with acks that wait for the broker.
func internalStatsSubscribe(t *testing.T, client pulsar.Client, topic, sub string, typ pulsar.SubscriptionType,
	pos pulsar.SubscriptionInitialPosition) pulsar.Consumer {
	t.Helper()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ,
		AckWithResponse: true, SubscriptionInitialPosition: pos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// internalStatsStory produces five single messages and a batch of three on
// a topic with four subscriptions, acknowledges out of order, cumulatively,
// and not at all, and notes the internal stats and the error answers.
func internalStatsStory(t *testing.T, tg *scenarios.Target, base string) []string {
	topic := tg.Topic("internal-stats")
	suffix := strings.TrimPrefix(topic, "persistent://public/default/internal-stats")
	client := tg.Client()
	latest := pulsar.SubscriptionPositionLatest
	shared := internalStatsSubscribe(t, client, topic, "shared", pulsar.Shared, latest)
	excl := internalStatsSubscribe(t, client, topic, "excl", pulsar.Exclusive, latest)
	internalStatsSubscribe(t, client, topic, "idle", pulsar.Shared, latest).Close()
	// Entries 0 and 1 are single messages, 2 a batch of three, 3 and 4
	// single messages again.
	peekProduce(t, client, topic, false)
	peekProduce(t, client, topic, true)
	peekProduce(t, client, topic, true)
	p := topicPath(topic)
	// Subscriptions the admin API creates, from the earliest entry and
	// from the latest.
	adminJSON(t, http.MethodPut, base+p+"/subscription/made-first", map[string]int64{"ledgerId": -1, "entryId": -1}, nil)
	adminJSON(t, http.MethodPut, base+p+"/subscription/made-last", nil, nil)
	var notes []string
	note := func(path string) { notes = append(notes, internalStatsNote(t, base, path, suffix)) }
	notes = append(notes, stableNote(t, base, p+"/internalStats", suffix))

	// Shared: entries 0, 2 (the batch's three messages) and 4 are
	// acknowledged, 1 and 3 not: 2 and 4 are holes after the mark-delete.
	got := receiveN(t, shared, 7)
	for _, i := range []int{0, 2, 3, 4, 6} {
		if err := shared.Ack(got[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Exclusive: a cumulative ack of the batch's second message
	// acknowledges the entries before the batch.
	got = receiveN(t, excl, 4)
	if err := excl.AckCumulative(got[3]); err != nil {
		t.Fatal(err)
	}
	// A subscription from the earliest entry with one entry acknowledged
	// ahead of its mark-delete, and one that acknowledges nothing.
	late := internalStatsSubscribe(t, client, topic, "late", pulsar.Shared, pulsar.SubscriptionPositionEarliest)
	got = receiveN(t, late, 7)
	if err := late.Ack(got[6]); err != nil {
		t.Fatal(err)
	}
	never := internalStatsSubscribe(t, client, topic, "never", pulsar.Shared, pulsar.SubscriptionPositionEarliest)
	receiveN(t, never, 7)
	notes = append(notes, stableNote(t, base, p+"/internalStats", suffix))
	notes = append(notes, stableNote(t, base, p+"/internalStats?metadata=true", suffix))
	note(p + "/internalStats?metadata=yes")
	note(p + "/partitioned-internalStats")

	// The consumers leave: the cursors are no longer active.
	for _, c := range []pulsar.Consumer{shared, excl, late, never} {
		c.Close()
	}
	notes = append(notes, stableNote(t, base, p+"/internalStats", suffix))

	// A partitioned topic, its partitions, and names that are not topics.
	parts := topicPath(tg.Topic("internal-stats-parts"))
	adminJSON(t, http.MethodPut, base+parts+"/partitions", 2, nil)
	note(parts + "/internalStats")
	note(parts + "/partitioned-internalStats")
	note(parts + "-partition-1/internalStats")
	note(topicPath(tg.Topic("internal-stats-none")) + "/internalStats")
	note(topicPath(tg.Topic("internal-stats-none")) + "/partitioned-internalStats")
	note(topicPath(tg.Topic("internal-stats-none")) + "-partition-3/internalStats")
	note("/admin/v2/persistent/public/no-such-ns/t" + suffix + "/internalStats")
	note("/admin/v2/persistent/pub%20lic/default/t" + suffix + "/internalStats")

	// A terminated topic with two messages and a subscription.
	ended := tg.Topic("internal-stats-ended")
	internalStatsSubscribe(t, client, ended, "s", pulsar.Shared, latest).Close()
	peekProduce(t, client, ended, true)
	peekProduce(t, client, ended, true)
	terminate(t, base, ended)
	notes = append(notes, stableNote(t, base, topicPath(ended)+"/internalStats", suffix))

	// Non-persistent: the persistent topic's name, and a topic with a
	// subscription and two messages.
	note("/admin/v2/non-persistent/" + strings.TrimPrefix(topic, "persistent://") + "/internalStats")
	np := strings.Replace(tg.Topic("internal-stats-np"), "persistent://", "non-persistent://", 1)
	npc := internalStatsSubscribe(t, client, np, "np-sub", pulsar.Shared, latest)
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: np, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 2 {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	receiveN(t, npc, 2)
	note("/admin/v2/" + strings.Replace(np, "://", "/", 1) + "/internalStats")
	return notes
}

// TestDifferentialInternalStats compares the internal stats of a topic with
// out-of-order, cumulative and no acknowledgements, and the internal stats
// requests that fail, with a real Pulsar's.
func TestDifferentialInternalStats(t *testing.T) {
	sameStoryOnBoth(t, internalStatsStory)
}
