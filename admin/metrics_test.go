package admin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
)

// promLine is a sample line of Prometheus' text format: name, labels and a
// number.
var promLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$`)

// scrape fetches /metrics (following its redirect) and parses it strictly:
// each family declared once by a TYPE line before its samples, which are
// contiguous; every value a number. It returns the samples by
// name{labels}.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	declared := map[string]bool{}
	current := ""
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(name, " ")
			if declared[name] || typ != "gauge" {
				t.Fatalf("family %s declared twice or not a gauge: %q", name, line)
			}
			declared[name], current = true, name
			continue
		}
		m := promLine.FindStringSubmatch(line)
		if m == nil || m[1] != current {
			t.Fatalf("line %q is not a sample of the family %s", line, current)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out[m[1]+m[2]] = v
	}
	return out
}

func TestMetricsShowTopicsAndSubscriptionsAsPulsarNamesThem(t *testing.T) {
	b, _, base := startAdmin(t)
	const topic = "persistent://public/default/metered"
	c := newClient(t, b)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 10 {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		m, err := cons.Receive(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	topicLabels := `{cluster="standalone",namespace="public/default",topic="` + topic + `"}`
	subLabels := `{cluster="standalone",namespace="public/default",topic="` + topic + `",subscription="sub"}`
	got := scrape(t, base)
	want := map[string]float64{
		"pulsar_in_messages_total" + topicLabels:                               10,
		"pulsar_msg_backlog" + topicLabels:                                     6,
		"pulsar_producers_count" + topicLabels:                                 1,
		"pulsar_consumers_count" + topicLabels:                                 1,
		"pulsar_subscriptions_count" + topicLabels:                             1,
		"pulsar_subscription_back_log" + subLabels:                             6,
		"pulsar_subscription_unacked_messages" + subLabels:                     6,
		"pulsar_subscription_consumers_count" + subLabels:                      1,
		"pulsar_subscription_blocked_on_unacked_messages" + subLabels:          0,
		"pulsar_out_messages_total" + subLabels:                                10,
		`pulsar_topics_count{cluster="standalone",namespace="public/default"}`: 1,
		`pulsar_broker_msg_backlog{cluster="standalone"}`:                      6,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Rates are averages over at least a second of wall clock; the bytes
	// are counted at once.
	if got["pulsar_in_bytes_total"+topicLabels] <= 0 {
		t.Errorf("no bytes in: %v", got["pulsar_in_bytes_total"+topicLabels])
	}
	if _, ok := got["pulsar_rate_in"+topicLabels]; !ok {
		t.Error("no pulsar_rate_in series")
	}
}

func TestMetricsShowASubscriptionBlockedOnItsUnackedLimit(t *testing.T) {
	b, _, base := startAdmin(t)
	const topic = "persistent://public/default/blocked"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.MaxUnackedMessagesPerSubscription = new(2) }); err != nil {
		t.Fatal(err)
	}
	// Two deliveries reach the limit: the subscription blocks in the same
	// step, before the second delivery's event goes out.
	delivered := make(chan struct{}, 5)
	stop := b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventDelivered && e.Topic == topic {
			delivered <- struct{}{}
		}
	})
	defer stop()
	c := newClient(t, b)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for range 5 {
		if _, err := b.Publish(topic, broker.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			t.Fatal("the two deliveries did not happen")
		}
	}
	labels := `{cluster="standalone",namespace="public/default",topic="` + topic + `",subscription="sub"}`
	got := scrape(t, base)
	// One read may deliver more than the limit, as in Pulsar, which checks
	// the limit before it reads.
	if got["pulsar_subscription_blocked_on_unacked_messages"+labels] != 1 || got["pulsar_subscription_unacked_messages"+labels] < 2 {
		t.Fatalf("blocked %v, unacked %v; want 1 and at least 2", got["pulsar_subscription_blocked_on_unacked_messages"+labels],
			got["pulsar_subscription_unacked_messages"+labels])
	}
}

func TestMetricsRedirectsToTheSlashedPath(t *testing.T) {
	_, _, base := startAdmin(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != base+"/metrics/" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
