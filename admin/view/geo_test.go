package view_test

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The geo scenario: clusters a and b of one broker each replicate
// public/geo; a message produced on a is consumed and acknowledged on a by
// subscription "local" and, once replicated, on b by subscription "remote".
const geoTopic = "persistent://public/geo/orders"

// geoRun is what the geo scenario leaves: the clusters, the original's id
// on a and its copy's id on b.
type geoRun struct {
	g            *testkit.Clusters
	original, cp broker.MessageID
}

func runGeo(t *testing.T) geoRun {
	t.Helper()
	g := testkit.StartClusters(t, []string{"a", "b"}, 1)
	g.Replicate("public/geo", "a", "b")
	ctx := ctxFor(t)
	subscribe := func(c *testkit.Cluster, sub, name string) pulsar.Consumer {
		t.Helper()
		cons, err := c.Client().Subscribe(pulsar.ConsumerOptions{Topic: geoTopic, SubscriptionName: sub, Name: name,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cons.Close)
		return cons
	}
	onA := subscribe(g.Cluster("a"), "local", "reader-a")
	onB := subscribe(g.Cluster("b"), "remote", "reader-b")
	p, err := g.Cluster("a").Client().CreateProducer(pulsar.ProducerOptions{Topic: geoTopic, Name: "shop", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("order-1")}); err != nil {
		t.Fatal(err)
	}
	var run geoRun
	run.g = g
	for _, side := range []struct {
		cons pulsar.Consumer
		id   *broker.MessageID
	}{{onA, &run.original}, {onB, &run.cp}} {
		m, err := side.cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := side.cons.Ack(m); err != nil {
			t.Fatal(err)
		}
		*side.id = broker.MessageID{Ledger: m.ID().LedgerID(), Entry: m.ID().EntryID(), BatchIndex: -1}
	}
	g.Cluster("a").Broker(0).WaitBacklog(ctx, geoTopic, "local", 0)
	g.Cluster("b").Broker(0).WaitBacklog(ctx, geoTopic, "remote", 0)
	return run
}

// geoMark matches a mark of the picture: its kind and cluster.
var geoMark = regexp.MustCompile(`<g class="mark m-[a-z-]+" data-kind="([a-z-]+)"[^>]* data-cluster="([a-z]+)"`)

// marksByCluster lists a picture's marks per cluster, as "kind" strings in
// the order drawn.
func marksByCluster(page string) map[string][]string {
	out := map[string][]string{}
	for _, m := range geoMark.FindAllStringSubmatch(page, -1) {
		out[m[2]] = append(out[m[2]], m[1])
	}
	return out
}

// checkGeoLife checks that a page or report draws the life of the geo
// scenario's message with its copy on b: a's publish, delivery and ack, the
// copy's publish on b by the replicator, and its delivery to reader-b and
// ack there, each naming its cluster.
func checkGeoLife(t *testing.T, what, page string, run geoRun) {
	t.Helper()
	got := marksByCluster(page)
	for cluster, want := range map[string][]string{
		"a": {"published", "delivered", "acked"},
		"b": {"published", "delivered", "acked"},
	} {
		for _, kind := range want {
			if !strings.Contains(strings.Join(got[cluster], " "), kind) {
				t.Errorf("%s: no %s mark on cluster %s (marks by cluster: %v)", what, kind, cluster, got)
			}
		}
	}
	for _, want := range []string{
		fmt.Sprintf(`class="row-replica replica" data-cluster="b" data-copy="%d:%d"`, run.cp.Ledger, run.cp.Entry),
		`data-sub="remote" data-consumer="reader-b" data-cluster="b"`,
		`data-sub="local" data-consumer="reader-a"`,
		fmt.Sprintf("published by pulsar.repl.a--&gt;b: the copy of %d:%d on cluster a", run.original.Ledger, run.original.Entry),
		"delivered to reader-b on remote with redelivery count 0",
		"cluster b",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("%s lacks %q", what, want)
		}
	}
}

func TestTheViewOfEachClusterDrawsAMessagesCopiesOnTheOtherClusters(t *testing.T) {
	run := runGeo(t)
	page := func(cluster string, id broker.MessageID) string {
		t.Helper()
		u := run.g.Cluster(cluster).Broker(0).ViewURL() + "message?topic=" + url.QueryEscape(geoTopic) +
			fmt.Sprintf("&id=%d:%d", id.Ledger, id.Entry)
		code, body := get(t, u)
		if code != 200 {
			t.Fatalf("GET %s: %d\n%s", u, code, body)
		}
		return body
	}
	t.Run("the original's page on a", func(t *testing.T) {
		body := page("a", run.original)
		checkGeoLife(t, "a's page of the message", body, run)
		if strings.Contains(body, `class="muted copy-of"`) {
			t.Errorf("a's page of the original calls it a copy")
		}
	})
	t.Run("the copy's page on b", func(t *testing.T) {
		body := page("b", run.cp)
		checkGeoLife(t, "b's page of the copy", body, run)
		want := fmt.Sprintf(`data-cluster="a" data-source="%d:%d"`, run.original.Ledger, run.original.Entry)
		if !strings.Contains(body, want) {
			t.Errorf("b's page of the copy does not say whose copy it is (%q)", want)
		}
	})
	t.Run("each topic page lists its own cluster's entry", func(t *testing.T) {
		for _, cluster := range []string{"a", "b"} {
			_, body := get(t, run.g.Cluster(cluster).Broker(0).ViewURL()+"topic?name="+url.QueryEscape(geoTopic))
			if n := strings.Count(body, `<tr class="msg`); n != 1 {
				t.Errorf("cluster %s's topic page lists %d messages, want its one", cluster, n)
			}
		}
	})
	t.Run("a cluster's report", func(t *testing.T) {
		path := t.TempDir() + "/a.html"
		run.g.Cluster("a").WriteReport(path)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkGeoLife(t, "a's report", string(body), run)
	})
	t.Run("each cluster's own events", func(t *testing.T) {
		for _, cluster := range []string{"a", "b"} {
			for _, e := range run.g.Cluster(cluster).Events() {
				if e.Cluster != cluster {
					t.Fatalf("cluster %s's events hold one of cluster %s: %+v", cluster, e.Cluster, e)
				}
			}
		}
	})
}

// TestGeoScenarioThatFails runs the geo scenario and fails, so that testkit
// writes its clusters' failure reports. It only runs in the child process
// that failingReportOf starts.
func TestGeoScenarioThatFails(t *testing.T) {
	if os.Getenv(failingEnv) == "" {
		t.Skip("runs only as the child process of the failure report tests")
	}
	run := runGeo(t)
	t.Logf("ids: %d:%d %d:%d", run.original.Ledger, run.original.Entry, run.cp.Ledger, run.cp.Entry)
	t.Error("failing on purpose, for the report")
}

func TestAFailingGeoTestWritesEachClustersReportWithTheCopiesOnTheOthers(t *testing.T) {
	path, log := failingReportOf(t, "TestGeoScenarioThatFails", t.TempDir())
	var run geoRun
	if _, err := fmt.Sscanf(log[strings.Index(log, "ids: ")+len("ids: "):], "%d:%d %d:%d",
		&run.original.Ledger, &run.original.Entry, &run.cp.Ledger, &run.cp.Entry); err != nil {
		t.Fatalf("the child logged no ids (%v):\n%s", err, log)
	}
	var paths []string
	for _, m := range reportLine.FindAllStringSubmatch(log, -1) {
		paths = append(paths, m[1])
	}
	if len(paths) != 2 || paths[0] != path || !strings.HasSuffix(paths[0], ".a.html") || !strings.HasSuffix(paths[1], ".b.html") {
		t.Fatalf("the failing test wrote the reports %v, want one per cluster, a's then b's", paths)
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkGeoLife(t, "the failure report "+p, string(body), run)
	}
}

func TestAMessagesPageJoinsOnlyItsOwnCopiesAmongThoseOfSeveralClusters(t *testing.T) {
	// Clusters a and c each publish one message (each cluster numbers its
	// own ledgers, alike); b gets a copy of each. a's page of its message
	// draws its copies on b and c, not the copy of c's message on b.
	g := testkit.StartClusters(t, []string{"a", "b", "c"}, 1)
	g.Replicate("public/geo", "a", "b", "c")
	ctx := ctxFor(t)
	onB, err := g.Cluster("b").Client().Subscribe(pulsar.ConsumerOptions{Topic: geoTopic, SubscriptionName: "remote",
		Name: "reader-b", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(onB.Close)
	sent := map[string]broker.MessageID{}
	for _, from := range []string{"a", "c"} {
		p, err := g.Cluster(from).Client().CreateProducer(pulsar.ProducerOptions{Topic: geoTopic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("from " + from)})
		if err != nil {
			t.Fatal(err)
		}
		sent[from] = broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID(), BatchIndex: -1}
	}
	onBByOrigin := map[string]broker.MessageID{}
	for range 2 {
		m, err := onB.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := onB.Ack(m); err != nil {
			t.Fatal(err)
		}
		onBByOrigin[m.GetReplicatedFrom()] = broker.MessageID{Ledger: m.ID().LedgerID(), Entry: m.ID().EntryID()}
	}
	g.Cluster("b").Broker(0).WaitBacklog(ctx, geoTopic, "remote", 0)
	g.WaitReplicated(ctx, "a", geoTopic)
	u := g.Cluster("a").Broker(0).ViewURL() + "message?topic=" + url.QueryEscape(geoTopic) +
		fmt.Sprintf("&id=%d:%d", sent["a"].Ledger, sent["a"].Entry)
	code, body := get(t, u)
	if code != 200 {
		t.Fatalf("GET %s: %d\n%s", u, code, body)
	}
	for _, cluster := range []string{"b", "c"} {
		if n := strings.Count(body, `class="row-replica replica" data-cluster="`+cluster+`"`); n != 1 {
			t.Errorf("a's page draws %d copies on %s, want 1", n, cluster)
		}
	}
	if got := marksByCluster(body)["b"]; !slices.Equal(got, []string{"published", "acked", "delivered"}) {
		t.Errorf("a's page draws on b the marks %v, want the publish, the delivery and the ack of its one copy", got)
	}
	want := fmt.Sprintf(`data-cluster="b" data-copy="%d:%d"`, onBByOrigin["a"].Ledger, onBByOrigin["a"].Entry)
	if !strings.Contains(body, want) {
		t.Errorf("a's page lacks its copy on b (%q)", want)
	}
	other := fmt.Sprintf(`data-cluster="b" data-copy="%d:%d"`, onBByOrigin["c"].Ledger, onBByOrigin["c"].Entry)
	if onBByOrigin["c"] == onBByOrigin["a"] || strings.Contains(body, other) || strings.Contains(body, "pulsar.repl.c--&gt;b") {
		t.Errorf("a's page draws the copy of c's message on b (%q), or b stored both at one id (%v)", other, onBByOrigin)
	}
}
