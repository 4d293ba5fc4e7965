package testkit_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// A zero-queue consumer whose Receive races an unload of its topic: the
// Receive's FLOW may reach the broker right behind the reconnecting
// SUBSCRIBE, before the client has registered the consumer on its
// connection. As on Pulsar, the broker drops that FLOW while the topic
// loads, and the client flows again once subscribed; so every message comes,
// in order, however the race falls. Each round unloads after a different
// delay to let it fall differently. PULSARSIM_TEST_TOPIC_LOAD_TIME=0s runs
// it with topics that load at once, where it fails (a lost message, or a
// Receive that never returns) in about half the runs.
func TestZeroQueueReceiveRacingAnUnloadGetsEveryMessage(t *testing.T) {
	opts := []testkit.Option{testkit.WithDataDir(t.TempDir())}
	if d, err := time.ParseDuration(os.Getenv("PULSARSIM_TEST_TOPIC_LOAD_TIME")); err == nil {
		opts = append(opts, testkit.WithBroker(broker.WithTopicLoadTime(d)))
	}
	b := testkit.Start(t, opts...)
	// An ack sent while the consumer reconnects is dropped, as Pulsar drops
	// it, and its response never comes: the client gives up after 200 ms
	// and the test acks again.
	c := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 200 * time.Millisecond })
	topic := "persistent://public/default/zero-queue"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", EnableZeroQueueConsumer: true,
		AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	const rounds = 30
	produceN(t, c, topic, rounds)
	for i := range rounds {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(time.Duration(i%10) * 250 * time.Microsecond)
			b.UnloadTopic(topic)
		}()
		m, err := cons.Receive(ctxFor(t))
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if got, want := string(m.Payload()), fmt.Sprintf("m%d", i); got != want {
			t.Fatalf("round %d: received %s, want %s", i, got, want)
		}
		if m.Properties()["i"] != strconv.Itoa(i) {
			t.Fatalf("round %d: properties %v", i, m.Properties())
		}
		ackAgain(t, cons, m)
		<-done
	}
}

// ackAgain acknowledges m, again while the ack's response does not come.
func ackAgain(t *testing.T, cons pulsar.Consumer, m pulsar.Message) {
	t.Helper()
	var err error
	for range 50 {
		if err = cons.Ack(m); err == nil {
			return
		}
	}
	t.Fatalf("ack of %v: %v", m.ID(), err)
}
