package broker_test

import (
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// A broker without event hooks defers the writer's wake-up for SEND
// receipts while more frames are already read (conn.deferWake); these
// tests pin down that every receipt still goes out, in order, and that none
// waits behind a command that waits.

// plainBroker starts a broker with no event hook, as cmd/pulsarsim runs
// without its view; testkit.Start always registers one.
func plainBroker(t *testing.T) string {
	t.Helper()
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Addr().String()
}

func TestPipelinedSendsGetEveryReceiptInOrderWithoutHooks(t *testing.T) {
	c := dialRaw(t, plainBroker(t))
	c.connect()
	c.producer("pipelined", 1)
	const n = 500
	var burst []byte
	for i := range n {
		burst = append(burst, sendFrame(1, uint64(i), []byte("m"))...)
	}
	c.write(burst) // many frames arrive together: their receipts are deferred
	for i := range n {
		r := c.read()
		if r.SendReceipt == nil || r.SendReceipt.GetSequenceId() != uint64(i) {
			t.Fatalf("reply %d: %v, want the receipt of sequence id %d", i, r, i)
		}
	}
	// One SEND at a time: each receipt comes although nothing follows it.
	for i := n; i < n+3; i++ {
		c.write(sendFrame(1, uint64(i), []byte("m")))
		if r := c.read(); r.SendReceipt.GetSequenceId() != uint64(i) {
			t.Fatalf("got %v, want the receipt of sequence id %d", r, i)
		}
	}
}

func TestReceiptDoesNotWaitBehindADelayedSend(t *testing.T) {
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := dialRaw(t, b.Addr().String())
	c.connect()
	c.producer("slow", 1)
	slow := c.producer("slow", 2).GetProducerName()
	if _, err := b.AddFault(broker.Fault{Command: "SEND", Producer: slow, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// Both SENDs arrive in one write: the first one's receipt must not wait
	// for the second one's hour (the read deadline is 10 s).
	c.write(append(sendFrame(1, 7, []byte("a")), sendFrame(2, 8, []byte("b"))...))
	r := c.read()
	if r.GetType() != pb.BaseCommand_SEND_RECEIPT || r.SendReceipt.GetSequenceId() != 7 {
		t.Fatalf("got %v, want the first SEND's receipt", r)
	}
}
