package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Two clusters, a and b, geo-replicating a namespace, compared with a real
// pair (scripts/real-pulsar-geo: two Pulsar 4.0.8 standalones named a and b
// sharing a ZooKeeper as their configuration store, whose URLs
// scripts/oracle-check gives in PULSAR_GEO_URLS and PULSAR_GEO_ADMIN_URLS,
// a's first). Each story makes a fresh namespace of the public tenant
// replicated to both through a's admin API, then tells what the clients and
// the stats of each cluster show.

// geoSide is a pair of clusters a story runs on.
type geoSide struct {
	urls, admins map[string]string
	// stopB and startB take cluster b away and bring it back with its
	// data; nil when the side cannot.
	stopB, startB func(t *testing.T)
}

func realGeo(t *testing.T) *geoSide {
	t.Helper()
	urls := splitList(os.Getenv("PULSAR_GEO_URLS"))
	admins := splitList(os.Getenv("PULSAR_GEO_ADMIN_URLS"))
	if len(urls) != 2 || len(admins) != 2 {
		t.Skip("set PULSAR_GEO_URLS and PULSAR_GEO_ADMIN_URLS to clusters a and b of a real Pulsar pair " +
			"(scripts/real-pulsar-geo start; scripts/oracle-check does) to compare geo-replication with pulsarsim's")
	}
	side := &geoSide{urls: map[string]string{"a": urls[0], "b": urls[1]},
		admins: map[string]string{"a": admins[0], "b": admins[1]}}
	// PULSAR_GEO_CONTROL is scripts/real-pulsar-geo with its options, whose
	// stop-b and start-b take b away and bring it back.
	if ctl := strings.Fields(os.Getenv("PULSAR_GEO_CONTROL")); len(ctl) > 0 {
		run := func(cmd string) func(t *testing.T) {
			return func(t *testing.T) {
				out, err := exec.Command(ctl[0], append([]string{cmd}, ctl[1:]...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", ctl[0], cmd, err, out)
				}
			}
		}
		side.stopB, side.startB = run("stop-b"), run("start-b")
	}
	return side
}

func simGeo(t *testing.T) *geoSide {
	t.Helper()
	g := testkit.StartClusters(t, []string{"a", "b"}, 1)
	return &geoSide{urls: map[string]string{"a": g.Cluster("a").URL(), "b": g.Cluster("b").URL()},
		admins: map[string]string{"a": g.Cluster("a").AdminURLs()[0], "b": g.Cluster("b").AdminURLs()[0]},
		stopB:  func(*testing.T) { g.Cluster("b").Stop(0) }, startB: func(*testing.T) { g.Cluster("b").Start(0) }}
}

// replicatedNamespace creates a fresh namespace of public replicated to a
// and b, through a's admin API.
func (s *geoSide) replicatedNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("public/geo-%x", rand.Uint32())
	if code := adminDo(t, s.admins["a"], http.MethodPut, "/admin/v2/namespaces/"+ns, ""); code/100 != 2 {
		t.Fatalf("create %s: %d", ns, code)
	}
	if code := adminDo(t, s.admins["a"], http.MethodPost, "/admin/v2/namespaces/"+ns+"/replication", `["a","b"]`); code/100 != 2 {
		t.Fatalf("replication clusters of %s: %d", ns, code)
	}
	// Both clusters see the policy before a story starts.
	for _, c := range []string{"a", "b"} {
		if !eventually(func() bool {
			return adminGet(t, s.admins[c], "/admin/v2/namespaces/"+ns+"/replication") == `["a","b"]`
		}) {
			t.Fatalf("%s does not see %s replicated to a and b", c, ns)
		}
	}
	return ns
}

func (s *geoSide) client(t *testing.T, cluster string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.urls[cluster], OperationTimeout: 30 * time.Second,
		Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// stats reads a topic's stats on a cluster as JSON.
func (s *geoSide) stats(t *testing.T, cluster, topic string) map[string]any {
	t.Helper()
	var doc map[string]any
	body := adminGet(t, s.admins[cluster], "/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/stats")
	_ = json.Unmarshal([]byte(body), &doc)
	return doc
}

// replication describes a topic's replication map on a cluster: each
// remote cluster with whether it is connected and its backlog.
func (s *geoSide) replication(t *testing.T, cluster, topic string) string {
	repl, _ := s.stats(t, cluster, topic)["replication"].(map[string]any)
	var out []string
	for remote, v := range repl {
		r, _ := v.(map[string]any)
		out = append(out, fmt.Sprintf("%s connected=%v backlog=%v", remote, r["connected"], r["replicationBacklog"]))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// subscriptionNames lists a topic's subscriptions on a cluster.
func (s *geoSide) subscriptionNames(t *testing.T, cluster, topic string) []string {
	subs, _ := s.stats(t, cluster, topic)["subscriptions"].(map[string]any)
	var out []string
	for name := range subs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// describeReplica describes a replica of the message a producer sent as
// source; the ledger ids differ between brokers, so the property naming the
// source entry is told by whether it names source.
func describeReplica(m pulsar.Message, producer string, source pulsar.MessageID) string {
	keys := make([]string, 0, len(m.Properties()))
	for k, v := range m.Properties() {
		if k == "__MSG_PROP_REPL_SOURCE_POSITION" {
			v = fmt.Sprintf("names-the-source:%v", v == fmt.Sprintf("%d:%d", source.LedgerID(), source.EntryID()))
		}
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return fmt.Sprintf("%q key=%q properties=%v replicated=%v from=%q same-producer=%v", m.Payload(), m.Key(), keys,
		m.IsReplicated(), m.GetReplicatedFrom(), m.ProducerName() == producer)
}

// replicationStory: a message produced on a reaches b with replicated_from
// and its key, properties and producer; one sent with DisableReplication
// stays on a; each cluster's stats show the replicator to the other, and
// no replicator cursor among the subscriptions.
func replicationStory(t *testing.T, s *geoSide) []string {
	ns := s.replicatedNamespace(t)
	topic := "persistent://" + ns + "/orders"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	onB, err := s.client(t, "b").Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.Close()
	p, err := s.client(t, "a").CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("stays on a"), DisableReplication: true}); err != nil {
		t.Fatal(err)
	}
	source, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("travels"), Key: "k1",
		Properties: map[string]string{"region": "eu", "n": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := onB.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onB.Ack(m)
	out := []string{"b receives: " + describeReplica(m, p.Name(), source)}
	for _, c := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[c]
		if !eventually(func() bool {
			return s.replication(t, c, topic) == other+" connected=true backlog=0"
		}) {
			t.Logf("%s's replication map: %s", c, s.replication(t, c, topic))
		}
		out = append(out, c+"'s replication: "+s.replication(t, c, topic),
			fmt.Sprintf("%s's subscriptions: %v", c, s.subscriptionNames(t, c, topic)))
	}
	// The replicator's counts, on both ends, and the fields of its stats
	// but the two naming Netty channels (FIDELITY.md).
	repl, _ := s.stats(t, "a", topic)["replication"].(map[string]any)
	toB, _ := repl["b"].(map[string]any)
	var keys []string
	for k := range toB {
		if k != "inboundConnection" && k != "outboundConnection" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	repl, _ = s.stats(t, "b", topic)["replication"].(map[string]any)
	fromA, _ := repl["a"].(map[string]any)
	out = append(out, fmt.Sprintf("a's replicator to b: msgOutCount=%v, b from a: msgInCount=%v", toB["msgOutCount"], fromA["msgInCount"]),
		fmt.Sprintf("a's replicator stats fields: %v", keys))
	return out
}

func TestGeoReplicationMatchesPulsar(t *testing.T) {
	real := realGeo(t)
	got := replicationStory(t, simGeo(t))
	want := replicationStory(t, real)
	sameOnBoth(t, want, got)
}

// markDeleteOf reads a subscription's mark-delete position (ledger, entry)
// from a cluster's internal stats.
func (s *geoSide) markDeleteOf(t *testing.T, cluster, topic, sub string) (int64, int64, bool) {
	var doc struct {
		Cursors map[string]struct {
			MarkDeletePosition string `json:"markDeletePosition"`
		} `json:"cursors"`
	}
	body := adminGet(t, s.admins[cluster], "/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/internalStats")
	if json.Unmarshal([]byte(body), &doc) != nil {
		return 0, 0, false
	}
	c, ok := doc.Cursors[sub]
	if !ok {
		return 0, 0, false
	}
	var l, e int64
	if _, err := fmt.Sscanf(c.MarkDeletePosition, "%d:%d", &l, &e); err != nil {
		return 0, 0, false
	}
	return l, e, true
}

// replicatedSubscriptionStory: a subscription replicated on both clusters;
// a's consumer acknowledges what a produced, and b's subscription, which
// no consumer reads, moves past the replicas of those messages.
func replicatedSubscriptionStory(t *testing.T, s *geoSide) []string {
	ns := s.replicatedNamespace(t)
	topic := "persistent://" + ns + "/replicated-sub"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "rs", ReplicateSubscriptionState: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest}
	onB, err := s.client(t, "b").Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	onB.Close()
	onA, err := s.client(t, "a").Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer onA.Close()
	p, err := s.client(t, "a").CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 5 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Where b stored the replicas: a reader of b finds them.
	r, err := s.client(t, "b").CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	var last pulsar.MessageID
	for range 5 {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = m.ID()
	}
	r.Close()
	out := []string{}
	l, e, ok := s.markDeleteOf(t, "b", topic, "rs")
	out = append(out, fmt.Sprintf("before a acknowledges, b's subscription is past the replicas: %v (cursor found %v)",
		ok && (l > last.LedgerID() || l == last.LedgerID() && e >= last.EntryID()), ok))
	for range 5 {
		m, err := onA.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := onA.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	moved := false
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline) && !moved; time.Sleep(200 * time.Millisecond) {
		l, e, ok := s.markDeleteOf(t, "b", topic, "rs")
		moved = ok && (l > last.LedgerID() || l == last.LedgerID() && e >= last.EntryID())
	}
	out = append(out, fmt.Sprintf("after a acknowledged, b's subscription is past the replicas: %v", moved))
	subs, _ := s.stats(t, "b", topic)["subscriptions"].(map[string]any)
	rs, _ := subs["rs"].(map[string]any)
	out = append(out, fmt.Sprintf("b's subscription isReplicated: %v", rs["isReplicated"]))
	if names := s.subscriptionNames(t, "b", topic); !slices.Contains(names, "rs") {
		out = append(out, fmt.Sprintf("b's subscriptions: %v", names))
	}
	return out
}

func TestGeoReplicatedSubscriptionMatchesPulsar(t *testing.T) {
	real := realGeo(t)
	got := replicatedSubscriptionStory(t, simGeo(t))
	want := replicatedSubscriptionStory(t, real)
	sameOnBoth(t, want, got)
}

type geoPayment struct {
	ID     int    `json:"id"`
	Amount string `json:"amount"`
}

// schemaStory: a producer with a JSON schema on a (batched, as
// pulsar-client-go names the schema version of batched messages only); b's
// consumer with the same schema decodes the replica, and b's topic has the
// schema.
func schemaStory(t *testing.T, s *geoSide) []string {
	ns := s.replicatedNamespace(t)
	topic := "persistent://" + ns + "/typed"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := pulsar.NewJSONSchema(`{"type":"record","name":"geoPayment","fields":[{"name":"id","type":"int"},{"name":"amount","type":"string"}]}`, nil)
	p, err := s.client(t, "a").CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Value: &geoPayment{ID: 3, Amount: "9.50"}}); err != nil {
		t.Fatal(err)
	}
	onB, err := s.client(t, "b").Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: schema,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.Close()
	m, err := onB.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got geoPayment
	err = m.GetSchemaValue(&got)
	out := []string{fmt.Sprintf("b decodes %+v (error %v), replicated from %q", got, err, m.GetReplicatedFrom())}
	var doc struct {
		Type    string `json:"type"`
		Version int64  `json:"version"`
	}
	body := adminGet(t, s.admins["b"], "/admin/v2/schemas/"+strings.TrimPrefix(topic, "persistent://")+"/schema")
	_ = json.Unmarshal([]byte(body), &doc)
	out = append(out, fmt.Sprintf("b's topic schema: %s version %d", doc.Type, doc.Version))
	return out
}

func TestGeoSchemaReplicationMatchesPulsar(t *testing.T) {
	real := realGeo(t)
	got := schemaStory(t, simGeo(t))
	want := schemaStory(t, real)
	sameOnBoth(t, want, got)
}

// outageStory: b goes away while a produces; a's replication backlog
// holds what b missed, and once b is back it gets everything once, in
// order.
func outageStory(t *testing.T, s *geoSide) []string {
	ns := s.replicatedNamespace(t)
	topic := "persistent://" + ns + "/outage"
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	onB, err := s.client(t, "b").Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	onB.Close()
	p, err := s.client(t, "a").CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 2)
	if !eventually(func() bool { return s.replication(t, "a", topic) == "b connected=true backlog=0" }) {
		t.Fatalf("a's replication before the outage: %s", s.replication(t, "a", topic))
	}
	s.stopB(t)
	send(2, 5)
	var during string
	eventually(func() bool {
		during = s.replication(t, "a", topic)
		return during == "b connected=false backlog=3"
	})
	out := []string{"while b is away, a's replication: " + during}
	s.startB(t)
	var after string
	for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if after = s.replication(t, "a", topic); after == "b connected=true backlog=0" {
			break
		}
	}
	out = append(out, "once b is back, a's replication: "+after)
	onB, err = s.client(t, "b").Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer onB.Close()
	var got []string
	for range 5 {
		m, err := onB.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		onB.Ack(m)
		got = append(got, string(m.Payload()))
	}
	out = append(out, fmt.Sprintf("b receives %v", got))
	drained := eventually(func() bool {
		subs, _ := s.stats(t, "b", topic)["subscriptions"].(map[string]any)
		sub, _ := subs["s"].(map[string]any)
		return sub["msgBacklog"] == float64(0)
	})
	out = append(out, fmt.Sprintf("b's backlog drains to 0 once they are acknowledged: %v", drained))
	return out
}

func TestGeoOutageOfBMatchesPulsar(t *testing.T) {
	real := realGeo(t)
	if real.stopB == nil {
		t.Skip("set PULSAR_GEO_CONTROL to scripts/real-pulsar-geo with its options (scripts/oracle-check does) to take b away")
	}
	got := outageStory(t, simGeo(t))
	want := outageStory(t, real)
	sameOnBoth(t, want, got)
}

// elsewhereStory: a namespace replicated to b only; a client of a cannot
// use its topics (Pulsar's lookup and partitioned-metadata refusal), one
// of b can.
func elsewhereStory(t *testing.T, s *geoSide) []string {
	ns := fmt.Sprintf("public/geo-%x", rand.Uint32())
	if code := adminDo(t, s.admins["a"], http.MethodPut, "/admin/v2/namespaces/"+ns, ""); code/100 != 2 {
		t.Fatalf("create %s: %d", ns, code)
	}
	if code := adminDo(t, s.admins["a"], http.MethodPost, "/admin/v2/namespaces/"+ns+"/replication", `["b"]`); code/100 != 2 {
		t.Fatalf("replication clusters of %s: %d", ns, code)
	}
	for _, c := range []string{"a", "b"} {
		if !eventually(func() bool {
			return adminGet(t, s.admins[c], "/admin/v2/namespaces/"+ns+"/replication") == `["b"]`
		}) {
			t.Fatalf("%s does not see %s replicated to b only", c, ns)
		}
	}
	topic := "persistent://" + ns + "/elsewhere"
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: s.urls["a"], OperationTimeout: 5 * time.Second,
		Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	msg := fmt.Sprint(err)
	msg = strings.ReplaceAll(msg, ns, "<ns>")
	out := []string{"a's producer: " + msg}
	// The refusals of a's LOOKUP and PARTITIONED_METADATA, on the wire.
	w := dialWire(t, s.urls["a"])
	w.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic),
		RequestId: proto.Uint64(1)}))
	if r := w.read().LookupTopicResponse; r != nil {
		out = append(out, fmt.Sprintf("a's lookup: %v %v %q", r.GetResponse(), r.GetError(),
			strings.ReplaceAll(r.GetMessage(), ns, "<ns>")))
	}
	w.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
		Topic: proto.String(topic), RequestId: proto.Uint64(2)}))
	if r := w.read().PartitionMetadataResponse; r != nil {
		out = append(out, fmt.Sprintf("a's partitioned metadata: %v %v %q", r.GetResponse(), r.GetError(),
			strings.ReplaceAll(r.GetMessage(), ns, "<ns>")))
	}
	p, err := s.client(t, "b").CreateProducer(pulsar.ProducerOptions{Topic: topic})
	out = append(out, fmt.Sprintf("b's producer: %v", err))
	if err == nil {
		p.Close()
	}
	return out
}

func TestGeoNamespaceOfOtherClustersMatchesPulsar(t *testing.T) {
	real := realGeo(t)
	want := elsewhereStory(t, real)
	got := elsewhereStory(t, simGeo(t))
	sameOnBoth(t, want, got)
}
