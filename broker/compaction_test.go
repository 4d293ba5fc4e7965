package broker_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// sendKeyed publishes one message per (key, value) pair through a real
// producer; an empty value is a tombstone, an empty key no key at all.
func sendKeyed(t *testing.T, p pulsar.Producer, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		m := &pulsar.ProducerMessage{Key: kv[i], Payload: []byte(kv[i+1])}
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads a topic with a read-compacted reader from the earliest
// message, until it has nothing more, as "key=value" strings.
func readAll(t *testing.T, c pulsar.Client, topic string, compacted bool) []string {
	t.Helper()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(),
		ReadCompacted: compacted})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, m.Key()+"="+string(m.Payload()))
	}
	return out
}

func TestReadCompactedReaderGetsTheLatestValuePerKeyThenNewMessages(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "kv", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendKeyed(t, p, "a", "1", "b", "1", "a", "2", "", "keyless", "c", "1", "b", "", "c", "2")
	b.Compact("kv")
	sendKeyed(t, p, "a", "3", "", "late keyless")
	got := readAll(t, c, "kv", true)
	want := []string{"a=2", "c=2", "a=3", "=late keyless"}
	if !slices.Equal(got, want) {
		t.Fatalf("compacted read %v, want %v", got, want)
	}
	// pulsar-client-go drops a message with an empty payload that is not
	// in a batch (the tombstone of b), on Pulsar too.
	whole := []string{"a=1", "b=1", "a=2", "=keyless", "c=1", "c=2", "a=3", "=late keyless"}
	if all := readAll(t, c, "kv", false); !slices.Equal(all, whole) {
		t.Fatalf("a reader not reading compacted got %v, want %v", all, whole)
	}
	if st, _ := b.Topic("kv"); !slices.Contains(st.Subscriptions, broker.CompactionSubscription) {
		t.Fatalf("no %s subscription in %v", broker.CompactionSubscription, st.Subscriptions)
	}
}

func TestCompactionRewritesBatchesKeepingTheLatestMessages(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "kvb", BatchingMaxMessages: 4,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for i, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}, {"", "x"}, {"c", "1"}, {"b", ""}, {"d", "1"}, {"c", "2"}} {
		p.SendAsync(ctx, &pulsar.ProducerMessage{Key: kv[0], Payload: []byte(kv[1])}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Errorf("message %d: %v", i, err)
			}
		})
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	b.Compact("kvb")
	got := readAll(t, c, "kvb", true)
	// The messages compacted out keep their places in their batches:
	// pulsar-client-go hands them out as empty messages without a key, as
	// it does on Pulsar (the Java client skips them).
	want := []string{"=", "=", "a=2", "=", "=", "=", "d=1", "c=2"}
	if !slices.Equal(got, want) {
		t.Fatalf("compacted read %v, want %v", got, want)
	}
}

func TestTableViewOverACompactedTopicHoldsTheLatestValues(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "table", DisableBatching: true,
		Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 20 {
		sendKeyed(t, p, fmt.Sprint("k", i%5), fmt.Sprint("v", i))
	}
	sendKeyed(t, p, "k3", "") // removed by the compaction
	b.Compact("table")
	// After the horizon, a tombstone in a batch: pulsar-client-go drops
	// a tombstone sent alone (an empty message outside a batch), on Pulsar
	// too, so only a batched one reaches the TableView.
	bp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "table", BatchingMaxMessages: 2,
		BatchingMaxPublishDelay: time.Hour, Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer bp.Close()
	for _, kv := range [][2]string{{"k4", "after"}, {"k0", ""}} {
		bp.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: kv[0], Payload: []byte(kv[1])}, nil)
	}
	if err := bp.Flush(); err != nil {
		t.Fatal(err)
	}
	tv, err := c.CreateTableView(pulsar.TableViewOptions{Topic: "table",
		Schema: pulsar.NewStringSchema(nil), SchemaValueType: reflect.TypeOf((*string)(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tv.Close()
	got := map[string]string{}
	for k, v := range tv.Entries() {
		got[k] = *v.(*string)
	}
	want := map[string]string{"k1": "v16", "k2": "v17", "k4": "after"}
	if !maps.Equal(got, want) {
		t.Fatalf("table %v, want %v", got, want)
	}
}

func TestReadCompactedIsRefusedOnSharedSubscriptions(t *testing.T) {
	b := testkit.Start(t)
	for _, typ := range []pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared} {
		_, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "kv", SubscriptionName: "s", Type: typ,
			ReadCompacted: true})
		if err == nil || !strings.Contains(err.Error(), "readCompacted only allowed on failover or exclusive subscriptions") {
			t.Fatalf("%v: err = %v", typ, err)
		}
	}
}

func TestCompactionThresholdCompactsOnTheBrokerClock(t *testing.T) {
	b := testkit.Start(t)
	for _, topic := range []string{"big", "small"} {
		for i := range 10 {
			b.Publish(topic, broker.ProducerMessage{Key: "k", Payload: fmt.Appendf(nil, "value %d", i)})
		}
	}
	b.SetTopicPolicies("big", broker.Policies{CompactionThreshold: new(int64(100))})
	b.SetTopicPolicies("small", broker.Policies{CompactionThreshold: new(int64(1 << 20))})
	status := func(topic string) string { return b.CompactionStatus(topic).Status }
	b.Advance(59 * time.Second)
	if got := status("big"); got != broker.CompactionNotRun {
		t.Fatalf("before the check: %s", got)
	}
	b.Advance(time.Second)
	if got, other := status("big"), status("small"); got != broker.CompactionSuccess || other != broker.CompactionNotRun {
		t.Fatalf("after the check: big %s, small %s", got, other)
	}
	if got := readAll(t, b.Client(), "big", true); !slices.Equal(got, []string{"k=value 9"}) {
		t.Fatalf("compacted read %v", got)
	}
	if st := b.Stats("small"); st.Subscriptions[broker.CompactionSubscription].MsgBacklog != 10 {
		t.Fatalf("the threshold's __compaction subscription: %+v", st.Subscriptions)
	}
}

func TestANamespaceCompactionThresholdGivesNewTopicsACompactionSubscription(t *testing.T) {
	b := testkit.Start(t)
	b.SetNamespacePolicies("public/default", broker.Policies{CompactionThreshold: new(int64(1))})
	b.Publish("fresh", broker.ProducerMessage{Key: "k", Payload: []byte("v")})
	st := b.Stats("fresh")
	if s, ok := st.Subscriptions[broker.CompactionSubscription]; !ok || s.MsgBacklog != 1 {
		t.Fatalf("subscriptions %+v", st.Subscriptions)
	}
}

func TestDeletingTheCompactionSubscriptionDropsTheViewAndUnloadResetsTheStatus(t *testing.T) {
	b := testkit.Start(t)
	b.Publish("kv", broker.ProducerMessage{Key: "a", Payload: []byte("1")},
		broker.ProducerMessage{Key: "a", Payload: []byte("2")})
	b.Compact("kv")
	if got := readAll(t, b.Client(), "kv", true); !slices.Equal(got, []string{"a=2"}) {
		t.Fatalf("compacted read %v", got)
	}
	b.UnloadTopic("kv")
	if st := b.CompactionStatus("kv"); st.Status != broker.CompactionNotRun {
		t.Fatalf("status after unload: %v", st)
	}
	b.DeleteSubscription("kv", broker.CompactionSubscription, false)
	if got := readAll(t, b.Client(), "kv", true); !slices.Equal(got, []string{"a=1", "a=2"}) {
		t.Fatalf("read after the view was dropped: %v", got)
	}
}
