package broker_test

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// What hostile clients cost the broker, measured in the process: its live
// heap and goroutines. The tests assert the outcome (bounded, closed,
// refused, still serving); the figures they log (go test -v) are the ones
// RELIABILITY.md records.

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// startRawBroker starts a broker on a free loopback port, closed at the end
// of the test.
func startRawBroker(t *testing.T, opts ...broker.Option) *broker.Broker {
	t.Helper()
	b := broker.New(opts...)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// publishNumbered publishes n messages of size bytes, each starting with
// its number, over one raw connection, and waits for every receipt.
func publishNumbered(t *testing.T, addr, topic string, n, size int) {
	t.Helper()
	p := dialRaw(t, addr)
	p.connect()
	p.producer(topic, 1)
	go func() {
		for i := range n {
			body := make([]byte, size)
			copy(body, fmt.Sprintf("%-16d", i))
			if _, err := p.nc.Write(sendFrame(1, uint64(i), body)); err != nil {
				return
			}
		}
	}()
	for i := range n {
		if r := p.read(); r.SendReceipt == nil {
			t.Fatalf("send %d: %v", i, r)
		}
	}
	p.nc.Close()
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// slowReaderCost is what one slow reader cost a broker holding a topic.
type slowReaderCost struct {
	topicHeap  uint64 // live heap with the topic stored, before the reader
	grown      int64  // live heap with the stalled reader, minus topicHeap
	mostUnsent int64  // the most bytes queued for the reader's connection
	delivered  int    // messages sent to it before it read any
}

const (
	// Payloads under 4 KiB are copied into the outbound queue (larger ones
	// are queued by reference to the stored entry): what an unbounded
	// queue costs shows with these.
	hostileMessages = 16000
	hostileSize     = 1 << 10
)

// measureSlowReader publishes hostileMessages to a topic, then subscribes a
// reader that grants a million permits and never reads, waits until the
// broker stops sending to it (its connection is unwritable, or everything
// was sent), and measures. Then the reader reads: it must get every message
// in order.
func measureSlowReader(t *testing.T, opts ...broker.Option) slowReaderCost {
	b := startRawBroker(t, opts...)
	addr := b.Addr().String()
	publishNumbered(t, addr, "stalled", hostileMessages, hostileSize)
	var cost slowReaderCost
	cost.topicHeap = liveHeap()

	slow := dialSmallWindow(t, addr)
	slow.connect()
	slow.subscribeRaw("stalled", "s", pb.CommandSubscribe_Exclusive)
	delivered := func() int {
		s, _ := b.Subscription("stalled", "s")
		if len(s.Consumers) != 1 {
			return 0
		}
		return 1_000_000 - s.Consumers[0].Permits
	}
	var mu sync.Mutex
	watch := func() bool {
		mu.Lock()
		defer mu.Unlock()
		stalled := false
		for _, c := range b.Connections() {
			cost.mostUnsent = max(cost.mostUnsent, c.UnsentBytes)
			stalled = stalled || c.Unwritable
		}
		return stalled || delivered() == hostileMessages
	}
	waitUntil(t, "the broker to stop sending to the slow reader", watch)
	// Let a dispatch in flight finish before measuring.
	time.Sleep(100 * time.Millisecond)
	watch()
	cost.delivered = delivered()
	cost.grown = int64(liveHeap()) - int64(cost.topicHeap)

	if got := slow.readMessages(hostileMessages); !equalStrings(got, numbers(0, hostileMessages)) {
		t.Fatalf("the slow reader got %d messages, not 0..%d in order", len(got), hostileMessages-1)
	}
	return cost
}

func TestSlowReaderCostsTheBrokerItsWaterMarksNotTheTopic(t *testing.T) {
	on := measureSlowReader(t)
	off := measureSlowReader(t, broker.WithWriteBufferWaterMarks(0, 0))
	topic := int64(hostileMessages * hostileSize)
	t.Logf("topic of %d messages of %d bytes (%d bytes); live heap with it stored %d bytes",
		hostileMessages, hostileSize, topic, on.topicHeap)
	t.Logf("water marks 32/64 KiB: the stalled reader was sent %d messages, at most %d bytes queued, live heap grew %d bytes",
		on.delivered, on.mostUnsent, on.grown)
	t.Logf("water marks off: the stalled reader was sent %d messages, at most %d bytes queued, live heap grew %d bytes",
		off.delivered, off.mostUnsent, off.grown)
	if on.mostUnsent > slowBound || on.grown > 1<<20 {
		t.Fatalf("with the water marks a stalled reader queued %d bytes and grew the heap by %d bytes",
			on.mostUnsent, on.grown)
	}
	// The measurement sees the queue when nothing bounds it: the kernel's
	// socket buffers take a few MiB at most, the broker the rest.
	if off.grown < topic/4 {
		t.Fatalf("with the water marks off the heap grew only %d bytes for a %d-byte topic: the measurement is blind",
			off.grown, topic)
	}
}

// idleConns dials n connections that send nothing (every third sends half
// a CONNECT frame) and keeps them open.
func idleConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	half := protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("never"), ProtocolVersion: proto.Int32(20),
	}))
	half = half[:len(half)/2]
	var out []net.Conn
	for i := range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		if i%3 == 0 {
			if _, err := nc.Write(half); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, nc)
	}
	return out
}

// settledGoroutines waits for the goroutine count to come down to at most
// want and returns it (or what it was after 30 s).
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

func TestConnectionsThatNeverHandshakeAreAllClosedAfterTheTimeout(t *testing.T) {
	const n, timeout = 300, 500 * time.Millisecond
	b := startRawBroker(t, broker.WithHandshakeTimeout(timeout))
	addr := b.Addr().String()
	base := runtime.NumGoroutine()
	start := time.Now()
	conns := idleConns(t, addr, n)
	opened := runtime.NumGoroutine()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first, last time.Duration
	closed := 0
	for _, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetReadDeadline(time.Now().Add(time.Minute))
			_, err := bufio.NewReader(nc).ReadByte()
			after := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !isTimeout(err) {
				closed++
				if first == 0 || after < first {
					first = after
				}
				last = max(last, after)
			}
		}()
	}
	wg.Wait()
	if closed != n {
		t.Fatalf("%d of %d connections without a handshake were closed by the broker", closed, n)
	}
	after := settledGoroutines(base)
	t.Logf("%d connections without a handshake (timeout %v): goroutines %d before, %d with them open, %d after; closed between %v and %v after the first dial",
		n, timeout, base, opened, after, first.Round(time.Millisecond), last.Round(time.Millisecond))
	if after > base {
		t.Fatalf("goroutines %d after the idle connections were closed, %d before", after, base)
	}
	// The broker still serves a client that does complete its handshake.
	c := dialRaw(t, addr)
	c.connect()
	c.connectPing()
}

func TestConnectionFloodPastMaxConnectionsIsRefusedAndTheBrokerKeepsServing(t *testing.T) {
	const limit, n = 20, 500
	b := startRawBroker(t, broker.WithLimits(broker.Limits{MaxConnections: limit}))
	addr := b.Addr().String()
	base := runtime.NumGoroutine()
	heap := liveHeap()
	connect := protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("flood"), ProtocolVersion: proto.Int32(20),
	}))
	var mu sync.Mutex
	var accepted []*rawClient
	refused, other := 0, 0
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				mu.Lock()
				other++
				mu.Unlock()
				return
			}
			c := &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
			nc.Write(connect)
			nc.SetReadDeadline(time.Now().Add(time.Minute))
			body, err := protocol.ReadFrame(c.r, nil, 1<<20)
			var f protocol.Frame
			if err == nil {
				f, err = protocol.DecodeFrame(body)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && f.Command.Connected != nil:
				accepted = append(accepted, c)
				return
			case err == nil && f.Command.GetError().GetError() == pb.ServerError_NotAllowedError && c.closedByBroker():
				refused++
			default:
				other++
			}
			nc.Close()
		}()
	}
	wg.Wait()
	during, heapDuring := runtime.NumGoroutine(), liveHeap()
	if len(accepted) != limit || refused != n-limit || other != 0 {
		t.Fatalf("%d connections: %d accepted, %d refused with NotAllowedError and closed, %d otherwise; want %d accepted",
			n, len(accepted), refused, other, limit)
	}
	for _, c := range accepted {
		c.connectPing()
		c.nc.Close()
	}
	// Their places free: a new client is served.
	c := dialRaw(t, addr)
	c.connect()
	c.producer("after-flood", 1)
	c.nc.Close()
	after := settledGoroutines(base)
	t.Logf("%d connections against a limit of %d: %d refused; goroutines %d before, %d with the %d accepted open, %d after; live heap %d bytes before, %d during",
		n, limit, refused, base, during, limit, after, heap, heapDuring)
	if after > base {
		t.Fatalf("goroutines %d after the flood, %d before", after, base)
	}
}

// openProducers asks for n producers on one topic over one connection and
// counts the successes and the ProducerBusy refusals.
func openProducers(t *testing.T, c *rawClient, topic string, n int) (ok, busy int) {
	t.Helper()
	go func() {
		for i := range n {
			c.nc.Write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
				Topic: proto.String(topic), ProducerId: proto.Uint64(uint64(i)), RequestId: proto.Uint64(uint64(i)),
			})))
		}
	}()
	for range n {
		switch r := c.read(); {
		case r.ProducerSuccess != nil:
			ok++
		case r.GetError().GetError() == pb.ServerError_ProducerBusy:
			busy++
		default:
			t.Fatalf("producer: %v", r)
		}
	}
	return ok, busy
}

func TestProducerFloodPastMaxProducersPerTopicIsRefusedAndCostsOnlyTheRefusals(t *testing.T) {
	const limit, n = 10, 2000
	capped := startRawBroker(t, broker.WithLimits(broker.Limits{MaxProducersPerTopic: limit}))
	open := startRawBroker(t)
	base := liveHeap()
	cc := dialRaw(t, capped.Addr().String())
	cc.connect()
	ok, busy := openProducers(t, cc, "flood", n)
	cappedHeap := int64(liveHeap()) - int64(base)
	if ok != limit || busy != n-limit {
		t.Fatalf("%d producers against a limit of %d: %d opened, %d ProducerBusy", n, limit, ok, busy)
	}
	if st, _ := capped.Topic("flood"); len(st.Producers) != limit {
		t.Fatalf("the topic has %d producers, want %d", len(st.Producers), limit)
	}
	cc.connectPing()

	base = liveHeap()
	oc := dialRaw(t, open.Addr().String())
	oc.connect()
	okOpen, busyOpen := openProducers(t, oc, "flood", n)
	openHeap := int64(liveHeap()) - int64(base)
	if okOpen != n || busyOpen != 0 {
		t.Fatalf("%d producers without a limit: %d opened, %d ProducerBusy", n, okOpen, busyOpen)
	}
	t.Logf("%d producers on one topic: with a limit of %d, %d refused and the live heap grew %d bytes; without a limit (the default) all opened and it grew %d bytes, %d per producer",
		n, limit, busy, cappedHeap, openHeap, openHeap/n)
	if cappedHeap >= openHeap {
		t.Fatalf("refusing %d producers cost %d bytes, opening them %d", n-limit, cappedHeap, openHeap)
	}
}

func TestClientThatNeverReadsItsAnswersIsServedOnceItReads(t *testing.T) {
	// Replies are queued whatever the connection's state, as in Pulsar
	// (only message dispatch waits for a slow reader): this measures what
	// that costs, and checks that nothing is lost and others are served.
	const n = 100_000
	b := startRawBroker(t)
	addr := b.Addr().String()
	c := dialSmallWindow(t, addr)
	c.connect()
	var most int64
	watch := func() {
		for _, cs := range b.Connections() {
			most = max(most, cs.UnsentBytes)
		}
	}
	lookup := func(i int) []byte {
		return protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{
			Topic: proto.String("persistent://public/default/never-read"), RequestId: proto.Uint64(uint64(i))}))
	}
	sent := 0
	for sent < n {
		var burst []byte
		for ; sent < n && len(burst) < 64<<10; sent++ {
			burst = append(burst, lookup(sent)...)
		}
		c.write(burst)
		watch()
	}
	// Another client is served meanwhile.
	other := dialRaw(t, addr)
	other.connect()
	other.connectPing()
	watch()
	for i := range n {
		r := c.read()
		if r.LookupTopicResponse == nil || r.LookupTopicResponse.GetRequestId() != uint64(i) {
			t.Fatalf("answer %d: %v", i, r)
		}
		if i%1000 == 0 {
			watch()
		}
	}
	t.Logf("%d LOOKUPs sent without reading the answers (socket receive buffer 4 KiB): the most seen queued in the broker (sampled between bursts) was %d bytes of answers; all %d answered in order once read",
		n, most, n)
}
