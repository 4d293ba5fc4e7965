package broker_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

const (
	slowMessages    = 2500
	slowPayloadSize = 4 << 10
	// slowBound is the most a connection's write buffer may hold: the high
	// mark plus the one message that crosses it.
	slowBound = broker.DefaultWriteBufferHighWaterMark + slowPayloadSize + 512
)

// dialSmallWindow connects a raw client with a small socket receive buffer,
// so that the kernel holds little of what the broker sends it.
func dialSmallWindow(t *testing.T, addr string) *rawClient {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// subscribeRaw subscribes consumer 1 from the earliest message and grants
// it a million permits.
func (c *rawClient) subscribeRaw(topic, sub string, typ pb.CommandSubscribe_SubType) {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String(sub), SubType: typ.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1), ConsumerName: proto.String("slow"),
		InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}))
	if r := c.read(); r.Success == nil {
		c.t.Fatalf("subscribe: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
		ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1_000_000),
	}))
}

// readMessages reads n MESSAGE frames and returns their payloads' first
// bytes (the message number).
func (c *rawClient) readMessages(n int) []string {
	c.t.Helper()
	var got []string
	for len(got) < n {
		r := c.readFull()
		if r.cmd.Message == nil {
			continue
		}
		p, err := protocol.ParsePayload(r.payload)
		if err != nil {
			c.t.Fatal(err)
		}
		got = append(got, string(bytes.TrimRight(p.Body[:16], " ")))
	}
	return got
}

// produceNumbered publishes n messages, each a number padded to size bytes.
func produceNumbered(t *testing.T, b *testkit.Broker, topic string, n, size int) {
	t.Helper()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for i := range n {
		wg.Add(1)
		body := fmt.Appendf(nil, "%-16d", i)
		body = append(body, bytes.Repeat([]byte{'x'}, size-len(body))...)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: body}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			wg.Done()
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// watchUnsent records the most bytes the broker ever had queued for a
// connection, checked after every delivery.
func watchUnsent(t *testing.T, b *testkit.Broker) func() int64 {
	var mu sync.Mutex
	var most int64
	cancel := b.OnEvent(func(e broker.Event) {
		if e.Kind != broker.EventDelivered {
			return
		}
		for _, c := range b.Connections() {
			mu.Lock()
			most = max(most, c.UnsentBytes)
			mu.Unlock()
		}
	})
	t.Cleanup(cancel)
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

func unwritableConns(b *testkit.Broker) int {
	n := 0
	for _, c := range b.Connections() {
		if c.Unwritable {
			n++
		}
	}
	return n
}

func numbers(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func TestSlowReaderStopsGettingMessagesPastTheHighWaterMarkAndGetsTheRestOnceItReads(t *testing.T) {
	b := testkit.Start(t)
	most := watchUnsent(t, b)
	produceNumbered(t, b, "slow-excl", slowMessages, slowPayloadSize)

	slow := dialSmallWindow(t, addrOf(b))
	slow.connect()
	slow.subscribeRaw("slow-excl", "slow-sub", pb.CommandSubscribe_Exclusive)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.WaitFor(ctx, "the slow reader's connection to become unwritable", func() bool { return unwritableConns(b) == 1 })

	// Another client on the same topic is served meanwhile.
	fast, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "slow-excl", SubscriptionName: "fast-sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	for i := range slowMessages {
		m, err := fast.Receive(ctx)
		if err != nil {
			t.Fatalf("fast consumer, message %d: %v", i, err)
		}
		fast.Ack(m)
	}
	sub, _ := b.Subscription("slow-excl", "slow-sub")
	if sub.Backlog != slowMessages || len(sub.Consumers) != 1 {
		t.Fatalf("slow subscription: %+v", sub)
	}
	if got := most(); got > slowBound {
		t.Fatalf("the broker queued up to %d bytes for a connection, want at most %d", got, slowBound)
	}
	if got := deliveredTo(b, "slow-sub", "slow"); got >= slowMessages {
		t.Fatalf("the slow reader was sent all %d messages before it read any", got)
	}

	t.Logf("the slow reader was sent %d of %d messages before it read; the broker queued at most %d bytes for a connection",
		deliveredTo(b, "slow-sub", "slow"), slowMessages, most())

	// Once it reads, it gets every message, in order.
	if got := slow.readMessages(slowMessages); !equalStrings(got, numbers(0, slowMessages)) {
		t.Fatalf("slow reader got %d messages, not 0..%d in order", len(got), slowMessages-1)
	}
	if got := most(); got > slowBound {
		t.Fatalf("the broker queued up to %d bytes for a connection, want at most %d", got, slowBound)
	}
}

func TestSharedSlowReadersMessagesGoToTheOtherConsumers(t *testing.T) {
	b := testkit.Start(t)
	most := watchUnsent(t, b)
	// The deliveries to the slow reader, counted as they happen: reading
	// the whole event history after every message the fast consumer gets
	// made the loop below quadratic (20 s under the race detector).
	var slowGiven atomic.Int64
	stop := b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventDelivered && e.Subscription == "shared" && e.Consumer == "slow" {
			slowGiven.Add(1)
		}
	})
	defer stop()
	given := func() int {
		b.DeliverEvents()
		return int(slowGiven.Load())
	}
	produceNumbered(t, b, "slow-shared", slowMessages, slowPayloadSize)

	slow := dialSmallWindow(t, addrOf(b))
	slow.connect()
	slow.subscribeRaw("slow-shared", "shared", pb.CommandSubscribe_Shared)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.WaitFor(ctx, "the slow reader's connection to become unwritable", func() bool { return unwritableConns(b) == 1 })

	// The other consumer gets every message the slow one was not given.
	fast, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "slow-shared", SubscriptionName: "shared",
		Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	received := 0
	for received+given() < slowMessages {
		m, err := fast.Receive(ctx)
		if err != nil {
			t.Fatalf("fast consumer after %d messages: %v", received, err)
		}
		received++
		seen[string(bytes.TrimRight(m.Payload()[:16], " "))]++
		fast.Ack(m)
	}
	sent := deliveredTo(b, "shared", "slow")
	if sent != given() {
		t.Fatalf("the hook counted %d deliveries to the slow reader, the history %d", given(), sent)
	}
	if sent >= slowMessages {
		t.Fatalf("the slow reader was given all %d messages", sent)
	}
	for _, n := range slow.readMessages(sent) {
		seen[n]++
	}
	for _, n := range numbers(0, slowMessages) {
		if seen[n] != 1 {
			t.Fatalf("message %s received %d times, want once", n, seen[n])
		}
	}
	if got := most(); got > slowBound {
		t.Fatalf("the broker queued up to %d bytes for a connection, want at most %d", got, slowBound)
	}
}

// deliveredTo counts the deliveries to a subscription's consumer so far.
func deliveredTo(b *testkit.Broker, sub, consumer string) int {
	n := 0
	for _, e := range b.Events() {
		if e.Kind == broker.EventDelivered && e.Subscription == sub && e.Consumer == consumer {
			n++
		}
	}
	return n
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type frame struct {
	cmd     *pb.BaseCommand
	payload []byte
}

// readFull returns the next command from the broker with its payload,
// skipping PINGs.
func (c *rawClient) readFull() frame {
	c.t.Helper()
	for {
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			c.t.Fatalf("decode: %v", err)
		}
		if f.Command.GetType() != pb.BaseCommand_PING {
			return frame{f.Command, f.Payload}
		}
	}
}
