package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The evidence for message TTL on a real broker, whose clock cannot be
// moved: it takes up to ten minutes, so it runs only when asked
// (PULSAR_TTL_EVIDENCE=1, with PULSAR_URL and PULSAR_ADMIN_URL).
//
// Pulsar 4.0.8's periodic check (every 5 minutes) expires entries older than
// the TTL on every subscription, connected or not; the 1.5 x TTL grace of a
// connected subscription with a small backlog is on another path. The test
// finds when the real broker's checks run, then publishes to five topics,
// each with a connected consumer holding its messages, so that at the next
// check their oldest messages are 45 to 95 seconds old, with a TTL of 60
// seconds. Without a grace the three topics older than 60 s expire; with it
// only the one older than 90 s would.

// adminJSON sends a request to a real broker's admin API.
func adminJSON(t *testing.T, method, url string, body any, out any) {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// backlogOf returns the backlog of subscription "sub" of a topic.
func backlogOf(t *testing.T, admin, topic string) int64 {
	var stats struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	adminJSON(t, http.MethodGet, admin+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/stats", nil, &stats)
	return stats.Subscriptions["sub"].MsgBacklog
}

func TestTTLEvidenceRealBrokerGivesConnectedSubscriptionsNoGrace(t *testing.T) {
	if os.Getenv("PULSAR_TTL_EVIDENCE") == "" {
		t.Skip("set PULSAR_TTL_EVIDENCE=1 (with PULSAR_URL and PULSAR_ADMIN_URL) to measure a real broker's TTL check; it takes up to ten minutes")
	}
	url, admin := oracleURL(t), os.Getenv("PULSAR_ADMIN_URL")
	ns := fmt.Sprintf("public/ttl-evidence-%d", time.Now().Unix())
	adminJSON(t, http.MethodPut, admin+"/admin/v2/namespaces/"+ns, map[string]any{}, nil)
	adminJSON(t, http.MethodPost, admin+"/admin/v2/namespaces/"+ns+"/messageTTL", 60, nil)
	tg := scenarios.RemoteTarget(t, url, admin)
	client := tg.Client()
	topic := func(name string) string { return "persistent://" + ns + "/" + name }

	// A probe shows when a check runs: its only subscription has no
	// consumer, so a check expires its message once that is 60 s old.
	probe := topic("probe")
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: probe, SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	tg.Produce(probe, 1, nil)
	deadline := time.Now().Add(7 * time.Minute)
	for backlogOf(t, admin, probe) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("no expiry check within 7 minutes")
		}
		time.Sleep(time.Second)
	}
	next := time.Now().Add(5 * time.Minute) // the next check, within a second
	t.Logf("a check ran at about %s; the next one is due at %s", time.Now().Format(time.TimeOnly), next.Format(time.TimeOnly))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ages := []time.Duration{95 * time.Second, 85 * time.Second, 75 * time.Second, 65 * time.Second, 45 * time.Second}
	names := map[time.Duration]string{}
	for _, age := range ages {
		time.Sleep(time.Until(next.Add(-age)))
		name := topic(fmt.Sprintf("held-%ds", int(age.Seconds())))
		names[age] = name
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name, SubscriptionName: "sub", Type: pulsar.Shared})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		tg.Produce(name, 2, nil)
		for range 2 {
			if _, err := cons.Receive(ctx); err != nil { // held, never acknowledged
				t.Fatal(err)
			}
		}
	}
	time.Sleep(time.Until(next.Add(15 * time.Second)))
	var expired, kept []string
	for _, age := range ages {
		if b := backlogOf(t, admin, names[age]); b == 0 {
			expired = append(expired, age.String())
		} else {
			kept = append(kept, age.String())
		}
	}
	t.Logf("at the check, with a TTL of 60 s and a consumer holding the messages: expired %v, kept %v", expired, kept)
	if strings.Join(expired, " ") != "1m35s 1m25s 1m15s 1m5s" || strings.Join(kept, " ") != "45s" {
		t.Fatalf("expired %v, kept %v; without a grace 65 s and older expire", expired, kept)
	}
}
