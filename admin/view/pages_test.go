package view_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

// get fetches u and returns its status and body.
func get(t *testing.T, u string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestViewPagesOfTheOrdersScenario(t *testing.T) {
	b, ids := runOrders(t)
	base := b.ViewURL()
	topicURL := base + "topic?name=" + url.QueryEscape(ordersFull)

	t.Run("the index lists both topics, with links that work", func(t *testing.T) {
		code, body := get(t, base)
		for _, want := range []string{`data-topic="persistent://public/default/orders"`, `data-topic="persistent://public/default/orders-dlq"`} {
			if code != 200 || !strings.Contains(body, want) {
				t.Fatalf("%d, body lacks %s:\n%s", code, want, body)
			}
		}
		links := regexp.MustCompile(`href="(topic\?[^"]+)"`).FindAllStringSubmatch(body, -1)
		if len(links) < 2 {
			t.Fatalf("%d topic links", len(links))
		}
		for _, l := range links {
			u := base + html.UnescapeString(l[1])
			if code, page := get(t, u); code != 200 || !strings.Contains(page, `<h2 id="messages">`) {
				t.Errorf("GET %s: %d", u, code)
			}
		}
	})
	t.Run("the topic page lists every message and the dead-letter copy", func(t *testing.T) {
		code, body := get(t, topicURL)
		if code != 200 || strings.Count(body, `<tr class="msg"`) != len(payloads) {
			t.Fatalf("%d, %d message rows, want %d", code, strings.Count(body, `<tr class="msg"`), len(payloads))
		}
		if want := `data-entry="` + idText(ids["poison"]) + `" data-copy-topic="persistent://public/default/orders-dlq"`; !strings.Contains(body, want) {
			t.Fatalf("no copy row %s", want)
		}
		for _, l := range regexp.MustCompile(`href="(message\?[^"]+)"`).FindAllStringSubmatch(body, -1) {
			u := base + html.UnescapeString(l[1])
			if code, page := get(t, u); code != 200 || !strings.Contains(page, `<svg class="life"`) {
				t.Errorf("GET %s: %d", u, code)
			}
		}
	})
	t.Run("a refresh gets the main part only", func(t *testing.T) {
		code, body := get(t, topicURL, "X-View-Part", "main")
		if code != 200 || strings.Contains(body, "<html") || !strings.Contains(body, `<tr class="msg"`) {
			t.Fatalf("%d:\n%s", code, body)
		}
	})
	t.Run("a message page draws its life", func(t *testing.T) {
		code, body := get(t, messageURL(base, ordersFull, idText(ids["poison"])))
		if code != 200 || !strings.Contains(body, `<svg class="life"`) || !strings.Contains(body, `data-outcome="dead-lettered"`) {
			t.Fatalf("%d:\n%s", code, body)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		for u, want := range map[string]int{
			base + "topic?name=" + url.QueryEscape("persistent://public/default/nowhere"): 404,
			base + "topic?name=" + url.QueryEscape("bad://name"):                          400,
			messageURL(base, ordersFull, "x"):                                             400,
			messageURL(base, ordersFull, "1:999"):                                         404,
			base + "nothing-here":                                                         404,
		} {
			if code, _ := get(t, u); code != want {
				t.Errorf("GET %s: %d, want %d", u, code, want)
			}
		}
	})
	t.Run("the style sheet and the script are served", func(t *testing.T) {
		for _, f := range []string{"static/view.css", "static/view.js"} {
			if code, body := get(t, base+f); code != 200 || len(body) < 500 {
				t.Errorf("GET %s: %d, %d bytes", f, code, len(body))
			}
		}
	})
}

func TestLiveStreamAnnouncesNewEvents(t *testing.T) {
	b, _ := runOrders(t)
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.ViewURL()+"events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				return d
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return ""
	}
	first := next()
	produce(ctx, t, b, ordersTopic, "late")
	if second := next(); second == first {
		t.Fatalf("the stream announced %s twice", first)
	}
}

func TestAMessageOlderThanTheHistoryStillShowsWhatTheTopicHolds(t *testing.T) {
	b := broker.New()
	h := view.NewHistory(1024)
	b.OnEvent(h.Record)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v := view.New(b, h)
	defer v.Close()
	srv := httptest.NewServer(http.StripPrefix("/view", v))
	defer srv.Close()

	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "old", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := ctxFor(t)
	for i := range 2100 { // one event each: the first chunk of 1024 is forgotten
		p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("m", i))}, nil)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	b.DeliverEvents()
	if st := h.Stats(); st.Dropped == 0 {
		t.Fatalf("the history forgot nothing: %+v", st)
	}
	code, body := get(t, messageURL(srv.URL+"/view/", "old", "1:0"))
	if code != 200 || !strings.Contains(body, "The history holds no event of this message") || !strings.Contains(body, "m0") {
		t.Fatalf("%d:\n%s", code, body)
	}
}

// TestATopicPageReadInStepsMatchesOneReadAtOnce visits a topic page after
// every few events, so that the view brings its lives up to date a little at
// a time, and compares the last page with a new view's, which reads every
// event at once: with every event held, and with a history that forgets.
func TestATopicPageReadInStepsMatchesOneReadAtOnce(t *testing.T) {
	for _, limit := range []int{0, 1024} {
		t.Run(fmt.Sprintf("history limit %d", limit), func(t *testing.T) {
			b := broker.New()
			h := view.NewHistory(limit)
			b.OnEvent(h.Record)
			if err := b.Listen("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			stepwise := view.New(b, h)
			defer stepwise.Close()
			srv := httptest.NewServer(stepwise)
			defer srv.Close()
			client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			ctx := ctxFor(t)
			c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "steps", SubscriptionName: "s", Type: pulsar.Shared,
				NackRedeliveryDelay: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "steps", DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			page := srv.URL + "/topic?name=steps&sort=busiest"
			for i := range 400 {
				if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
					t.Fatal(err)
				}
				m, err := c.Receive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 && m.RedeliveryCount() == 0 {
					c.Nack(m)
				} else {
					c.Ack(m)
				}
				if i%25 == 0 {
					get(t, page, "X-View-Part", "main")
				}
			}
			for {
				// Settle the nacked messages: each comes back once.
				rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				m, err := c.Receive(rctx)
				cancel()
				if err != nil {
					break
				}
				c.Ack(m)
			}
			_, got := get(t, page, "X-View-Part", "main")
			fresh := view.New(b, h)
			defer fresh.Close()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/topic?name=steps&sort=busiest", nil)
			req.Header.Set("X-View-Part", "main")
			fresh.ServeHTTP(rec, req)
			if want := rec.Body.String(); got != want {
				t.Errorf("the page read in steps differs from one read at once:\n%s", cmp.Diff(want, got))
			}
			if limit > 0 && h.Stats().Dropped == 0 {
				t.Errorf("the history forgot nothing: %+v", h.Stats())
			}
		})
	}
}
