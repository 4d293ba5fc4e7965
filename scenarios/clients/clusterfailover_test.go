package clients_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// TestClientsClusterFailoverMovesBetweenTwoClustersAndBack runs the Java
// and Python drivers with their client's own cluster failover over two
// independent pulsarsim clusters, primary and secondary: each produces and
// consumes on the primary, the primary is cut off (its port refuses
// connections), the client switches to the secondary and goes on producing
// and consuming there, the primary comes back, and the client switches
// back to it. AutoClusterFailover (Java's, and the C++ one inside the
// Python client) finds the primary gone by probing its port; Java's
// ControlledClusterFailover is told which cluster to use by a URL provider
// the test serves, as an operator's service would.
func TestClientsClusterFailoverMovesBetweenTwoClustersAndBack(t *testing.T) {
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("real-client scenarios (Rust, Java, Python) are off. Run them with: %s", runCommand)
	}
	modes := map[string][]string{"java": {"auto", "controlled"}, "python": {"auto"}}
	for _, c := range clients {
		if modes[c.name] == nil {
			continue // the Rust crate has no cluster failover
		}
		t.Run(c.name, func(t *testing.T) {
			argv := c.ensure(t)
			for _, mode := range modes[c.name] {
				t.Run(mode, func(t *testing.T) { runClusterFailover(t, argv, mode) })
			}
		})
	}
}

func runClusterFailover(t *testing.T, argv []string, mode string) {
	primary := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("primary")))
	secondary := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("secondary")))
	const topic = "persistent://public/default/failing-over"
	spec := map[string]any{
		"service_url":       primary.Broker(0).URL(),
		"topic":             topic,
		"subscription":      "sub",
		"subscription_type": "Shared",
		"messages":          0,
		"produce_on_stdin":  true,
		"default":           "ack",
		"stop":              map[string]any{"stdin_eof": true},
		"deadline_ms":       240000,
	}
	// The URL provider of ControlledClusterFailover answers the cluster the
	// test chooses.
	var current atomic.Value
	current.Store(primary.Broker(0).URL())
	if mode == "auto" {
		spec["failover"] = map[string]any{"secondary": secondary.Broker(0).URL(), "check_interval_ms": 100,
			"failover_delay_ms": 300, "switch_back_delay_ms": 300}
	} else {
		provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"serviceUrl": current.Load().(string)})
		}))
		t.Cleanup(provider.Close)
		spec["controlled_failover"] = map[string]any{"url_provider": provider.URL, "check_interval_ms": 100}
	}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(file, js, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startDriver(t, argv, file)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("scenario:\n%s\ndriver output:\n%s", js, p.dump())
		}
	})
	seen := func(event string, i int) bool {
		for _, l := range p.snapshot() {
			if l.Event == event && l.I == i {
				return true
			}
		}
		return false
	}
	serviceURL := func() string {
		url := ""
		for _, l := range p.snapshot() {
			if l.Event == "service_url" {
				url = l.Payload
			}
		}
		return url
	}
	// produce asks the driver for message i and waits until it was
	// produced and received, and the cluster on holds it.
	produce := func(i int, on *testkit.Cluster, where string) {
		t.Helper()
		if _, err := io.WriteString(p.stdin, "produce\n"); err != nil {
			t.Fatal(err)
		}
		if !waitUntil(90*time.Second, func() bool { return p.hasExited() || (seen("produced", i) && seen("received", i)) }) ||
			p.hasExited() {
			t.Fatalf("%s: message %d was not produced and received on the %s", mode, i, where)
		}
		// Its ack reaches the cluster before the test goes on: an ack the
		// client still holds when it switches clusters is sent to the other
		// one, where the message with the same id (both clusters number
		// their ledgers from the start) would be acked unseen.
		if !waitUntil(90*time.Second, func() bool {
			s, ok := on.Broker(0).Subscription(topic, "sub")
			return p.hasExited() || (ok && s.Backlog == 0)
		}) || p.hasExited() {
			t.Fatalf("%s: message %d was not acked on the %s", mode, i, where)
		}
		ts, ok := on.Broker(0).Topic(topic)
		if !ok || ts.Entries == 0 {
			t.Fatalf("%s: the %s has no message of %s", mode, where, topic)
		}
		found := false
		for _, m := range on.Broker(0).Messages(topic) {
			found = found || string(m.Payload) == fmt.Sprint("m", i)
		}
		if !found {
			t.Errorf("%s: message %d is not on the %s", mode, i, where)
		}
	}
	waitURL := func(want, where string) {
		t.Helper()
		if !waitUntil(90*time.Second, func() bool { return p.hasExited() || serviceURL() == want }) || p.hasExited() {
			t.Fatalf("%s: the client did not switch to the %s (its service URL: %q)", mode, where, serviceURL())
		}
	}

	waitURL(primary.Broker(0).URL(), "primary")
	produce(0, primary, "primary")

	primary.CutOff()
	current.Store(secondary.Broker(0).URL())
	waitURL(secondary.Broker(0).URL(), "secondary")
	produce(1, secondary, "secondary")

	primary.Reconnect()
	current.Store(primary.Broker(0).URL())
	waitURL(primary.Broker(0).URL(), "primary")
	produce(2, primary, "primary again")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.stop(ctx); err != nil {
		t.Fatalf("%s driver: %v", mode, err)
	}
	for _, l := range p.snapshot() {
		if l.Event == "error" {
			t.Fatalf("%s driver reported an error: %s", mode, l.Message)
		}
	}
	if got := len(secondary.Broker(0).Messages(topic)); got != 1 {
		t.Errorf("%s: the secondary holds %d messages, want the one produced while the primary was away", mode, got)
	}
}
