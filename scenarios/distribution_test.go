package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The batch sizes of the batched Shared distribution: 20 batches of 10
// messages, then 10 single messages. One read of these 30 entries holds 210
// messages, 7 per entry on average; a turn gives a consumer with permits to
// spare min(20, ceil(left / 7)) entries, so the first consumer gets 20 batches
// and the last few entries alternate.
var distributionBatches = func() []int {
	var sizes []int
	for i := 0; i < 30; i++ {
		if i < 20 {
			sizes = append(sizes, 10)
		} else {
			sizes = append(sizes, 1)
		}
	}
	return sizes
}()

// consumerPermits returns, for each consumer of the subscription, the permits
// the broker has recorded: from pulsarsim's inspection, or from a real
// broker's topic stats.
func consumerPermits(t *testing.T, tg *scenarios.Target, topic, sub string) map[string]int {
	out := map[string]int{}
	if b := tg.Inspect(); b != nil {
		s, ok := b.Subscription(topic, sub)
		if ok {
			for _, c := range s.Consumers {
				out[c.Name] = c.Permits
			}
		}
		return out
	}
	if tg.AdminURL == "" {
		t.Skip("needs PULSAR_ADMIN_URL to read the real broker's consumer permits")
	}
	path := strings.TrimPrefix(topic, "persistent://")
	resp, err := http.Get(tg.AdminURL + "/admin/v2/persistent/" + path + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct {
		Subscriptions map[string]struct {
			Consumers []struct {
				ConsumerName     string `json:"consumerName"`
				AvailablePermits int    `json:"availablePermits"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	for _, c := range stats.Subscriptions[sub].Consumers {
		out[c.ConsumerName] = c.AvailablePermits
	}
	return out
}

// sharedSplit records which of two Shared consumers gets each message when
// they share one read of batched entries: a third consumer takes every entry
// while it is alone, the two others join with permits, and the third closes,
// so that all of its entries go back to the subscription and are read again
// at once, with both consumers available. The reads of the first consumer
// may be cut anywhere by timing; the one read after it closed is not.
func sharedSplit(t *testing.T, tg *scenarios.Target, topic string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := tg.Client()
	subscribe := func(name string) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
			Name: name, ReceiverQueueSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	first := subscribe("first")
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 1000,
		BatchingMaxPublishDelay: time.Hour, BatchingMaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	total := 0
	for entry, size := range distributionBatches {
		for j := 0; j < size; j++ {
			p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("m"),
				Properties: map[string]string{"m": fmt.Sprintf("%d.%d", entry, j)}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Error(err)
				}
			})
			total++
		}
		if err := p.FlushWithCtx(ctx); err != nil { // one entry of `size` messages
			t.Fatal(err)
		}
	}
	for i := 0; i < total; i++ {
		if _, err := first.Receive(ctx); err != nil {
			t.Fatalf("the first consumer got %d of %d messages: %v", i, total, err)
		}
	}
	a, b := subscribe("a"), subscribe("b")
	for {
		perm := consumerPermits(t, tg, topic, "sub")
		if perm["a"] == 1000 && perm["b"] == 1000 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the broker never recorded both consumers' permits: %v", perm)
		case <-time.After(50 * time.Millisecond):
		}
	}
	first.Close()

	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for name, c := range map[string]pulsar.Consumer{"a": a, "b": b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := c.Receive(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				got[m.Properties()["m"]] = name
				done := len(got) == total
				mu.Unlock()
				if done {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if len(got) != total {
		t.Fatalf("a and b got %d of %d messages", len(got), total)
	}
	return got
}

// entriesBy summarises a split as the entries each consumer got.
func entriesBy(split map[string]string) map[string][]int {
	out := map[string][]int{}
	seen := map[string]bool{}
	for entry := range distributionBatches {
		name := split[fmt.Sprintf("%d.0", entry)]
		if !seen[strconv.Itoa(entry)] {
			out[name] = append(out[name], entry)
			seen[strconv.Itoa(entry)] = true
		}
	}
	return out
}

// TestDifferentialBatchedSharedDistribution checks that pulsarsim splits a
// read of batched entries between Shared consumers as Pulsar does: per
// message, which consumer got it.
func TestDifferentialBatchedSharedDistribution(t *testing.T) {
	oracle := oracleURL(t)
	topic := fmt.Sprintf("persistent://public/default/batched-split-%s", url.PathEscape(strconv.FormatInt(time.Now().UnixNano(), 36)))
	sim := sharedSplit(t, scenarios.SimTarget(t), topic)
	real := sharedSplit(t, scenarios.RemoteTarget(t, oracle, os.Getenv("PULSAR_ADMIN_URL")), topic)
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("the messages went to different consumers (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("entries per consumer on both brokers: %v", entriesBy(sim))
}

// keyMovingTo returns a key that Key_Shared gives to consumer "b" once it
// joins "a" (the choice depends on the consumer names only, and pulsarsim
// makes it as Pulsar does: TestDifferentialConsumerSelection).
func keyMovingTo(t *testing.T) string {
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("move-%d", i)
	}
	tg := scenarios.SimTarget(t)
	client := tg.Client()
	topic := tg.Topic("probe-keys")
	for _, name := range []string{"a", "b"} {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.KeyShared, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if name == "b" {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for _, k := range keys {
				if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: k, Payload: []byte(k)}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("no key went to b: %v", err)
			}
			return m.Key()
		}
	}
	return ""
}

// keyMove sends a key to "a", lets "b" join and take the key over, and
// reports whether b got the key's next message while a still held the first.
func keyMove(t *testing.T, tg *scenarios.Target, topic, key string, outOfOrder bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tg.Client()
	subscribe := func(name string) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.KeyShared,
			Name: name, KeySharedPolicy: &pulsar.KeySharedPolicy{AllowOutOfOrderDelivery: outOfOrder}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(payload string) {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	a := subscribe("a")
	send("first")
	m1, err := a.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := subscribe("b")
	send("second")
	var out []string
	wait, stop := context.WithTimeout(ctx, 5*time.Second)
	m2, err := b.Receive(wait)
	stop()
	if err == nil {
		out = append(out, "b got "+string(m2.Payload())+" while a held the first")
	}
	if err := a.Ack(m1); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		m2, err = b.Receive(ctx)
		if err != nil {
			t.Fatalf("b never got the second message: %v", err)
		}
		out = append(out, "b got "+string(m2.Payload())+" once a acknowledged the first")
	}
	return out
}

// TestDifferentialKeySharedOutOfOrderDelivery checks that a key moving to a
// new consumer waits until its old consumer has acknowledged what it holds
// (Pulsar's draining), unless the subscription allows out-of-order
// delivery, on both brokers.
func TestDifferentialKeySharedOutOfOrderDelivery(t *testing.T) {
	oracle := oracleURL(t)
	key := keyMovingTo(t)
	for _, outOfOrder := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowOutOfOrderDelivery=%v", outOfOrder), func(t *testing.T) {
			topic := fmt.Sprintf("persistent://public/default/key-move-%v-%s", outOfOrder, strconv.FormatInt(time.Now().UnixNano(), 36))
			sim := keyMove(t, scenarios.SimTarget(t), topic, key, outOfOrder)
			real := keyMove(t, scenarios.RemoteTarget(t, oracle, ""), topic, key, outOfOrder)
			if diff := cmp.Diff(real, sim); diff != "" {
				t.Fatalf("the key moved differently (-real +pulsarsim):\n%s", diff)
			}
			t.Logf("both: %v", sim)
		})
	}
}
