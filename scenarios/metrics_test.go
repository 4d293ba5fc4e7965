package scenarios_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

var metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$`)

// metricSeries reads a broker's /metrics and returns the series of one
// topic, by name and the labels other than cluster, namespace and topic,
// with their values as Pulsar formats them.
func metricSeries(t *testing.T, admin, topic string) map[string]string {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[2], `topic="`+topic+`"`) {
			continue
		}
		var rest []string
		for _, l := range strings.Split(m[2], ",") {
			if !strings.HasPrefix(l, "cluster=") && !strings.HasPrefix(l, "namespace=") && !strings.HasPrefix(l, "topic=") {
				rest = append(rest, l)
			}
		}
		out[m[1]+"{"+strings.Join(rest, ",")+"}"] = m[3]
	}
	return out
}

// meteredTraffic publishes 10 messages to topic from a producer named
// metered-producer, delivers them to a Shared consumer that acknowledges 4
// (the broker confirms), and returns the topic's series once its subscription's backlog shows 6: a real broker
// may answer metrics computed a moment before.
func meteredTraffic(t *testing.T, tg *scenarios.Target, admin, topic string) map[string]string {
	client := tg.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	// The producer's name travels in every message's metadata, which the
	// byte counts include: a generated name ("standalone-0-12") grows with
	// the producers a broker has seen, so both brokers get the same one.
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "metered-producer", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx := scenarios.Ctx(t)
	for i := range 10 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "metered message %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		series := metricSeries(t, admin, topic)
		if series[`pulsar_subscription_back_log{subscription="sub"}`] == "6" &&
			series[`pulsar_subscription_unacked_messages{subscription="sub"}`] == "6" {
			return series
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics never showed the backlog of 6 (a Pulsar needs exposeTopicLevelMetricsInPrometheus=true, "+
				"its default); last: %v", series)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exactMetrics are the series whose values both brokers must agree on:
// counts, not rates.
var exactMetrics = map[string]bool{
	"pulsar_subscriptions_count": true, "pulsar_producers_count": true, "pulsar_consumers_count": true,
	"pulsar_in_messages_total": true, "pulsar_in_bytes_total": true,
	"pulsar_storage_size": true, "pulsar_storage_logical_size": true, "pulsar_storage_offloaded_size": true,
	"pulsar_msg_backlog": true, "pulsar_storage_backlog_quota_limit": true, "pulsar_storage_backlog_quota_limit_time": true,
	"pulsar_subscription_back_log": true, "pulsar_subscription_back_log_no_delayed": true,
	"pulsar_subscription_delayed": true, "pulsar_subscription_unacked_messages": true,
	"pulsar_subscription_blocked_on_unacked_messages": true, "pulsar_subscription_consumers_count": true,
	"pulsar_out_bytes_total": true, "pulsar_out_messages_total": true,
}

// TestDifferentialMetrics runs the same traffic on pulsarsim and on the
// Pulsar of PULSAR_URL and PULSAR_ADMIN_URL (with topic-level metrics on,
// Pulsar's default), and compares the topic's series: every series
// pulsarsim writes exists on Pulsar with the same labels, the counts are
// equal, and rates are numbers in Pulsar's format.
func TestDifferentialMetrics(t *testing.T) {
	url := oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, realAdmin)
	got := meteredTraffic(t, sim, sim.Sim.AdminURL(), sim.Topic("metered"))
	want := meteredTraffic(t, real, realAdmin, real.Topic("metered"))
	rate := regexp.MustCompile(`^\d+\.(0|\d{3})$`)
	var names []string
	for series := range got {
		names = append(names, series)
	}
	sort.Strings(names)
	for _, series := range names {
		w, ok := want[series]
		name, _, _ := strings.Cut(series, "{")
		switch {
		case !ok:
			t.Errorf("%s: pulsarsim writes it, Pulsar does not", series)
		case exactMetrics[name] && w != got[series]:
			t.Errorf("%s: Pulsar %s, pulsarsim %s", series, w, got[series])
		case !exactMetrics[name] && (!rate.MatchString(got[series]) || !rate.MatchString(w)):
			t.Errorf("%s: Pulsar %s, pulsarsim %s: not a rate as Pulsar writes it", series, w, got[series])
		}
	}
	for _, must := range []string{`pulsar_msg_backlog{}`, `pulsar_rate_in{}`, `pulsar_rate_out{}`,
		`pulsar_subscription_back_log{subscription="sub"}`, `pulsar_subscription_unacked_messages{subscription="sub"}`,
		`pulsar_subscription_msg_rate_redeliver{subscription="sub"}`} {
		if _, ok := got[must]; !ok {
			t.Errorf("pulsarsim does not write %s", must)
		}
	}
	if t.Failed() {
		t.Logf("Pulsar's series:\n%s", cmp.Diff(map[string]string{}, want))
	}
	v, _ := strconv.Atoi(got[`pulsar_in_messages_total{}`])
	t.Logf("%d series compared; %d messages in", len(got), v)
}
