package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// A persistence policy is refused unless ensemble >= write quorum >= ack
// quorum, each within the broker's limit of 5, with Pulsar's reasons.
func TestPersistenceQuorumsAreCheckedAsPulsarChecksThem(t *testing.T) {
	_, _, base := startAdmin(t)
	const path = "/admin/v2/namespaces/public/default/persistence"
	for body, want := range map[string]string{
		`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`: "Bookkeeper Ensemble (1) >= WriteQuorum (2) >= AckQuorum (1)",
		`{"bookkeeperEnsemble":6,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1}`: "Bookkeeper-Ensemble must be <= 5 and > 0.",
		`{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":0}`: "Bookkeeper-AckQuorum must be <= 5 and > 0.",
		``: "persistence policies should not be null",
	} {
		if status, got := call(t, base, "POST", path, body); status != http.StatusBadRequest || !strings.Contains(string(got), want) {
			t.Errorf("POST %s: %d %s, want 400 %q", body, status, got, want)
		}
	}
	if status, got := call(t, base, "GET", path, ""); status != http.StatusOK || len(got) != 0 {
		t.Fatalf("a refused policy was kept: %d %s", status, got)
	}
}

// The replication clusters of a standalone can only name its cluster.
func TestReplicationClustersNameOnlyTheStandalone(t *testing.T) {
	_, _, base := startAdmin(t)
	const path = "/admin/v2/namespaces/public/default/replication"
	if status, got := call(t, base, "POST", path, `["elsewhere"]`); status != http.StatusForbidden ||
		!strings.Contains(string(got), "Invalid cluster id: elsewhere") {
		t.Fatalf("another cluster: %d %s", status, got)
	}
	if status, got := call(t, base, "POST", path, `["standalone","standalone"]`); status != http.StatusOK {
		t.Fatalf("the standalone: %d %s", status, got)
	}
	if status, got := call(t, base, "GET", path, ""); status != http.StatusOK || string(got) != `["standalone"]` {
		t.Fatalf("GET: %d %s", status, got)
	}
}

// A namespace's clearBacklog empties the backlog of the subscription on
// every topic of the namespace, and its unsubscribe deletes the
// subscription from every topic, as a pulsar-client-go consumer then sees.
func TestNamespaceClearBacklogAndUnsubscribeReachEveryTopic(t *testing.T) {
	b, a, base := startAdmin(t)
	c := newClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics := []string{"persistent://public/default/nsclear-a", "persistent://public/default/nsclear-b"}
	for _, topic := range topics {
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatal(err)
		}
		cons.Close()
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
	}
	if status, got := call(t, base, "POST", "/admin/v2/namespaces/public/default/clearBacklog/s", ""); status != http.StatusNoContent {
		t.Fatalf("clearBacklog: %d %s", status, got)
	}
	for _, topic := range topics {
		st, err := a.Topics().GetStats(topicName(t, topic))
		if err != nil || st.Subscriptions["s"].MsgBacklog != 0 {
			t.Fatalf("%s after clearBacklog: %+v, %v", topic, st.Subscriptions, err)
		}
	}
	if status, got := call(t, base, "POST", "/admin/v2/namespaces/public/default/unsubscribe/s", ""); status != http.StatusNoContent {
		t.Fatalf("unsubscribe: %d %s", status, got)
	}
	for _, topic := range topics {
		subs, err := a.Subscriptions().List(topicName(t, topic))
		if err != nil || len(subs) != 0 {
			t.Fatalf("%s after unsubscribe: %v, %v", topic, subs, err)
		}
	}
}

// Without tiered storage an offload is accepted and fails: its status goes
// from NOT_RUN to Pulsar's error of the null offloader.
func TestOffloadWithoutTieredStorageReportsTheNullOffloadersError(t *testing.T) {
	b, _, base := startAdmin(t)
	if err := b.CreateTopic("persistent://public/default/off"); err != nil {
		t.Fatal(err)
	}
	const path = "/admin/v2/persistent/public/default/off/offload"
	if _, got := call(t, base, "GET", path, ""); !strings.Contains(string(got), `"status":"NOT_RUN"`) {
		t.Fatalf("before: %s", got)
	}
	if status, got := call(t, base, "PUT", path, `{"ledgerId":1,"entryId":0}`); status != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", status, got)
	}
	if _, got := call(t, base, "GET", path, ""); !strings.Contains(string(got), `"status":"ERROR"`) ||
		!strings.Contains(string(got), "[NullLedgerOffloader] does not support offload") {
		t.Fatalf("after: %s", got)
	}
}
