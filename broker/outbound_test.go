package broker_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// Large entries are written to consumers by reference and small ones
// copied (broker/outbound.go); a consumer must get every one intact and in
// order, whatever the mix within one write.
func TestLargeAndSmallEntriesReachTheConsumerIntactInOrder(t *testing.T) {
	b := testkit.Start(t)
	c := b.Client()
	ctx := testCtx(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{
		Topic: "mixed", SubscriptionName: "s", Type: pulsar.Exclusive,
	})
	payload := func(i int) []byte {
		size := 10
		if i%3 == 0 {
			size = 100 << 10 // far above the size written by reference
		}
		p := bytes.Repeat([]byte{byte(i)}, size)
		return append(p, fmt.Sprint(i)...)
	}
	const n = 30
	// Unbatched, so that each message is an entry of its own.
	produceUnbatched(t, c, "mixed", n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: payload(i)}
	})
	for i := range n {
		m := receive(t, ctx, cons)
		if !bytes.Equal(m.Payload(), payload(i)) {
			t.Fatalf("message %d: %d bytes ending %q, want %d bytes ending %q", i,
				len(m.Payload()), m.Payload()[max(0, len(m.Payload())-3):], len(payload(i)), fmt.Sprint(i))
		}
	}
}
