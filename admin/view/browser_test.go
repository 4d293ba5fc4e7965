package view_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/internal/chromium"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// ScreenshotDirEnv names the environment variable that sets where the browser
// tests save their screenshots (the README's images are made with it set to
// docs/); without it they go to the test's artifact folder.
const screenshotDirEnv = "PULSARSIM_SCREENSHOTS"

func screenshotDir(t *testing.T) string {
	if d := os.Getenv(screenshotDirEnv); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

// save writes a screenshot of the page's top maxHeight CSS pixels.
func save(ctx context.Context, t *testing.T, p *chromium.Page, name string, maxHeight int) {
	t.Helper()
	shot, err := p.Screenshot(ctx, maxHeight)
	if err != nil {
		t.Fatal(err)
	}
	png, err := smallPNG(shot)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(screenshotDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// page opens a tab of 1280 × 900 CSS pixels.
func page(ctx context.Context, t *testing.T, br *chromium.Browser) *chromium.Page {
	t.Helper()
	p, err := br.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.SetViewport(ctx, 1280, 900, 1); err != nil {
		t.Fatal(err)
	}
	return p
}

func open(ctx context.Context, t *testing.T, p *chromium.Page, u string) {
	t.Helper()
	if err := p.Navigate(ctx, u); err != nil {
		t.Fatal(err)
	}
}

func messageURL(base, topic, id string) string {
	return base + "message?" + url.Values{"topic": {topic}, "id": {id}}.Encode()
}

// eval evaluates a JavaScript expression in the page and decodes its value
// into out.
func eval(ctx context.Context, t *testing.T, p *chromium.Page, expr string, out any) {
	t.Helper()
	if err := p.Eval(ctx, expr, out); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
}

// lanesInPage reads the picture's lanes of a subscription from the DOM:
// per consumer, the redelivery counts of its deliveries.
func lanesInPage(ctx context.Context, t *testing.T, p *chromium.Page, sub string) map[string][]int32 {
	t.Helper()
	out := map[string][]int32{}
	eval(ctx, t, p, `Object.fromEntries([...document.querySelectorAll('svg.life g.lane[data-sub="`+sub+`"]')].map(g =>
		[g.dataset.consumer, [...g.querySelectorAll('.mark[data-kind="delivered"]')].map(m => +m.dataset.count)]))`, &out)
	return out
}

func TestBrowserShowsTheLivesOfTheScenario(t *testing.T) {
	br := chromium.ForTest(t)
	b, ids := runOrders(t)
	ctx := ctxFor(t)
	p := page(ctx, t, br)
	t.Run("the dead-lettered message", func(t *testing.T) { checkPoison(ctx, t, p, b, ids["poison"]) })
	t.Run("the message whose consumer crashed", func(t *testing.T) {
		open(ctx, t, p, messageURL(b.ViewURL(), ordersFull, idText(ids["crash-once"])))
		var crashed int
		eval(ctx, t, p, `document.querySelectorAll('svg.life g.lane[data-sub="workers"] .mark[data-kind="crashed"]').length`, &crashed)
		if crashed != 1 {
			t.Errorf("%d crashes drawn, want 1", crashed)
		}
	})
	t.Run("the topic page, updated live", func(t *testing.T) { checkTopic(ctx, t, p, b, ids["held"]) })
	t.Run("a failing test's report", func(t *testing.T) { checkReport(ctx, t, p) })
}

// checkPoison checks the picture of the dead-lettered message: its lanes and
// counts, its redelivery requests, its copy and its outcomes, against the
// broker's own events.
func checkPoison(ctx context.Context, t *testing.T, p *chromium.Page, b *testkit.Broker, id broker.MessageID) {
	events := b.Events()
	open(ctx, t, p, messageURL(b.ViewURL(), ordersFull, idText(id)))
	for _, sub := range []string{workers, audit} {
		if diff := cmp.Diff(deliveriesOf(events, sub, id), lanesInPage(ctx, t, p, sub)); diff != "" {
			t.Errorf("lanes of %s in the page (-broker events +page):\n%s", sub, diff)
		}
	}
	var asked int
	eval(ctx, t, p, `document.querySelectorAll('svg.life g.lane[data-sub="workers"] .mark[data-kind="redelivery-asked"]').length`, &asked)
	if want := countKind(events, broker.EventRedeliveryAsked, workers, id); asked != want || want == 0 {
		t.Errorf("%d redelivery requests drawn, %d in the events", asked, want)
	}
	var outcomes map[string]string
	eval(ctx, t, p, `Object.fromEntries([...document.querySelectorAll('svg.life g.row-sub')].map(g => [g.dataset.sub, g.dataset.outcome]))`, &outcomes)
	if diff := cmp.Diff(map[string]string{workers: "dead-lettered", audit: "acked"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +page):\n%s", diff)
	}
	var copyID string
	eval(ctx, t, p, `document.querySelector('svg.life g.copy').dataset.copy`, &copyID)
	if dead := b.Messages(deadTopic); copyID != idText(dead[0].ID) {
		t.Errorf("the picture's copy is %s, the dead-letter topic holds %s", copyID, idText(dead[0].ID))
	}
	save(ctx, t, p, "view-message.png", 560)
}

// checkTopic checks that the topic page lists the messages and the held
// one's pending entry, and that a new message appears without a reload.
func checkTopic(ctx context.Context, t *testing.T, p *chromium.Page, b *testkit.Broker, held broker.MessageID) {
	open(ctx, t, p, b.ViewURL()+"topic?name="+url.QueryEscape(ordersFull))
	var rows int
	eval(ctx, t, p, `document.querySelectorAll('tr.msg').length`, &rows)
	if rows != len(payloads) {
		t.Fatalf("%d message rows, want %d", rows, len(payloads))
	}
	var pending []string
	eval(ctx, t, p, `[...document.querySelectorAll('section.sub[data-sub="workers"] tr.consumer .chip')].map(c => c.firstChild.textContent + '/' + c.dataset.count)`, &pending)
	if want := []string{idText(held) + "/0"}; !cmp.Equal(want, pending) {
		t.Errorf("pending entries on %s: %v, want %v", workers, pending, want)
	}
	save(ctx, t, p, "view-topic.png", 900)
	produce(ctx, t, b, ordersTopic, "late")
	eval(ctx, t, p, `new Promise((done, fail) => {
		const start = Date.now();
		(function look() {
			const n = document.querySelectorAll('tr.msg').length;
			if (n > `+fmt.Sprint(len(payloads))+`) done(n);
			else if (Date.now() - start > 30000) fail(new Error('no new row after 30 s'));
			else setTimeout(look, 50);
		})();
	})`, &rows)
	if rows != len(payloads)+1 {
		t.Errorf("%d message rows after a new message, want %d", rows, len(payloads)+1)
	}
}

// checkReport opens the report a failing test writes (the same scenario in
// a child test that fails).
func checkReport(ctx context.Context, t *testing.T, p *chromium.Page) {
	rep := failingReport(t, t.TempDir())
	open(ctx, t, p, "file://"+rep)
	var pictures int
	eval(ctx, t, p, `document.querySelectorAll('svg.life').length`, &pictures)
	if pictures != len(payloads)+1 { // and the dead letter
		t.Errorf("%d pictures in the report, want %d", pictures, len(payloads)+1)
	}
	var failed bool
	eval(ctx, t, p, `document.querySelector('.note.failed').textContent.includes('TestScenarioThatFails failed')`, &failed)
	if !failed {
		t.Error("the report does not say the test failed")
	}
	save(ctx, t, p, "failure-report.png", 1000)
}

func TestBrowserDrawsATopicsMovesBetweenTheBrokersOfACluster(t *testing.T) {
	br := chromium.ForTest(t)
	c, ids := runMoves(t)
	ctx := ctxFor(t)
	p := page(ctx, t, br)
	open(ctx, t, p, messageURL(c.Broker(0).ViewURL(), movesTopic, idText(ids[0])))
	// From the cluster's own events: the topic's unloads and loads after the
	// message was published, while it was unsettled.
	var want []string
	published := false
	for _, e := range c.Events() {
		switch {
		case e.Kind == broker.EventPublished && e.Topic == movesTopic && e.ID.Entry == ids[0].Entry:
			published = true
		case e.Kind == broker.EventAcked && e.Topic == movesTopic && e.ID.Entry == ids[0].Entry:
			published = false
		case published && e.Topic == movesTopic && (e.Kind == broker.EventTopicUnloaded || e.Kind == broker.EventTopicLoaded):
			want = append(want, fmt.Sprintf("%s %d %s", e.Kind, e.Broker, e.Reason))
		}
	}
	var drawn []string
	eval(ctx, t, p, `[...document.querySelectorAll('svg.life g.row-moves .mark')].map(m => m.dataset.kind + ' ' + m.dataset.broker + ' ' + m.dataset.reason)`, &drawn)
	if diff := cmp.Diff(want, drawn); diff != "" || len(want) != 4 {
		t.Errorf("moves drawn (-events +page):\n%s", diff)
	}
	var lines, bands int
	eval(ctx, t, p, `document.querySelectorAll('svg.life g.moves line.move-line').length`, &lines)
	eval(ctx, t, p, `document.querySelectorAll('svg.life g.moves rect.move-band').length`, &bands)
	if lines != len(want) || bands != len(want)/2 {
		t.Errorf("%d lines and %d bands across the lanes, want %d and %d", lines, bands, len(want), len(want)/2)
	}
	var labels []string
	eval(ctx, t, p, `[...document.querySelectorAll('svg.life .move-label')].map(l => l.textContent)`, &labels)
	if diff := cmp.Diff([]string{"unloaded from broker 0 · loaded on broker 1", "unloaded from broker 1 (crash) · loaded on broker 0"}, labels); diff != "" {
		t.Errorf("move labels (-want +page):\n%s", diff)
	}
	// The labels stay inside the picture.
	var inside bool
	eval(ctx, t, p, `(() => { const svg = document.querySelector('svg.life').getBoundingClientRect();
		return [...document.querySelectorAll('svg.life .move-label')].every(l => { const r = l.getBoundingClientRect(); return r.left >= svg.left && r.right <= svg.right; }); })()`, &inside)
	if !inside {
		t.Error("a move's label runs out of the picture")
	}
	var node string
	eval(ctx, t, p, `document.querySelector('header.bar .node').textContent`, &node)
	if node != "this is broker 0 of a cluster of 2 · modular load manager" {
		t.Errorf("the bar says %q", node)
	}
	save(ctx, t, p, "view-cluster-message.png", 620)
}

func TestBrowserDrawsAMessagesCopyOnAnotherClusterWithItsDeliveries(t *testing.T) {
	br := chromium.ForTest(t)
	run := runGeo(t)
	ctx := ctxFor(t)
	p := page(ctx, t, br)
	open(ctx, t, p, messageURL(run.g.Cluster("a").Broker(0).ViewURL(), geoTopic, idText(run.original)))
	// From b's own events: the deliveries of the copy, per consumer.
	want := map[string][]int32{}
	for _, e := range run.g.Cluster("b").Events() {
		if e.Kind == broker.EventDelivered && e.Topic == geoTopic && e.ID.Ledger == run.cp.Ledger && e.ID.Entry == run.cp.Entry {
			want[e.Consumer] = append(want[e.Consumer], e.RedeliveryCount)
		}
	}
	got := map[string][]int32{}
	eval(ctx, t, p, `Object.fromEntries([...document.querySelectorAll('svg.life g.lane[data-cluster="b"]')].map(g =>
		[g.dataset.consumer, [...g.querySelectorAll('.mark[data-kind="delivered"][data-cluster="b"]')].map(m => +m.dataset.count)]))`, &got)
	if diff := cmp.Diff(want, got); diff != "" || len(want) != 1 {
		t.Errorf("the copy's lanes on b (-b's events +page):\n%s", diff)
	}
	var copyID string
	eval(ctx, t, p, `document.querySelector('svg.life g.replica[data-cluster="b"]').dataset.copy`, &copyID)
	if copyID != idText(run.cp) {
		t.Errorf("the picture's copy on b is %s, b's consumer got %s", copyID, idText(run.cp))
	}
	var where []string
	eval(ctx, t, p, `[...document.querySelectorAll('table.marks td.where')].map(td => td.textContent)`, &where)
	places := map[string]int{}
	for _, w := range where {
		places[w]++
	}
	// On each cluster its publish, a delivery and an ack.
	if diff := cmp.Diff(map[string]int{"cluster a": 3, "cluster b": 3}, places); diff != "" {
		t.Errorf("the marks' places (-want +page):\n%s", diff)
	}
	// The rows' labels stay inside the picture.
	var inside bool
	eval(ctx, t, p, `(() => { const svg = document.querySelector('svg.life').getBoundingClientRect();
		return [...document.querySelectorAll('svg.life text.label')].every(l => { const r = l.getBoundingClientRect(); return r.left >= svg.left && r.right <= svg.right && r.bottom <= svg.bottom; }); })()`, &inside)
	if !inside {
		t.Error("a row's label runs out of the picture")
	}
	save(ctx, t, p, "view-geo-message.png", 620)
}
