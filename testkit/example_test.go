package testkit_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// inTest runs f as a test would, so that these examples can call the
// functions that take a testing.TB. In your own code, f's body is the body
// of a TestXxx function.
func inTest(f func(t *testing.T)) {
	// The inner run reads go test's flags. Keep it quiet under -v (an
	// example's output is compared with its Output comment); let it run
	// whatever -run and -skip say (they named the example, not this inner
	// test, and would otherwise select or skip it by its own name); and run
	// it once, not once per -count or -cpu value (its output would repeat).
	for name, value := range map[string]string{"test.v": "false", "test.run": "", "test.skip": "", "test.count": "1"} {
		if fl := flag.Lookup(name); fl != nil {
			old := fl.Value.String()
			fl.Value.Set(value)
			defer fl.Value.Set(old)
		}
	}
	ran := false
	testing.RunTests(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Example", F: func(t *testing.T) {
			if ran { // a second value of -cpu
				t.SkipNow()
			}
			ran = true
			f(t)
		}}})
}

func ExampleStart() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t) // closed by t.Cleanup
		client := b.Client()  // pulsar-client-go, pointed at b.URL()

		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		_, err = producer.Send(context.Background(), &pulsar.ProducerMessage{
			Payload: []byte("order-1"), Properties: map[string]string{"kind": "new"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Messages("orders") {
			fmt.Printf("%s %v\n", m.Payload, m.Properties)
		}
	})
	// Output: order-1 map[kind:new]
}

func ExampleBroker_WaitBacklog() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t)
		ctx := context.Background()
		consumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{
			Topic: "jobs", SubscriptionName: "workers", Type: pulsar.Shared,
			NackRedeliveryDelay: 10 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer consumer.Close()
		producer, _ := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "jobs"})
		defer producer.Close()
		producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("job")})

		m, _ := consumer.Receive(ctx)
		consumer.Nack(m) // asks for redelivery after 10 ms
		m, _ = consumer.Receive(ctx)
		fmt.Println("redelivery count:", m.RedeliveryCount())

		s, _ := b.Subscription("jobs", "workers") // what the broker holds
		fmt.Println("pending at", s.Consumers[0].Name == consumer.Name(), "with count", s.Consumers[0].Pending[0].RedeliveryCount)

		consumer.Ack(m)
		b.WaitBacklog(ctx, "jobs", "workers", 0) // no sleeping loop
		s, _ = b.Subscription("jobs", "workers")
		fmt.Println("backlog:", s.Backlog)
	})
	// Output:
	// redelivery count: 1
	// pending at true with count 1
	// backlog: 0
}

func ExampleBroker_FailNext() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t)
		// The next SUBSCRIBE fails as a broker that is not ready answers it.
		b.FailNext(testkit.CommandSubscribe, 1, testkit.ServerErrorServiceNotReady)
		_, err := b.Client().Subscribe(pulsar.ConsumerOptions{
			Topic: "t", SubscriptionName: "s", MaxReconnectToBroker: ptr(uint(0)),
		})
		fmt.Println("first subscribe failed:", err != nil)
		consumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "t", SubscriptionName: "s"})
		fmt.Println("second subscribe failed:", err != nil)
		if err == nil {
			consumer.Close()
		}
	})
	// Output:
	// first subscribe failed: true
	// second subscribe failed: false
}

func ExampleBroker_Hold() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t)
		ctx := context.Background()
		// Set aside the ACKs of topic "jobs" until the test releases them.
		acks := b.Hold(testkit.Fault{Command: testkit.CommandAck, Topic: "jobs"})
		consumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{
			Topic: "jobs", SubscriptionName: "workers", Type: pulsar.Shared,
			NackRedeliveryDelay: 10 * time.Millisecond,
			AckGroupingOptions:  &pulsar.AckGroupingOptions{MaxSize: 1}, // ack at once
		})
		if err != nil {
			t.Fatal(err)
		}
		defer consumer.Close()
		producer, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		if _, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("job")}); err != nil {
			t.Fatal(err)
		}

		m, _ := consumer.Receive(ctx)
		consumer.Ack(m)
		ack := b.NextHeld(ctx, acks)
		// The nack's REDELIVER overtakes the held ACK on the same connection.
		consumer.Nack(m)
		again, _ := consumer.Receive(ctx)
		fmt.Println("redelivered with count", again.RedeliveryCount())
		b.Release(ctx, ack) // the ACK arrives now
		s, _ := b.Subscription("jobs", "workers")
		fmt.Println("backlog:", s.Backlog)
	})
	// Output:
	// redelivered with count 1
	// backlog: 0
}

func ExampleBroker_Drive() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t)
		ctx := context.Background()
		// A handler that nacks every message twice, then acks it.
		d := b.Drive(testkit.DriverOptions{
			Consumer: pulsar.ConsumerOptions{Topic: "work", SubscriptionName: "s", Type: pulsar.Shared,
				NackRedeliveryDelay: 10 * time.Millisecond},
			Script: func(_ pulsar.Message, attempt int) testkit.Outcome {
				if attempt < 2 {
					return testkit.Nack
				}
				return testkit.Ack
			},
		})
		producer, _ := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "work"})
		defer producer.Close()
		producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("w")})
		d.Wait(ctx, "the ack", func(ds []testkit.Delivery) bool { return len(ds) == 3 })
		for _, del := range d.Deliveries() {
			fmt.Println(del.RedeliveryCount, del.Outcome)
		}
	})
	// Output:
	// 0 nack
	// 1 nack
	// 2 ack
}

func ExampleBroker_Advance() {
	inTest(func(t *testing.T) {
		b := testkit.Start(t)
		c, _ := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "ttl", SubscriptionName: "s"})
		c.Close() // a durable subscription nobody reads
		producer, _ := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "ttl"})
		defer producer.Close()
		producer.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("old")})

		b.SetTopicPolicies("ttl", testkit.Policies{MessageTTLSeconds: new(3600)}) // an hour
		s, _ := b.Subscription("ttl", "s")
		fmt.Println("backlog before:", s.Backlog)
		b.Advance(2 * time.Hour) // the broker clock jumps; TTL expiry runs
		s, _ = b.Subscription("ttl", "s")
		fmt.Println("backlog after:", s.Backlog)
	})
	// Output:
	// backlog before: 1
	// backlog after: 0
}

func ptr[T any](v T) *T { return &v }
