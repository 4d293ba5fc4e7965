package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
)

// recordHandler sends each log record's attributes to a channel.
type recordHandler struct{ out chan map[string]string }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.out <- m
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

func TestBrokersFlagServesAClusterWhoseBrokersAllAnswer(t *testing.T) {
	records := make(chan map[string]string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveCluster(ctx, clusterSpec{n: 3, addr: "127.0.0.1:0", httpAddr: "127.0.0.1:0",
			proxyAddr: "127.0.0.1:0", proxyHTTP: "127.0.0.1:0",
			logger: slog.New(recordHandler{records}), wrap: func(h http.Handler) (http.Handler, error) { return h, nil }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveCluster: %v", err)
		}
	}()
	var urls, admins []string
	var serviceURL, proxyURL, proxyAdmin string
	for serviceURL == "" {
		select {
		case r := <-records:
			switch r["msg"] {
			case "pulsarsim broker serving":
				urls, admins = append(urls, r["url"]), append(admins, r["admin"])
			case "pulsarsim proxy serving":
				proxyURL, proxyAdmin = r["url"], r["admin"]
			case "pulsarsim cluster serving":
				serviceURL = r["url"]
			}
		case err := <-done:
			t.Fatalf("serveCluster returned early: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the cluster never said it was serving")
		}
	}
	if len(urls) != 3 || len(admins) != 3 {
		t.Fatalf("logged brokers %v, admin APIs %v; want 3 of each", urls, admins)
	}
	if serviceURL != "pulsar://"+strings.Join(trimScheme(urls), ",") {
		t.Errorf("cluster URL %s, brokers %v", serviceURL, urls)
	}
	for i, a := range admins {
		resp, err := http.Get(a + "/admin/v2/clusters")
		if err != nil {
			t.Fatalf("admin API of broker %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("admin API of broker %d answered %s", i, resp.Status)
		}
	}
	if proxyURL == "" || proxyAdmin == "" {
		t.Fatalf("the proxy logged %q and %q", proxyURL, proxyAdmin)
	}
	resp, err := http.Get(proxyAdmin + "/admin/v2/brokers/standalone")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the proxy's admin API answered %s", resp.Status)
	}
	// Every broker answers lookups, and so does the proxy: a client of
	// each produces to and consumes from topics, wherever their bundles
	// went.
	for i, u := range append(urls, proxyURL) {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: u, Logger: log.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		topic := "persistent://public/default/through-" + string(rune('a'+i))
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatalf("subscribe through broker %d: %v", i, err)
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("producer through broker %d: %v", i, err)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := p.Send(rctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if _, err := cons.Receive(rctx); err != nil {
			t.Fatal(err)
		}
		rcancel()
		p.Close()
		cons.Close()
		client.Close()
	}
}

func trimScheme(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = strings.TrimPrefix(u, "pulsar://")
	}
	return out
}

func TestLoadManagerFlagTakesPulsarsClassNames(t *testing.T) {
	for v, want := range map[string]broker.LoadManager{
		"modular": broker.ModularLoadManager, "extensible": broker.ExtensibleLoadManager,
		"org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl": broker.ExtensibleLoadManager,
	} {
		if got, err := parseLoadManager(v); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", v, got, err, want)
		}
	}
	if _, err := parseLoadManager("simple"); err == nil || !strings.Contains(err.Error(), "modular or extensible") {
		t.Errorf("an unknown load manager: %v", err)
	}
}
