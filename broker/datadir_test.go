package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestAClusterStartedAgainOnItsDataDirHasItsMessagesAndSplits(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := "persistent://public/default/cluster-dd"
	start := func() *broker.Cluster {
		c := broker.NewCluster(2, broker.WithDataDir(dir))
		if err := c.Listen("127.0.0.1:0", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := start()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cons.Close()
	client.Close()
	// Split the topic's bundle at its owner: the cluster has 17 bundles.
	bd, err := c.BundleOf(topic)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := c.Owner(topic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Broker(owner).SplitBundle(bd, broker.SplitOptions{}); err != nil {
		t.Fatal(err)
	}
	bundles := len(c.Broker(0).Bundles("public/default"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = start()
	defer c.Close()
	if got := len(c.Broker(1).Bundles("public/default")); got != bundles {
		t.Fatalf("public/default has %d bundles after the cluster started again, want the %d it had", got, bundles)
	}
	client, err = pulsar.NewClient(pulsar.ClientOptions{URL: c.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := range 5 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprint(i) {
			t.Fatalf("message %d is %q", i, m.Payload())
		}
	}
}
