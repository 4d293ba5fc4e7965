package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// clientTrace is what a client sees of one scenario, in a form that does not
// depend on the broker: messages by their index, redelivery counts and
// outcomes per attempt, dead-letter copies with their ids made relative to
// the first message's, and errors. Absolute ledger ids and timings differ
// between brokers by design and are left out.
type clientTrace struct {
	// Deliveries maps a message index to "count/outcome" per attempt.
	Deliveries map[string][]string
	// DeadLetters lists "index REAL_TOPIC=<topic name> ORIGIN=<entry offset>".
	DeadLetters []string
	Errors      []string
}

// diffScenario is a deterministic scenario: one consumer, unbatched
// messages, a script by message index and attempt.
type diffScenario struct {
	name          string
	typ           pulsar.SubscriptionType
	messages      int
	maxDeliveries uint32
	script        func(i, attempt int) testkit.Outcome
	consumers     int // default 1
}

var diffScenarios = []diffScenario{
	{"count carried, nack twice then ack", pulsar.Shared, 1, 0, firstN(2, testkit.Nack), 1},
	{"dead letter at the limit", pulsar.Shared, 1, 2, firstN(100, testkit.Nack), 1},
	{"below the limit the handler gets it", pulsar.Shared, 1, 3, firstN(2, testkit.Nack), 1},
	{"ack moves the cursor", pulsar.Shared, 3, 0, firstN(0, testkit.Nack), 1},
	{"Key_Shared counts", pulsar.KeyShared, 2, 3, firstN(1, testkit.Nack), 1},
	{"Exclusive count 0, no dead letter", pulsar.Exclusive, 1, 1, firstN(3, testkit.Nack), 1},
	{"Failover count 0, no dead letter", pulsar.Failover, 1, 1, firstN(3, testkit.Nack), 1},
	{"crashes do not count", pulsar.Shared, 1, 2, firstN(3, testkit.Crash), 1},
	{"even messages nacked once", pulsar.Shared, 6, 0, func(i, attempt int) testkit.Outcome {
		if i%2 == 0 && attempt == 0 {
			return testkit.Nack
		}
		return testkit.Ack
	}, 1},
	// The last consumer leaving makes the broker forget every count…
	{"last consumer leaving resets the count", pulsar.Shared, 1, 0, script(testkit.Nack, testkit.Crash), 1},
	// …while a consumer that stays keeps them.
	{"a remaining consumer keeps the count", pulsar.Shared, 1, 0, script(testkit.Nack, testkit.Crash), 2},
}

// script plays the given outcomes for every message's attempts, then acks.
func script(outcomes ...testkit.Outcome) func(int, int) testkit.Outcome {
	return func(_, attempt int) testkit.Outcome {
		if attempt < len(outcomes) {
			return outcomes[attempt]
		}
		return testkit.Ack
	}
}

func firstN(n int, o testkit.Outcome) func(int, int) testkit.Outcome {
	return func(_, attempt int) testkit.Outcome {
		if attempt < n {
			return o
		}
		return testkit.Ack
	}
}

// runForTrace runs one scenario on a target and returns its client trace.
func runForTrace(t *testing.T, tg *scenarios.Target, sc diffScenario) clientTrace {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic, dlq := tg.Topic("diff"), tg.Topic("diff-dlq")
	co := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: sc.typ,
		NackRedeliveryDelay: 20 * time.Millisecond}
	if sc.maxDeliveries > 0 {
		co.DLQ = &pulsar.DLQPolicy{MaxDeliveries: sc.maxDeliveries, DeadLetterTopic: dlq}
	}
	d := tg.Drive(testkit.DriverOptions{Consumer: co, Consumers: sc.consumers, Script: func(m pulsar.Message, attempt int) testkit.Outcome {
		i, _ := strconv.Atoi(m.Properties()["i"])
		return sc.script(i, attempt)
	}})
	ids := tg.Produce(topic, sc.messages, nil)

	// Settled: each message acked, or (with a dead-letter policy) copied to
	// the dead-letter topic.
	var dead []pulsar.Message
	d.Wait(ctx, "every message settled", func(ds []testkit.Delivery) bool {
		done := map[string]bool{}
		for _, del := range ds {
			if del.Acked {
				done[del.Properties["i"]] = true
			}
		}
		if len(done) == sc.messages {
			return true
		}
		if sc.maxDeliveries == 0 {
			return false
		}
		dead = tg.ReadAll(dlq, 200*time.Millisecond)
		for _, m := range dead {
			done[m.Properties()["i"]] = true
		}
		return len(done) == sc.messages
	})
	d.Close()
	if sc.maxDeliveries > 0 {
		dead = tg.ReadAll(dlq, 300*time.Millisecond)
	}

	tr := clientTrace{Deliveries: map[string][]string{}}
	for _, del := range d.Deliveries() {
		i := del.Properties["i"]
		tr.Deliveries[i] = append(tr.Deliveries[i], fmt.Sprintf("%d/%s", del.RedeliveryCount, del.Outcome))
	}
	for _, m := range dead {
		p := m.Properties()
		real := strings.TrimSuffix(p["REAL_TOPIC"], topic[strings.LastIndex(topic, "/diff"):])
		var ledger, entry int64
		fmt.Sscanf(p["ORIGIN_MESSAGE_ID"], "%d:%d", &ledger, &entry)
		tr.DeadLetters = append(tr.DeadLetters, fmt.Sprintf("%s REAL_TOPIC=%s/diff ORIGIN=%d", p["i"], real,
			entry-ids[0].EntryID()+100*(ledger-ids[0].LedgerID())))
	}
	sort.Strings(tr.DeadLetters)
	return tr
}

// TestDifferentialAgainstRealPulsar runs each deterministic scenario on
// pulsarsim and on the Pulsar named by PULSAR_URL, and compares what the
// client saw. Without PULSAR_URL it is skipped (scripts/real-pulsar starts
// one: see FIDELITY.md).
func TestDifferentialAgainstRealPulsar(t *testing.T) {
	url := oracleURL(t)
	for _, sc := range diffScenarios {
		t.Run(sc.name, func(t *testing.T) {
			sim := runForTrace(t, scenarios.SimTarget(t), sc)
			real := runForTrace(t, scenarios.RemoteTarget(t, url, os.Getenv("PULSAR_ADMIN_URL")), sc)
			if diff := cmp.Diff(real, sim); diff != "" {
				t.Fatalf("pulsarsim differs from Pulsar (-real +pulsarsim):\n%s", diff)
			}
			t.Logf("both: %v dead letters %v", sim.Deliveries, sim.DeadLetters)
		})
	}
}

// oracleURL returns the real Pulsar that the differential tests compare
// pulsarsim with (PULSAR_URL), and skips the test when there is none.
func oracleURL(t *testing.T) string {
	url := os.Getenv("PULSAR_URL")
	if url == "" {
		t.Skip("set PULSAR_URL to a real Pulsar (scripts/real-pulsar start) to compare it with pulsarsim")
	}
	return url
}
