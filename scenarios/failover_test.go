package scenarios_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// subscriptionStats reads a subscription's consumers from the admin API's
// topic stats: name to connectedSince, and the active consumer's name.
func subscriptionStats(t *testing.T, adminURL, topic, sub string) (since map[string]string, active string) {
	path := strings.TrimPrefix(topic, "persistent://")
	resp, err := http.Get(adminURL + "/admin/v2/persistent/" + path + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct {
		Subscriptions map[string]struct {
			ActiveConsumerName string `json:"activeConsumerName"`
			Consumers          []struct {
				ConsumerName   string `json:"consumerName"`
				ConnectedSince string `json:"connectedSince"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	since = map[string]string{}
	for _, c := range stats.Subscriptions[sub].Consumers {
		since[c.ConsumerName] = c.ConnectedSince
	}
	return since, stats.Subscriptions[sub].ActiveConsumerName
}

// failoverSeek seeks the active consumer of a Failover subscription with a
// standby, and reports what the standby saw of it: whether it was
// disconnected (its connection time changed) and whether it got a message.
func failoverSeek(t *testing.T, tg *scenarios.Target, adminURL, topic string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tg.Client()
	cons := map[string]pulsar.Consumer{}
	for _, name := range []string{"a", "b"} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Failover,
			Name: name, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		cons[name] = c
	}
	tg.Produce(topic, 2, nil)
	before, active := subscriptionStats(t, adminURL, topic, "sub")
	standby := map[string]string{"a": "b", "b": "a"}[active]
	if standby == "" {
		t.Fatalf("no active consumer in the stats: %q", active)
	}
	first, err := cons[active].Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons[active].Seek(first.ID()); err != nil {
		t.Fatal(err)
	}
	// The active consumer comes back and is served again.
	if _, err := cons[active].Receive(ctx); err != nil {
		t.Fatalf("the active consumer after the seek: %v", err)
	}
	after, activeAfter := subscriptionStats(t, adminURL, topic, "sub")
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	_, gotOne := cons[standby].Receive(short)
	return []string{
		"active after the seek is the one that sought: " + strconv.FormatBool(activeAfter == active),
		"standby reconnected: " + strconv.FormatBool(before[standby] != after[standby]),
		"active reconnected: " + strconv.FormatBool(before[active] != after[active]),
		"standby got a message: " + strconv.FormatBool(gotOne == nil),
	}
}

// TestDifferentialFailoverSeekClosesOnlyTheActiveConsumer checks that a seek
// on a Failover subscription disconnects the active consumer and leaves the
// standby connected, on both brokers.
func TestDifferentialFailoverSeekClosesOnlyTheActiveConsumer(t *testing.T) {
	oracle := oracleURL(t)
	admin := oracleAdmin(t)
	topic := "persistent://public/default/failover-seek-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	simTarget := scenarios.SimTarget(t)
	sim := failoverSeek(t, simTarget, simTarget.Sim.AdminURL(), topic)
	real := failoverSeek(t, scenarios.RemoteTarget(t, oracle, admin), admin, topic)
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("the seek differs (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both: %v", sim)
}
