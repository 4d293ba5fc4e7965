package scenarios_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// batchIndexTrace acks the even messages of one batch of ten and nacks the
// odd ones, with batch-index acknowledgement on, and returns what came back.
func batchIndexTrace(t *testing.T, tg *scenarios.Target, topic string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := tg.Drive(testkit.DriverOptions{
		Consumer: pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
			// The nacks wait long enough for every ack of the batch to reach
			// the broker first: an ack that names batch indexes clears the
			// entry's count, and a real broker, slower to dispatch, would
			// otherwise send the batch again with the count cleared.
			EnableBatchIndexAcknowledgment: true, NackRedeliveryDelay: 500 * time.Millisecond},
		Script: func(m pulsar.Message, attempt int) testkit.Outcome {
			i, _ := strconv.Atoi(string(m.Payload()))
			if attempt == 0 && i%2 == 1 {
				return testkit.Nack
			}
			return testkit.Ack
		},
	})
	p, err := tg.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10,
		BatchingMaxPublishDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan error, 10)
	for i := range 10 {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(i))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Settled: every message acked at least once, then no new delivery for
	// half a second (a redelivered batch may bring acked messages again).
	seen, changed := 0, time.Now()
	d.Wait(ctx, "every message acked and no more deliveries", func(ds []testkit.Delivery) bool {
		if len(ds) != seen {
			seen, changed = len(ds), time.Now()
		}
		acked := map[string]bool{}
		for _, del := range ds {
			if del.Acked {
				acked[string(del.Payload)] = true
			}
		}
		return len(acked) == 10 && time.Since(changed) > 500*time.Millisecond
	})
	var out []string
	for _, del := range d.Deliveries() {
		out = append(out, fmt.Sprintf("%s count=%d batch=%s %s", del.Payload, del.RedeliveryCount,
			del.ID[len(del.ID)-1:], del.Outcome))
	}
	sort.Strings(out)
	return out
}

// TestDifferentialBatchIndexAck compares what a client that acks single
// batch indexes sees when it acks half a batch and nacks the other half.
// Pulsar 4.0 ships with batch-index acks off, and so does pulsarsim by
// default: the partial acks are ignored and the whole batch comes back.
func TestDifferentialBatchIndexAck(t *testing.T) {
	url := oracleURL(t)
	topic := fmt.Sprintf("persistent://public/default/batch-index-%x", rand.Uint32())
	sim := batchIndexTrace(t, scenarios.SimTarget(t), topic)
	real := batchIndexTrace(t, scenarios.RemoteTarget(t, url, ""), topic)
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("batch-index ack differs (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both: %v", sim)
}
