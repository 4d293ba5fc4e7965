package scenarios_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// assignment records which consumer each key (Key_Shared) or the whole
// topic (Failover) went to, on one target, for a topic named the same on
// both brokers: the choice hashes the consumer names, the keys and, for
// Failover on a non-partitioned topic, the topic name.
func assignment(t *testing.T, tg *scenarios.Target, topic string, typ pulsar.SubscriptionType, keys []string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := tg.Drive(testkit.DriverOptions{
		Consumer:  pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: typ},
		Consumers: 3,
	})
	p, err := tg.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, k := range keys {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: k, Payload: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	d.Wait(ctx, "every key delivered", func(ds []testkit.Delivery) bool { return len(ds) >= len(keys) })
	got := map[string]string{}
	for _, del := range d.Deliveries() {
		got[del.Key] = del.Consumer
	}
	return got
}

// TestDifferentialConsumerSelection checks that pulsarsim picks the same
// consumer as Pulsar: for each key on Key_Shared (consistent hashing over
// the consumer names), and the active consumer on Failover.
func TestDifferentialConsumerSelection(t *testing.T) {
	url := oracleURL(t)
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	for name, typ := range map[string]pulsar.SubscriptionType{"Key_Shared": pulsar.KeyShared, "Failover": pulsar.Failover} {
		t.Run(name, func(t *testing.T) {
			topic := fmt.Sprintf("persistent://public/default/select-%d-%x", typ, rand.Uint32())
			sim := assignment(t, scenarios.SimTarget(t), topic, typ, keys)
			real := assignment(t, scenarios.RemoteTarget(t, url, ""), topic, typ, keys)
			if diff := cmp.Diff(real, sim); diff != "" {
				t.Fatalf("consumer selection differs (-real +pulsarsim):\n%s", diff)
			}
			spread := map[string]int{}
			for _, c := range sim {
				spread[c]++
			}
			t.Logf("keys per consumer on both brokers: %v", spread)
		})
	}
}
