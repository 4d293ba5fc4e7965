package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// nonPersistentIDStory notes the ids a non-persistent topic gives its
// messages, in the receipts and on delivery, and what pulsar-client-go does
// with a message that arrives while the acknowledgement of an earlier one
// waits in its grouping window: every message of a non-persistent topic has
// the same id, so the client takes the new one for a redelivery of the
// acknowledged one and drops it.
func nonPersistentIDStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	client := tg.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := strings.Replace(tg.Topic("np-ids"), "persistent://", "non-persistent://", 1)
	subscribe := func(sub string, grouping pulsar.AckGroupingOptions) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
			AckGroupingOptions: &grouping})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		// A non-persistent topic drops what a consumer without permits
		// would get, and the first FLOW goes out from a goroutine.
		awaitPermits(t, admin, topic, sub)
		return c
	}
	// One consumer holds its acknowledgements for an hour, the other sends
	// each at once (a group of one).
	holding := subscribe("holding", pulsar.AckGroupingOptions{MaxSize: 1000, MaxTime: time.Hour})
	prompt := subscribe("prompt", pulsar.AckGroupingOptions{MaxSize: 1})
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	var notes []string
	send := func(payload string) {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)})
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, fmt.Sprintf("receipt %s: ledger %d entry %d", payload, id.LedgerID(), id.EntryID()))
	}
	receive := func(c pulsar.Consumer, name string, wait time.Duration) {
		rctx, rcancel := context.WithTimeout(ctx, wait)
		defer rcancel()
		m, err := c.Receive(rctx)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			notes = append(notes, name+": nothing")
			return
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		}
		c.Ack(m)
		notes = append(notes, fmt.Sprintf("%s: %s, ledger %d entry %d", name, m.Payload(), m.ID().LedgerID(), m.ID().EntryID()))
	}
	send("a")
	receive(holding, "holding", 10*time.Second)
	receive(prompt, "prompt", 10*time.Second)
	// "a"'s acknowledgement waits in holding's window, and "b" has its id.
	send("b")
	receive(prompt, "prompt", 10*time.Second)
	// Holding drops "b" whenever it comes: the acknowledgement waits an
	// hour. The second's wait only lets a kept "b" show.
	receive(holding, "holding", time.Second)
	return notes
}

// TestDifferentialNonPersistentMessagesShareAnID compares
// nonPersistentIDStory on pulsarsim and on a real Pulsar.
func TestDifferentialNonPersistentMessagesShareAnID(t *testing.T) {
	sameStoryOnBoth(t, nonPersistentIDStory)
}

// TestNonPersistentMessageIsDroppedWhileTheAckOfAnotherWaits runs
// nonPersistentIDStory against pulsarsim alone and checks what the client
// kept.
func TestNonPersistentMessageIsDroppedWhileTheAckOfAnotherWaits(t *testing.T) {
	tg := scenarios.SimTarget(t)
	got := nonPersistentIDStory(t, tg, tg.Sim.AdminURL())
	want := []string{
		"receipt a: ledger 0 entry 0", "holding: a, ledger 0 entry 0", "prompt: a, ledger 0 entry 0",
		"receipt b: ledger 0 entry 0", "prompt: b, ledger 0 entry 0", "holding: nothing",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("what the client kept differs (-want +got):\n%s", diff)
	}
}
