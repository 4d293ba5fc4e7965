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

// BenchmarkClusterStart measures starting a three-broker cluster until
// every broker accepts connections, and closing it.
func BenchmarkClusterStart(b *testing.B) {
	for b.Loop() {
		c := broker.NewCluster(3)
		if err := c.Listen(); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkClusterStartToFirstRoundTrip measures a three-broker cluster's
// start until a fresh client, given every broker's URL, has subscribed,
// produced, received and acknowledged one message.
func BenchmarkClusterStartToFirstRoundTrip(b *testing.B) {
	for b.Loop() {
		c := broker.NewCluster(3)
		if err := c.Listen(); err != nil {
			b.Fatal(err)
		}
		if err := roundTrip(c.URL(), "first"); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkClusterUnloadToProduceAndConsumeAgain measures, with
// pulsar-client-go, the time from a bundle unload that moves a topic to the
// other broker until its producer's next message (sent at once, waiting in
// the client while it reconnects) is acknowledged by the broker and
// received by its consumer, which also moved. Each iteration moves the
// topic once; "unload-to-consumed" gives the median and 99th percentile.
func BenchmarkClusterUnloadToProduceAndConsumeAgain(b *testing.B) {
	for _, lm := range []struct {
		name string
		lm   broker.LoadManager
	}{{"modular", broker.ModularLoadManager}, {"extensible", broker.ExtensibleLoadManager}} {
		b.Run(lm.name, func(b *testing.B) {
			c := broker.NewCluster(2, broker.WithLoadManager(lm.lm))
			if err := c.Listen(); err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			const topic = "persistent://public/default/bench-moving"
			client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.URL(), Logger: log.DefaultNopLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			var took []time.Duration
			i := 0
			for b.Loop() {
				owner, _ := c.Owner(topic)
				start := time.Now()
				if err := c.Move(topic, 1-max(owner, 0)); err != nil {
					b.Fatal(err)
				}
				if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
					b.Fatal(err)
				}
				for {
					m, err := cons.Receive(ctx)
					if err != nil {
						b.Fatal(err)
					}
					cons.Ack(m)
					if string(m.Payload()) == fmt.Sprint(i) {
						break
					}
				}
				took = append(took, time.Since(start))
				i++
			}
			reportQuantiles(b, "unload-to-consumed", took)
		})
	}
}
