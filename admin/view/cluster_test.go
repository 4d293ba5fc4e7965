package view_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The cluster scenario: a topic of a cluster of two brokers, first served by
// broker 0, whose Shared consumer holds two messages without acknowledging
// them; the topic moves to broker 1, which delivers them again; broker 1
// crashes, and once its ownership has timed out broker 0 serves the topic
// again and delivers them a third time; the consumer acknowledges them
// there. Broker 1 is started again at the end.
const (
	movesTopic = "persistent://public/default/moves"
	movesSub   = "workers"
)

// runMoves runs the cluster scenario and returns the cluster and the
// messages' ids, in publish order.
func runMoves(t *testing.T) (*testkit.Cluster, []broker.MessageID) {
	t.Helper()
	c := testkit.StartCluster(t, 2)
	ctx := ctxFor(t)
	c.Move(movesTopic, 0) // its bundle goes to broker 0 at the first lookup
	client := c.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: movesTopic, SubscriptionName: movesSub,
		Type: pulsar.Shared, Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: movesTopic, Name: "shop", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	var ids []broker.MessageID
	for _, pl := range []string{"order-1", "order-2"} {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID(), BatchIndex: -1})
	}
	held := func(i int) {
		t.Helper()
		b := c.Broker(i)
		b.WaitFor(ctx, fmt.Sprintf("both messages pending at the consumer on broker %d", i), func() bool {
			s, ok := b.Subscription(movesTopic, movesSub)
			return ok && len(s.Consumers) == 1 && len(s.Consumers[0].Pending) == 2
		})
	}
	held(0)
	c.Move(movesTopic, 1)
	held(1)
	c.Crash(1)
	c.Advance(30 * time.Second) // the crashed broker's bundles are free
	held(0)
	acked := map[broker.MessageID]bool{}
	for len(acked) < len(ids) {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
		acked[broker.MessageID{Ledger: m.ID().LedgerID(), Entry: m.ID().EntryID(), BatchIndex: -1}] = true
	}
	c.Broker(0).WaitBacklog(ctx, movesTopic, movesSub, 0)
	c.Start(1)
	return c, ids
}

// deliveriesByBroker reads from the cluster's own events, independently of
// the view, the deliveries of a message: per broker, the redelivery counts
// in order.
func deliveriesByBroker(events []broker.Event, id broker.MessageID) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		if e.Kind == broker.EventDelivered && e.Topic == movesTopic && e.ID.Ledger == id.Ledger && e.ID.Entry == id.Entry {
			b := fmt.Sprint(e.Broker)
			out[b] = append(out[b], fmt.Sprint(e.RedeliveryCount))
		}
	}
	return out
}

// deliveredMark matches a delivery's mark in a picture.
var deliveredMark = regexp.MustCompile(`data-kind="delivered" data-count="(\d+)" data-broker="(\d+)"`)

func TestTheViewsOfAClusterNameTheBrokersAndDrawTheTopicsMoves(t *testing.T) {
	c, ids := runMoves(t)
	views := []string{c.Broker(0).ViewURL(), c.Broker(1).ViewURL()}
	topicPage := func(base string) string { return base + "topic?name=" + url.QueryEscape(movesTopic) }

	t.Run("each page names its broker", func(t *testing.T) {
		for i, base := range views {
			code, body := get(t, base)
			want := fmt.Sprintf(`data-broker="%d" data-brokers="2"`, i)
			if code != 200 || !strings.Contains(body, want) || !strings.Contains(body, fmt.Sprintf("<b>broker %d</b> of a cluster of 2", i)) ||
				!strings.Contains(body, "modular load manager") || !strings.Contains(body, c.Broker(i).URL()) {
				t.Errorf("broker %d's index (%d) does not name it:\n%s", i, code, body)
			}
		}
	})
	t.Run("the owner's topic page says it serves the topic", func(t *testing.T) {
		code, body := get(t, topicPage(views[0]))
		if code != 200 || !strings.Contains(body, `data-owner="0" data-served="true"`) || !strings.Contains(body, "<b>this broker</b> (broker 0)") {
			t.Fatalf("%d:\n%s", code, body)
		}
		if !strings.Contains(body, `<section class="card sub" data-sub="workers"`) {
			t.Error("the owner's page does not show the subscription")
		}
	})
	t.Run("the other broker's topic page links to the owner's", func(t *testing.T) {
		code, body := get(t, topicPage(views[1]))
		link := fmt.Sprintf(`<a class="owner-link" href="%s">broker 0</a>`, strings.ReplaceAll(topicPage(views[0]), "&", "&amp;"))
		if code != 200 || !strings.Contains(body, `data-owner="0" data-served="false"`) || !strings.Contains(body, link) {
			t.Fatalf("%d, want the link %s:\n%s", code, link, body)
		}
		if strings.Contains(body, `class="card sub"`) {
			t.Error("a broker that does not serve the topic shows its subscriptions")
		}
		if n := strings.Count(body, `<tr class="msg"`); n != len(ids) {
			t.Errorf("%d message rows, want %d: the cluster's history has them", n, len(ids))
		}
		code, msg := get(t, messageURL(views[1], movesTopic, idText(ids[0])))
		if code != 200 || !strings.Contains(msg, "This broker does not serve the topic; its bundle's owner: "+link) ||
			strings.Contains(msg, "The topic no longer holds this entry") {
			t.Errorf("broker 1's message page does not send to the owner (%d):\n%s", code, msg)
		}
		code, index := get(t, views[1])
		if code != 200 || !strings.Contains(index, `data-topic="`+movesTopic+`" data-owner="0"`) {
			t.Errorf("broker 1's index does not list the topic as broker 0's (%d):\n%s", code, index)
		}
	})
	t.Run("a message's life names the broker of each event and shows the moves", func(t *testing.T) {
		events := c.Events()
		for _, base := range views {
			code, body := get(t, messageURL(base, movesTopic, idText(ids[0])))
			if code != 200 {
				t.Fatalf("%d:\n%s", code, body)
			}
			for _, want := range []string{
				"unloaded from broker 0 · loaded on broker 1",
				"unloaded from broker 1 (crash) · loaded on broker 0",
				`<th>broker</th>`, `<td class="where">broker 1</td>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			if n := strings.Count(body, `data-kind="topic-unloaded"`); n < 2 {
				t.Errorf("%d unloads drawn or listed, want the move's and the crash's", n)
			}
			got := map[string][]string{}
			for _, m := range deliveredMark.FindAllStringSubmatch(body, -1) {
				got[m[2]] = append(got[m[2]], m[1])
			}
			want := deliveriesByBroker(events, ids[0])
			if diff := cmp.Diff(want, got); diff != "" || len(want) != 2 {
				t.Errorf("deliveries per broker (-events +page):\n%s", diff)
			}
			// Each broker that loaded the topic delivered from count 0: the
			// counts were the unloaded broker's.
			for b, counts := range got {
				if counts[0] != "0" {
					t.Errorf("broker %s's first delivery has count %s", b, counts[0])
				}
			}
		}
	})
	t.Run("the cluster's timeline names the brokers", func(t *testing.T) {
		tl := c.Timeline(movesTopic, ids[1])
		for _, want := range []string{"broker 0  published by shop", "broker 1  delivered to worker on workers with redelivery count 0",
			"broker 1  topic unloaded from broker 1 (crash)", "broker 0  topic loaded on broker 0"} {
			if !strings.Contains(tl, want) {
				t.Errorf("the timeline lacks %q:\n%s", want, tl)
			}
		}
	})
	t.Run("the cluster's report shows the moves and names the brokers", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "report.html")
		c.WriteReport(path)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkClusterReport(t, string(body), c)
	})
}

// checkClusterReport checks what a cluster's report of the scenario says.
func checkClusterReport(t *testing.T, body string, c *testkit.Cluster) {
	t.Helper()
	for _, want := range []string{
		`a cluster of <b>2 brokers</b>`, "unloaded from broker 0 · loaded on broker 1",
		"unloaded from broker 1 (crash) · loaded on broker 0", "What the brokers held at the end", "· on broker 0 ·",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if c != nil {
		for i := range 2 {
			if want := fmt.Sprintf("<b>broker %d</b> <span class=\"mono\">%s</span>", i, c.Broker(i).URL()); !strings.Contains(body, want) {
				t.Errorf("the report lacks %q", want)
			}
		}
	}
}

// TestClusterScenarioThatFails runs the cluster scenario and fails, so that
// testkit writes the cluster's failure report. It only runs in the child
// process of TestAFailingClusterTestWritesTheClustersReport.
func TestClusterScenarioThatFails(t *testing.T) {
	if os.Getenv(failingEnv) == "" {
		t.Skip("runs only as the child process of the failure report tests")
	}
	runMoves(t)
	t.Error("failing on purpose, for the report")
}

func TestAFailingClusterTestWritesTheClustersReport(t *testing.T) {
	path, log := failingReportOf(t, "TestClusterScenarioThatFails", t.TempDir())
	for _, want := range []string{"what the cluster's brokers saw", "broker 1  delivered to worker on workers with redelivery count 0",
		"broker 1  topic unloaded from broker 1 (crash)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the failing test's log lacks %q:\n%s", want, log)
		}
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "TestClusterScenarioThatFails failed") {
		t.Error("the report does not say the test failed")
	}
	checkClusterReport(t, string(body), nil)
}

func TestALoneBrokersViewDrawsAnUnloadWithoutNamingBrokers(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	const topic = "persistent://public/default/unloaded"
	cons, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: movesSub, Type: pulsar.Shared, Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	id := produce(ctx, t, b, topic, "order-1")[0]
	pending := func(what string) {
		t.Helper()
		b.WaitFor(ctx, what, func() bool {
			s, ok := b.Subscription(topic, movesSub)
			return ok && len(s.Consumers) == 1 && len(s.Consumers[0].Pending) == 1
		})
	}
	pending("the message pending at the consumer")
	b.UnloadTopic(topic)
	pending("the message pending again after the unload")
	code, body := get(t, messageURL(b.ViewURL(), topic, idText(id)))
	if code != 200 {
		t.Fatalf("%d:\n%s", code, body)
	}
	for _, want := range []string{">unloaded · loaded<", `data-kind="topic-unloaded" data-reason="unload"`, "topic loaded from the store"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, clutter := range []string{`class="node"`, "<th>broker</th>", "data-broker=", "broker 0"} {
		if strings.Contains(body, clutter) {
			t.Errorf("a lone broker's page has %q", clutter)
		}
	}
}

func TestAnExtensibleClustersViewNamesItsLoadManagerAndDrawsATransfer(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithLoadManager(testkit.ExtensibleLoadManager))
	ctx := ctxFor(t)
	const topic = "persistent://public/default/transferred"
	cons, err := c.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: movesSub, Type: pulsar.Shared, Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := c.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mid, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("order-1")})
	if err != nil {
		t.Fatal(err)
	}
	id := broker.MessageID{Ledger: mid.LedgerID(), Entry: mid.EntryID(), BatchIndex: -1}
	from := c.Owner(topic)
	to := 1 - from
	pending := func(i int) {
		t.Helper()
		b := c.Broker(i)
		b.WaitFor(ctx, fmt.Sprintf("the message pending at the consumer on broker %d", i), func() bool {
			s, ok := b.Subscription(topic, movesSub)
			return ok && len(s.Consumers) == 1 && len(s.Consumers[0].Pending) == 1
		})
	}
	pending(from)
	c.Move(topic, to) // a transfer: the owner changes at once
	pending(to)
	code, body := get(t, messageURL(c.Broker(to).ViewURL(), topic, idText(id)))
	want := fmt.Sprintf("unloaded from broker %d · loaded on broker %d", from, to)
	if code != 200 || !strings.Contains(body, want) || !strings.Contains(body, "extensible load manager") {
		t.Errorf("%d, the page lacks %q or the load manager:\n%s", code, want, body)
	}
}
