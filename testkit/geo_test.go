package testkit_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"go.uber.org/goleak"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// startGeo starts clusters a and b of one broker each, replicating
// public/geo between them.
func startGeo(t *testing.T, opts ...testkit.Option) *testkit.Clusters {
	t.Helper()
	g := testkit.StartClusters(t, []string{"a", "b"}, 1, opts...)
	g.Replicate("public/geo", "a", "b")
	return g
}

func geoContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func geoSubscribe(t *testing.T, cl pulsar.Client, topic, sub string, replicated bool) pulsar.Consumer {
	t.Helper()
	c, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReplicateSubscriptionState: replicated})
	if err != nil {
		t.Fatalf("subscribe %s on %s: %v", sub, topic, err)
	}
	t.Cleanup(c.Close)
	return c
}

func producer(t *testing.T, cl pulsar.Client, topic string) pulsar.Producer {
	t.Helper()
	p, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("producer on %s: %v", topic, err)
	}
	t.Cleanup(p.Close)
	return p
}

// userMessages counts the messages a cluster stores on topic (markers are
// not messages).
func userMessages(g *testkit.Clusters, cluster, topic string) []broker.Message {
	return g.Messages(cluster, topic)
}

func TestGeoMessageProducedOnAIsConsumedOnBWithReplicatedFrom(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/orders"
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	p := producer(t, g.Cluster("a").Client(), topic)
	id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello"), Key: "k1",
		Properties: map[string]string{"region": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := onB.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onB.Ack(m)
	if !m.IsReplicated() || m.GetReplicatedFrom() != "a" {
		t.Errorf("on b: replicated %v from %q, want from a", m.IsReplicated(), m.GetReplicatedFrom())
	}
	if string(m.Payload()) != "hello" || m.Key() != "k1" || m.Properties()["region"] != "eu" {
		t.Errorf("on b: payload %q key %q properties %v", m.Payload(), m.Key(), m.Properties())
	}
	if m.ProducerName() != p.Name() {
		t.Errorf("on b the message's producer is %q, want the original %q", m.ProducerName(), p.Name())
	}
	g.WaitReplicated(ctx, "a", topic)
	g.WaitReplicated(ctx, "b", topic)
	// Never replicated back: a holds its one message, b its one copy.
	if n := len(userMessages(g, "a", topic)); n != 1 {
		t.Errorf("a stores %d messages, want 1", n)
	}
	copies := g.Copies("a", topic, p.Name(), 0)
	if len(copies) != 2 || copies[0].Cluster != "a" || copies[1].Cluster != "b" || copies[1].Message.ReplicatedFrom != "a" {
		t.Errorf("copies of the message: %+v", copies)
	}
	_ = id
	life := g.Timeline("a", topic, p.Name(), 0)
	if !strings.Contains(life, "on cluster a:") || !strings.Contains(life, "on cluster b:") ||
		!strings.Contains(life, "published by pulsar.repl.a-->b") {
		t.Errorf("the message's life across the clusters:\n%s", life)
	}
	t.Logf("the message's life across the clusters:\n%s", life)
	rs := g.Replicators("a", topic)["b"]
	if !rs.Connected || rs.ReplicationBacklog != 0 || rs.MsgOutCount != 1 || rs.ProducerName != "pulsar.repl.a-->b" {
		t.Errorf("a's replicator to b: %+v", rs)
	}
}

func TestGeoDisableReplicationKeepsTheMessageLocal(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/local-only"
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	p := producer(t, g.Cluster("a").Client(), topic)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("stay"), DisableReplication: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("travel")}); err != nil {
		t.Fatal(err)
	}
	m, err := onB.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "travel" {
		t.Errorf("b received %q first, want travel (stay is local to a)", m.Payload())
	}
	g.WaitReplicated(ctx, "a", topic)
	if msgs := userMessages(g, "b", topic); len(msgs) != 1 {
		t.Errorf("b stores %d messages, want 1", len(msgs))
	}
	if msgs := userMessages(g, "a", topic); len(msgs) != 2 {
		t.Errorf("a stores %d messages, want 2", len(msgs))
	}
}

func TestGeoReplicationClustersOfAMessageChooseWhereItGoes(t *testing.T) {
	g := testkit.StartClusters(t, []string{"a", "b", "c"}, 1)
	g.Replicate("public/geo", "a", "b", "c")
	ctx := geoContext(t)
	topic := "persistent://public/geo/chosen"
	geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	geoSubscribe(t, g.Cluster("c").Client(), topic, "s", false)
	p := producer(t, g.Cluster("a").Client(), topic)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("to c"), ReplicationClusters: []string{"c"}}); err != nil {
		t.Fatal(err)
	}
	g.WaitReplicated(ctx, "a", topic)
	if n := len(userMessages(g, "b", topic)); n != 0 {
		t.Errorf("b stores %d messages, want 0", n)
	}
	if n := len(userMessages(g, "c", topic)); n != 1 {
		t.Errorf("c stores %d messages, want 1", n)
	}
}

func TestGeoReplicatedSubscriptionAcksOnAMoveItsPositionOnB(t *testing.T) {
	g := startGeo(t, testkit.WithBroker(broker.WithReplicatedSubscriptionsSnapshotFrequency(50*time.Millisecond)))
	ctx := geoContext(t)
	topic := "persistent://public/geo/replicated-sub"
	// The subscription exists on both clusters, replicated; b's consumer
	// goes away, so only the snapshots move b's position.
	geoSubscribe(t, g.Cluster("b").Client(), topic, "sub", true).Close()
	onA := geoSubscribe(t, g.Cluster("a").Client(), topic, "sub", true)
	p := producer(t, g.Cluster("a").Client(), topic)
	for i := range 5 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	g.WaitReplicated(ctx, "a", topic)
	b := g.Cluster("b").Broker(0)
	msgsOnB := userMessages(g, "b", topic)
	if len(msgsOnB) != 5 {
		t.Fatalf("b stores %d messages, want 5", len(msgsOnB))
	}
	last := msgsOnB[4].ID.Entry
	if md := b.Sub(topic, "sub").MarkDelete.Entry; md >= last {
		t.Fatalf("b's position %d is past its last message %d before a acknowledged anything", md, last)
	}
	for range 5 {
		m, err := onA.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := onA.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	g.WaitFor(ctx, "b's replicated subscription to move past its 5 messages", func() bool {
		return b.Sub(topic, "sub").MarkDelete.Entry >= last
	})
	// Markers never reach consumers: b's consumer finds nothing to read.
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "sub", true)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if m, err := onB.Receive(short); err == nil {
		t.Errorf("b's consumer received %q after a acknowledged everything", m.Payload())
	}
	st := b.Stats(topic)
	if !st.Subscriptions["sub"].Replicated {
		t.Errorf("b's subscription is not reported replicated: %+v", st.Subscriptions["sub"])
	}
	if _, ok := st.Subscriptions["pulsar.repl.a"]; ok {
		t.Errorf("the replicator's cursor is listed among b's subscriptions")
	}
}

func TestGeoBacklogGrowsWhileBIsDownAndDrainsOnceBackNothingLostNothingDuplicated(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/outage"
	geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false).Close()
	p := producer(t, g.Cluster("a").Client(), topic)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 5)
	g.WaitReplicated(ctx, "a", topic)
	g.Cluster("b").Stop(0)
	send(5, 15)
	g.WaitFor(ctx, "a's replication backlog to hold the 10 messages sent while b is down", func() bool {
		rs := g.Replicators("a", topic)["b"]
		return rs.ReplicationBacklog == 10 && !rs.Connected
	})
	g.Cluster("b").Start(0)
	g.WaitReplicated(ctx, "a", topic)
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	for i := range 15 {
		m, err := onB.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("m%02d", i); string(m.Payload()) != want {
			t.Fatalf("b's message %d is %q, want %q", i, m.Payload(), want)
		}
		onB.Ack(m)
	}
	if n := len(userMessages(g, "b", topic)); n != 15 {
		t.Errorf("b stores %d messages, want 15 (none lost, none twice)", n)
	}
}

func TestGeoPartitionedTopicReplicatesEachPartition(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/parted"
	// Partitioned-topic metadata lives in the configuration store: created
	// on a, b has the partitions too.
	g.Cluster("a").Broker(0).CreatePartitionedTopic(topic, 3)
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	p := producer(t, g.Cluster("a").Client(), topic)
	for i := range 9 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i), Key: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range 9 {
		m, err := onB.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		onB.Ack(m)
		if m.GetReplicatedFrom() != "a" {
			t.Errorf("%q on b replicated from %q", m.Payload(), m.GetReplicatedFrom())
		}
		got[string(m.Payload())] = true
	}
	if len(got) != 9 {
		t.Errorf("b received %d distinct messages, want 9", len(got))
	}
	for i := range 3 {
		part := fmt.Sprintf("%s-partition-%d", topic, i)
		g.WaitReplicated(ctx, "a", part)
		if na, nb := len(userMessages(g, "a", part)), len(userMessages(g, "b", part)); na != nb {
			t.Errorf("partition %d: a stores %d messages, b %d", i, na, nb)
		}
	}
	// The partitioned topic's stats sum its partitions' replicators.
	resp, err := http.Get(g.Cluster("a").AdminURLs()[0] + "/admin/v2/persistent/public/geo/parted/partitioned-stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Replication map[string]struct {
			MsgOutCount        int64 `json:"msgOutCount"`
			ReplicationBacklog int64 `json:"replicationBacklog"`
			Connected          bool  `json:"connected"`
		} `json:"replication"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if r := doc.Replication["b"]; r.MsgOutCount != 9 || r.ReplicationBacklog != 0 || !r.Connected {
		t.Errorf("a's partitioned stats of the replication to b: %+v", doc.Replication)
	}
}

func TestGeoReplicatorDispatchRateHoldsTheRestForTheNextPeriod(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	a := g.Cluster("a").Broker(0)
	a.UpdateNamespacePolicies("public/geo", func(p *broker.Policies) {
		p.ReplicatorDispatchRate = &broker.DispatchRate{Messages: 3, PeriodSeconds: 600}
	})
	topic := "persistent://public/geo/limited"
	p := producer(t, g.Cluster("a").Client(), topic)
	for i := range 5 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	g.WaitFor(ctx, "3 messages replicated, 2 held back", func() bool {
		return len(userMessages(g, "b", topic)) == 3 && g.Replicators("a", topic)["b"].ReplicationBacklog == 2
	})
	g.Cluster("a").Advance(601 * time.Second)
	g.WaitReplicated(ctx, "a", topic)
	if n := len(userMessages(g, "b", topic)); n != 5 {
		t.Errorf("b stores %d messages after the next period, want 5", n)
	}
}

func TestGeoTopicIsDeletedOnAClusterTheReplicationClustersLeaveOut(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/moved-away"
	p := producer(t, g.Cluster("a").Client(), topic)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	g.WaitReplicated(ctx, "a", topic)
	p.Close()
	g.Replicate("public/geo", "b")
	b := g.Cluster("a").Broker(0)
	g.WaitFor(ctx, "the topic to be deleted on a", func() bool {
		for _, name := range b.Topics() {
			if name == topic {
				return false
			}
		}
		return true
	})
	if n := len(userMessages(g, "b", topic)); n != 1 {
		t.Errorf("b stores %d messages, want 1", n)
	}
}

type geoOrder struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}

const geoOrderSchema = `{"type":"record","name":"geoOrder","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"}]}`

func TestGeoReplicatorBringsTheMessagesSchemaToTheRemoteTopic(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/typed"
	schema := pulsar.NewJSONSchema(geoOrderSchema, nil)
	// b's topic has a schema of its own first, which a's can follow: the
	// replicated one takes the next version there.
	g.Cluster("b").Broker(0).PutSchema(topic, testkit.Schema{Type: "JSON", Data: []byte(
		`{"type":"record","name":"geoOrder","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"},` +
			`{"name":"note","type":["null","string"],"default":null}]}`)})
	// Batching on: pulsar-client-go v0.19.0 names the schema version of
	// batched messages only.
	p, err := g.Cluster("a").Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Value: &geoOrder{ID: 7, Item: "tea"}}); err != nil {
		t.Fatal(err)
	}
	g.WaitReplicated(ctx, "a", topic)
	msgs := g.Messages("b", topic)
	if len(msgs) != 1 {
		t.Fatalf("b stores %d messages, want 1", len(msgs))
	}
	v := int64(binary.BigEndian.Uint64(msgs[0].SchemaVersion))
	sa := g.Cluster("a").Broker(0).Schema(topic, 0)
	if sb := g.Cluster("b").Broker(0).Schema(topic, v); v != 1 || sb.Type != "JSON" || string(sb.Data) != string(sa.Data) {
		t.Errorf("b's message names b's schema version %d: %s %s, want version 1, a's schema %s", v, sb.Type, sb.Data, sa.Data)
	}
	// A consumer of b decodes it with the schema.
	c, err := g.Cluster("b").Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: schema,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got geoOrder
	if err := m.GetSchemaValue(&got); err != nil || got != (geoOrder{ID: 7, Item: "tea"}) {
		t.Errorf("b's consumer decoded %+v (%v)", got, err)
	}
}

func TestGeoReplicationWaitsOutAPartitionAndCatchesUp(t *testing.T) {
	g := startGeo(t)
	ctx := geoContext(t)
	topic := "persistent://public/geo/partition"
	onB := geoSubscribe(t, g.Cluster("b").Client(), topic, "s", false)
	p := producer(t, g.Cluster("a").Client(), topic)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m0")}); err != nil {
		t.Fatal(err)
	}
	g.WaitReplicated(ctx, "a", topic)
	g.SetReachable("b", false)
	for i := 1; i <= 3; i++ {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	g.WaitFor(ctx, "a's replicator to b to hold 3 entries, disconnected", func() bool {
		rs := g.Replicators("a", topic)["b"]
		return rs.ReplicationBacklog == 3 && !rs.Connected
	})
	if n := len(userMessages(g, "b", topic)); n != 1 {
		t.Errorf("b stores %d messages while unreachable, want 1", n)
	}
	g.SetReachable("b", true)
	for i := range 4 {
		m, err := onB.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("m%d", i); string(m.Payload()) != want {
			t.Fatalf("b's message %d is %q, want %q", i, m.Payload(), want)
		}
		onB.Ack(m)
	}
	g.WaitReplicated(ctx, "a", topic)
	if n := len(userMessages(g, "b", topic)); n != 4 {
		t.Errorf("b stores %d messages, want 4", n)
	}
}

func TestGeoClustersLeaveNoGoroutineOnceClosed(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cs := broker.NewConfigStore()
	a := broker.NewCluster(1, broker.WithClusterName("a"), broker.WithConfigStore(cs),
		broker.WithReplicatedSubscriptionsSnapshotFrequency(10*time.Millisecond))
	b := broker.NewCluster(1, broker.WithClusterName("b"), broker.WithConfigStore(cs),
		broker.WithReplicatedSubscriptionsSnapshotFrequency(10*time.Millisecond))
	for _, c := range []*broker.Cluster{a, b} {
		if err := c.Listen(); err != nil {
			t.Fatal(err)
		}
	}
	list := []string{"a", "b"}
	if err := a.Broker(0).SetTenantAllowedClusters("public", list); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker(0).UpdateNamespacePolicies("public/default", func(p *broker.Policies) { p.ReplicationClusters = &list }); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/default/leak"
	if _, err := a.Broker(0).Publish(topic, broker.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	ctx := geoContext(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if msgs, _ := b.Broker(0).Messages(topic); len(msgs) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the message never reached b")
		case <-tick.C:
		}
	}
	a.Close()
	b.Close()
	goleak.VerifyNone(t, before)
}
