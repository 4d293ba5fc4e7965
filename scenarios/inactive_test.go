package scenarios_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Inactive topics: a Pulsar 4.0 standalone deletes a topic that has had no
// subscriptions, producers or consumers for a minute, at its next check
// (every minute), with its messages.

// inactiveTopicsTrace leaves five topics in five states, lets two and a
// bit minutes pass (wait does it), and reports which topics are left and
// what a reader finds in them.
func inactiveTopicsTrace(t *testing.T, tg *scenarios.Target, admin string, wait func(time.Duration)) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tg.Client()
	name := func(s string) string { return tg.Topic("gc-" + s) }
	tg.Produce(name("produced"), 1, nil)

	sub, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name("subscribed"), SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close() // the durable subscription stays
	tg.Produce(name("subscribed"), 1, nil)

	open, err := client.CreateProducer(pulsar.ProducerOptions{Topic: name("producing")})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	tg.Produce(name("read"), 1, nil)
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: name("read"), StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()

	parted := name("parted")
	adminJSON(t, http.MethodPut, admin+"/admin/v2/persistent/"+strings.TrimPrefix(parted, "persistent://")+"/partitions", 2, nil)
	tg.Produce(parted, 2, nil)

	wait(125 * time.Second)

	var listed []string
	adminJSON(t, http.MethodGet, admin+"/admin/v2/persistent/public/default", nil, &listed)
	var out []string
	for _, s := range []string{"produced", "subscribed", "producing", "read", "parted-partition-0", "parted-partition-1"} {
		out = append(out, fmt.Sprintf("%s kept: %v", s, slices.Contains(listed, name(s))))
	}
	var meta struct{ Partitions int }
	adminJSON(t, http.MethodGet, admin+"/admin/v2/persistent/"+strings.TrimPrefix(parted, "persistent://")+"/partitions", nil, &meta)
	out = append(out, fmt.Sprintf("parted: %d partitions", meta.Partitions))
	for _, s := range []string{"produced", "subscribed"} {
		out = append(out, fmt.Sprintf("%s: a reader finds %d messages", s, len(tg.ReadAll(name(s), quietWindow))))
	}
	return out
}

// TestDifferentialInactiveTopicsAreDeleted compares which topics both
// brokers delete for inactivity, with their messages, and which they keep:
// a subscription or a connected producer keeps a topic; a reader that has
// gone does not; a partitioned topic keeps its metadata while its
// partitions go. Against the real broker it waits 125 s.
func TestDifferentialInactiveTopicsAreDeleted(t *testing.T) {
	url := oracleURL(t)
	admin := oracleAdmin(t)
	t.Parallel()
	simTarget := scenarios.SimTarget(t)
	sim := inactiveTopicsTrace(t, simTarget, simTarget.Sim.AdminURL(), simTarget.Sim.Advance)
	real := inactiveTopicsTrace(t, scenarios.RemoteTarget(t, url, admin), admin, time.Sleep)
	sameOnBoth(t, real, sim)
}
