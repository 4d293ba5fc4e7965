package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/proxy"
)

func TestAClientThatKnowsOnlyTheProxyReachesTheOwningBroker(t *testing.T) {
	c := broker.NewCluster(2)
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	urls := func() []string {
		var out []string
		for _, b := range c.Brokers() {
			out = append(out, b.URL())
		}
		return out
	}
	p := proxy.New(urls, func() []string { return nil })
	if err := p.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const topic = "persistent://public/default/behind-the-proxy"
	if err := c.Move(topic, 1); err != nil {
		t.Fatal(err)
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := c.Broker(1).LoadedTopics(); len(got) != 1 || got[0] != topic {
		t.Errorf("broker 1 loaded %v, want %s", got, topic)
	}
	if p.Lookups() == 0 || p.Relayed() == 0 {
		t.Errorf("the proxy answered %d lookups and relayed %d connections; want the client's lookup and its producer's connection",
			p.Lookups(), p.Relayed())
	}
	if n := c.Broker(1).LookupsAnswered() + c.Broker(0).LookupsAnswered(); n == 0 {
		t.Error("the brokers answered no lookup: the proxy did not ask them")
	}
}

func TestAProxyWithNoBrokerAnswersServiceNotReady(t *testing.T) {
	p := proxy.New(func() []string { return nil }, func() []string { return nil })
	if err := p.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: p.URL(), Logger: log.DefaultNopLogger(),
		OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "nowhere"}); err == nil {
		t.Fatal("a producer behind a proxy with no broker was created")
	}
}
