package admin_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
)

// The properties pulsar-client-go gives a subscription it creates are shown
// in the topic's stats and read and replaced through the admin API; a
// consumer that joins later does not change them.
func TestSubscriptionPropertiesFromTheGoClientShowInStatsAndCanBeUpdated(t *testing.T) {
	b, _, base := startAdmin(t)
	client := newClient(t, b)
	const topic = "persistent://public/default/sub-props"
	const path = "/admin/v2/persistent/public/default/sub-props"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionProperties: map[string]string{"owner": "team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionProperties: map[string]string{"owner": "team-b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	check := func(want map[string]string) {
		t.Helper()
		status, body := call(t, base, "GET", path+"/subscription/s/properties", "")
		var got map[string]string
		if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Fatalf("GET properties: %d %s", status, body)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("properties (-want +got):\n%s", diff)
		}
		_, body = call(t, base, "GET", path+"/stats", "")
		var stats struct {
			Subscriptions map[string]struct {
				SubscriptionProperties map[string]string `json:"subscriptionProperties"`
			} `json:"subscriptions"`
		}
		if err := json.Unmarshal(body, &stats); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, stats.Subscriptions["s"].SubscriptionProperties); diff != "" {
			t.Fatalf("stats' subscriptionProperties (-want +got):\n%s", diff)
		}
	}
	check(map[string]string{"owner": "team-a"})
	if status, body := call(t, base, "PUT", path+"/subscription/s/properties", `{"owner":"team-c","stage":"2"}`); status != http.StatusNoContent {
		t.Fatalf("PUT properties: %d %s", status, body)
	}
	check(map[string]string{"owner": "team-c", "stage": "2"})
	if status, _ := call(t, base, "GET", path+"/subscription/none/properties", ""); status != http.StatusNotFound {
		t.Fatalf("GET properties of a missing subscription: %d, want 404", status)
	}
}
