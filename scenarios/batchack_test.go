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

// batchIndexTrace acks the first five messages of one batch of ten and
// nacks the last five, with batch-index acknowledgement on, and returns
// what came back.
//
// Every ack comes before the first nack. Pulsar forgets an entry's
// redelivery count on any ack of it, one that names batch indexes too, so
// an ack that reached the broker after a nack's redelivery request would
// bring the batch back with count 0 instead of 1: with acks and nacks
// interleaved, the count depended on how fast the broker answered the acks
// against the nack delay. The acks are confirmed (AckWithResponse) before
// the handler moves on, so here the order on the wire is the script's.
func batchIndexTrace(t *testing.T, tg *scenarios.Target, topic string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := tg.Drive(testkit.DriverOptions{
		Consumer: pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
			// The five nacks follow one another in the handler without a
			// round trip: they reach the broker as one redelivery request.
			EnableBatchIndexAcknowledgment: true, NackRedeliveryDelay: 500 * time.Millisecond},
		Script: func(m pulsar.Message, attempt int) testkit.Outcome {
			i, _ := strconv.Atoi(string(m.Payload()))
			if attempt == 0 && i >= 5 {
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
