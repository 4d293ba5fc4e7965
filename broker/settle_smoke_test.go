package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestSmokeSharedNack(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "smoke", SubscriptionName: "s", Type: pulsar.Shared, NackRedeliveryDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "smoke"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for want := uint32(0); want < 4; want++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.RedeliveryCount() != want {
			t.Fatalf("count %d want %d", m.RedeliveryCount(), want)
		}
		if want == 3 {
			cons.Ack(m)
		} else {
			cons.Nack(m)
		}
	}
}
