package clients_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// TestRealClientsAcrossATopicMove runs each client's driver against a
// two-broker cluster and moves its topic to the other broker while the
// driver holds a message it has nacked once and then left unanswered: the
// message comes back from the new owner with its redelivery count back at 0
// (Pulsar keeps the counts in the broker's memory), the handler acks it,
// and nothing is lost. The counts are read from the brokers' events, as
// the Rust crate does not hand them to its application.
func TestRealClientsAcrossATopicMove(t *testing.T) {
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("real-client scenarios (Rust, Java, Python) are off. Run them with: %s", runCommand)
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			argv := c.ensure(t)
			t.Parallel()
			runAcrossAMove(t, c, argv)
		})
	}
}

func runAcrossAMove(t *testing.T, c *client, argv []string) {
	cl := testkit.StartCluster(t, 2)
	topic := "persistent://public/default/moving-" + c.name
	const messages = 5
	cl.Move(topic, 1) // the first lookup gives it to broker 1
	spec := map[string]any{
		"service_url":       cl.Broker(0).URL(),
		"topic":             topic,
		"subscription":      "sub",
		"subscription_type": "Shared",
		"messages":          messages,
		"nack_delay_ms":     100,
		"script":            map[string][]string{"3": {"nack", "none", "ack"}},
		"default":           "ack",
		"stop":              map[string]any{"stdin_eof": true},
		"deadline_ms":       120000,
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
	attempts := func(i int) int {
		n := 0
		for _, l := range p.snapshot() {
			if l.Event == "received" && l.I == i {
				n++
			}
		}
		return n
	}
	// The driver holds message 3 unanswered (its second delivery).
	if !waitUntil(90*time.Second, func() bool { return attempts(3) >= 2 || p.hasExited() }) || p.hasExited() {
		t.Fatalf("%s: message 3 was not delivered twice on broker 1", c.name)
	}
	cl.Move(topic, 0)
	if !waitUntil(90*time.Second, func() bool {
		if p.hasExited() || cl.Owner(topic) != 0 {
			return p.hasExited()
		}
		s, ok := cl.Broker(0).Subscription(topic, "sub")
		return ok && s.Backlog == 0 && attempts(3) >= 3
	}) || p.hasExited() {
		t.Fatalf("%s: the subscription did not settle on broker 0 after the move", c.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.stop(ctx); err != nil {
		t.Fatalf("%s driver: %v", c.name, err)
	}

	acked := map[int]bool{}
	for _, l := range p.snapshot() {
		switch l.Event {
		case "error":
			t.Fatalf("%s driver reported an error: %s", c.name, l.Message)
		case "received":
			if l.Action == "ack" {
				acked[l.I] = true
			}
		}
	}
	for i := range messages {
		if !acked[i] {
			t.Errorf("%s: message %d was never acked by the handler", c.name, i)
		}
	}
	// Message 3's deliveries by each broker, with their counts.
	countsOn := func(b int) []int32 {
		var out []int32
		for _, e := range cl.Broker(b).Events() {
			if e.Kind == testkit.EventDelivered && e.Topic == topic && e.ID.Entry == 3 {
				out = append(out, e.RedeliveryCount)
			}
		}
		return out
	}
	if got := countsOn(1); !slices.Equal(got, []int32{0, 1}) {
		t.Errorf("%s: broker 1 delivered message 3 with counts %v, want [0 1] (a nack, then held)", c.name, got)
	}
	if got := countsOn(0); len(got) == 0 || got[0] != 0 {
		t.Errorf("%s: broker 0 delivered message 3 with counts %v, want it first with 0 after the move", c.name, got)
	}
}
