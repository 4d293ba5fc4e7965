package scenarios_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// TestProducerAndConsumerGoOnAcrossABundleSplitWithUnload has
// pulsar-client-go produce and consume on a topic of a cluster while its
// bundle is split with unload=true: both are closed, look the topic up
// again, and go on; every message not acknowledged before the split comes
// (again), every one sent after it comes, and no acknowledged one returns.
func TestProducerAndConsumerGoOnAcrossABundleSplitWithUnload(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/split-traffic"
	c.Move(topic, 1)
	client := c.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m%d", i))}); err != nil {
				t.Fatalf("send m%d: %v", i, err)
			}
		}
	}
	send(0, 10)
	for range 10 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var i int
		fmt.Sscanf(string(m.Payload()), "m%d", &i)
		if i < 5 {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	parent := c.Bundle(topic)
	halves := c.SplitBundle("public/default", strings.TrimPrefix(parent, "public/default/"), testkit.SplitUnload())
	if len(halves) != 2 || c.Bundle(topic) == parent {
		t.Fatalf("split of %s: %v, the topic's bundle %s", parent, halves, c.Bundle(topic))
	}
	// Both clients come back by themselves, at the owner the lookups gave
	// the topic's half.
	c.Broker(0).WaitFor(ctx, "the producer and the consumer back on "+topic, func() bool {
		owner := c.Owner(topic)
		if owner < 0 {
			return false
		}
		ts, ok := c.Broker(owner).Topic(topic)
		sub, _ := c.Broker(owner).Subscription(topic, "s")
		return ok && len(ts.Producers) == 1 && len(sub.Consumers) == 1
	})
	if raceDetector { // see race_on_test.go: a new producer sends
		p.Close()
		if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true}); err != nil {
			t.Fatal(err)
		}
	}
	send(10, 20)
	seen := map[string]int{}
	for missing := 15; missing > 0; {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive, %d still to come (seen %v): %v", missing, seen, err)
		}
		var i int
		fmt.Sscanf(string(m.Payload()), "m%d", &i)
		if i < 5 {
			t.Errorf("m%d, acknowledged before the split, came again", i)
		}
		if seen[string(m.Payload())]++; seen[string(m.Payload())] == 1 && i >= 5 {
			missing--
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// Both were closed at the split and opened again.
	opened := map[testkit.EventKind]int{}
	for i := range c.Size() {
		c.Broker(i).DeliverEvents()
		for _, e := range c.Broker(i).Events() {
			if e.Topic == topic {
				opened[e.Kind]++
			}
		}
	}
	if opened[testkit.EventProducerClosed] < 1 || opened[testkit.EventConsumerClosed] < 1 ||
		opened[testkit.EventProducerOpened] < 2 || opened[testkit.EventConsumerOpened] < 2 {
		t.Errorf("the split with unload did not move the clients: %v", opened)
	}
	if owner := c.Owner(topic); owner < 0 {
		t.Errorf("the topic's half has no owner after the clients came back")
	}
	if err := c.CheckInvariants(); err != nil {
		t.Error(err)
	}
}
