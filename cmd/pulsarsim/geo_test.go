package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

func TestClustersFlagServesClustersThatReplicateANamespace(t *testing.T) {
	names, err := parseClusters("east,west")
	if err != nil {
		t.Fatal(err)
	}
	records := make(chan map[string]string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveClusters(ctx, names, clusterSpec{n: 1, addr: "127.0.0.1:0", httpAddr: "127.0.0.1:0",
			logger: slog.New(recordHandler{records}), wrap: func(h http.Handler) (http.Handler, error) { return h, nil }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveClusters: %v", err)
		}
	}()
	urls, admins := map[string]string{}, map[string]string{}
	for len(urls) < 2 {
		select {
		case r := <-records:
			if r["msg"] == "pulsarsim geo cluster serving" {
				urls[r["cluster"]], admins[r["cluster"]] = r["url"], r["admin"]
			}
		case err := <-done:
			t.Fatalf("serveClusters returned early: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the clusters never said they were serving")
		}
	}
	// The admin API of either answers the cluster metadata of both.
	resp, err := http.Get(admins["east"] + "/admin/v2/clusters/west")
	if err != nil {
		t.Fatal(err)
	}
	var west map[string]any
	err = json.NewDecoder(resp.Body).Decode(&west)
	resp.Body.Close()
	if err != nil || west["brokerServiceUrl"] != urls["west"] {
		t.Fatalf("east's admin API says of west %v (%v), want its brokerServiceUrl %s", west, err, urls["west"])
	}
	req, _ := http.NewRequest(http.MethodPost, admins["west"]+"/admin/v2/namespaces/public/default/replication",
		strings.NewReader(`["east","west"]`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("set replication clusters: %s", resp.Status)
	}
	client := func(u string) pulsar.Client {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: u, Logger: log.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	topic := "persistent://public/default/geo-cli"
	cons, err := client(urls["west"]).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client(urls["east"]).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	if _, err := p.Send(rctx, &pulsar.ProducerMessage{Payload: []byte("across")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(rctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "across" || m.GetReplicatedFrom() != "east" {
		t.Errorf("west received %q replicated from %q", m.Payload(), m.GetReplicatedFrom())
	}
}

func TestClustersFlagRefusesAnEmptyOrRepeatedName(t *testing.T) {
	for _, v := range []string{"a,,b", "a,b,a", ""} {
		if _, err := parseClusters(v); err == nil {
			t.Errorf("-clusters %q accepted", v)
		}
	}
}
