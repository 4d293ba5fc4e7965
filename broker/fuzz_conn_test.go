package broker_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// FuzzConnection drives whole connections through the broker's real
// handlers: the input is a program whose instructions become commands
// (connect, producer, send, subscribe, flow, ack, redeliver, seek, close,
// unsubscribe, lookups, schemas, raw frames and broker-side actions such as
// terminate, delete and unload) written over up to three in-memory
// connections to a fresh broker. Whatever the program, the broker must not
// panic, must keep reading every connection (no deadlock: each write and the
// final Close are bounded in time), must send only frames that decode, must
// keep its subscriptions' invariants, and must still serve a fresh client
// at the end: publish a message and deliver it.
func FuzzConnection(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		runFuzzProgram(t, program)
	})
}

// fuzzTimeout bounds every wait of the harness; past it the broker is
// taken to be stuck.
const fuzzTimeout = 10 * time.Second

// Fuzz instructions, by opcode modulo opCount.
const (
	opConnect = iota
	opProducer
	opSend
	opSubscribe
	opFlow
	opAck
	opRedeliver
	opSeek
	opCloseProducer
	opCloseConsumer
	opUnsubscribe
	opLookup
	opPartitionedMetadata
	opLastMessageID
	opConsumerStats
	opPing
	opTopicsOfNamespace
	opSchema
	opRawFrame
	opRawCommand
	opSwitchConn
	opDropConn
	opBrokerAction
	opOther
	opCount
)

// fuzzSeeds are programs that reach the interesting states quickly: a
// produce-consume-ack round, batch-index acks of a batch claiming 2^31-1
// messages, a slow reader.
func fuzzSeeds() [][]byte {
	return [][]byte{
		{0, opConnect, 20, opProducer, 0, 0, 0, opSend, 0, 1, 3, 1, opSubscribe, 0, 0, 1, 0, 1, 0,
			opFlow, 0, 10, opAck, 0, 0, 0, 0, 0},
		{1, opConnect, 20, opProducer, 1, 1, 0, opSend, 1, 2, 2, 9, opSubscribe, 1, 1, 1, 1, 1, 0,
			opFlow, 1, 200, opAck, 1, 0, 1, 2, 0xff, 0x0f, opRedeliver, 1, 0, opSeek, 1, 0, 0},
		{2, opConnect, 20, opSubscribe, 0, 0, 3, 0, 1, 1, opSwitchConn, opConnect, 20, opProducer, 0, 0, 0,
			opSend, 0, 0, 1, 1, opSend, 0, 0, 1, 1, opFlow, 0, 255, opBrokerAction, 0, opCloseConsumer, 0},
		{3, opConnect, 20, opRawFrame, 4, 0, 0, 0, 1, opConnect, 20, opLookup, 2, opPartitionedMetadata, 3,
			opTopicsOfNamespace, 1, opSchema, 0, 1, opOther, 3},
	}
}

// fuzzReader hands out the program's bytes; past the end it gives zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) more() bool { return len(r.b) > 0 }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) bool() bool { return r.byte()&1 == 1 }

func (r *fuzzReader) bytes(n int) []byte {
	n = min(n, len(r.b))
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// count returns a small number, or now and then a huge or a boundary one.
func (r *fuzzReader) count() int64 {
	v := r.byte()
	switch v {
	case 250:
		return math.MaxInt32
	case 251:
		return -1
	case 252:
		return math.MaxInt64
	case 253:
		return 1 << 31
	case 254:
		return int64(binary.BigEndian.Uint32(append(r.bytes(4), 0, 0, 0, 0)))
	}
	return int64(v % 32)
}

var fuzzTopics = []string{
	"persistent://public/default/f0",
	"persistent://public/default/f1",
	"non-persistent://public/default/np",
	"persistent://public/default/part",
	"persistent://public/default/part-partition-1",
	"f0",
	"persistent://public/default/f0-partition-7",
	"persistent://public/nons/x",
	"bad://name",
	"persistent://public/default/",
	"",
}

func (r *fuzzReader) topic() string {
	v := r.byte()
	if int(v) < len(fuzzTopics) {
		return fuzzTopics[v]
	}
	if v > 240 {
		return string(r.bytes(int(v - 240)))
	}
	return fuzzTopics[int(v)%3]
}

func (r *fuzzReader) messageID() *pb.MessageIdData {
	id := &pb.MessageIdData{LedgerId: proto.Uint64(uint64(r.byte() % 4)), EntryId: proto.Uint64(uint64(r.count()))}
	if f := r.byte(); f&1 == 1 {
		id.BatchIndex = proto.Int32(int32(r.count()))
	}
	if f := r.byte(); f&3 == 3 {
		for range int(r.byte() % 4) {
			id.AckSet = append(id.AckSet, int64(binary.BigEndian.Uint64(append(r.bytes(8), make([]byte, 8)...))))
		}
	}
	return id
}

// fuzzConn is one client connection of the harness: the program writes to
// it, and a goroutine reads and checks what the broker sends.
type fuzzConn struct {
	nc   net.Conn
	dead bool
	done chan error // the reader's verdict
	// barrier carries the request ids of the barrier lookups answered.
	barrier chan uint64
}

// barrierIDs are the request ids of barrier lookups, beyond any the
// program uses.
const barrierIDs = 1 << 60

// pipeListener hands the broker the server ends of in-memory connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "127.0.0.1:6650" }

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new connection to the broker.
func (l *pipeListener) dial(t *testing.T) net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-time.After(fuzzTimeout):
		stuck(t, "the broker stopped accepting connections")
	}
	return client
}

// bounded runs fn, failing the test if it does not return in time.
func bounded(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(fuzzTimeout):
		stuck(t, what+" did not return")
	}
}

// stuck fails the test with every goroutine's stack.
func stuck(t *testing.T, what string) {
	t.Helper()
	pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
	t.Fatalf("%s within %v", what, fuzzTimeout)
}

// drain reads the broker's frames until the connection ends, and reports
// the first that does not decode. It passes on the answers to barrier
// lookups.
func drain(nc net.Conn, done chan<- error, barrier chan<- uint64) {
	r := bufio.NewReader(nc)
	for {
		body, err := protocol.ReadFrame(r, nil, protocol.MaxFrameSize(protocol.DefaultMaxMessageSize))
		if err != nil {
			if errors.Is(err, protocol.ErrFrameTooLarge) {
				done <- err
				return
			}
			done <- nil
			return
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil || f.UnknownType {
			done <- fmt.Errorf("the broker sent a frame that does not decode: %v", err)
			return
		}
		if l := f.Command.LookupTopicResponse; l != nil && l.GetRequestId() >= barrierIDs {
			barrier <- l.GetRequestId()
		}
		if f.Command.GetType() == pb.BaseCommand_MESSAGE {
			if _, err := protocol.ParsePayload(f.Payload); err != nil {
				// The broker sends entries as producers sent them; a
				// producer's bad metadata is not the broker's fault.
				continue
			}
		}
	}
}

type fuzzRun struct {
	t     *testing.T
	b     *broker.Broker
	ln    *pipeListener
	conns [3]*fuzzConn
	cur   int
	reqID uint64
	seq   uint64
}

func runFuzzProgram(t *testing.T, program []byte) {
	r := &fuzzReader{b: program}
	flags := r.byte()
	opts := []broker.Option{broker.WithBatchIndexAck(flags&1 == 1)}
	if flags&2 == 2 {
		// Tiny write buffers, so that the slow-reader gate opens and closes.
		opts = append(opts, broker.WithWriteBufferWaterMarks(64, 256))
	}
	if flags&4 == 4 {
		opts = append(opts, broker.WithLimits(broker.Limits{MaxProducersPerTopic: 1, MaxConsumersPerSubscription: 2,
			MaxSubscriptionsPerTopic: 2, MaxConsumersPerTopic: 3}))
	}
	b := broker.New(opts...)
	ln := newPipeListener()
	served := make(chan struct{})
	go func() { b.Serve(ln); close(served) }()
	if err := b.CreatePartitionedTopic("persistent://public/default/part", 2); err != nil {
		t.Fatal(err)
	}
	run := &fuzzRun{t: t, b: b, ln: ln}
	for steps := 0; r.more() && steps < 200; steps++ {
		run.step(r)
	}
	run.barrier()
	var broken error
	bounded(t, "the invariant check", func() { broken = checkFuzzInvariants(b) })
	if broken != nil {
		t.Fatal(broken)
	}
	run.freshClientIsServed()
	for _, c := range run.conns {
		if c != nil {
			c.nc.Close()
			if err := <-c.done; err != nil {
				t.Fatal(err)
			}
		}
	}
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(fuzzTimeout):
		stuck(t, "Close did not return")
	}
	<-served
}

// barrier waits until the broker has handled everything written so far on
// every open connection: it handles a connection's commands in order, so
// the answer to a lookup sent last comes after all of them.
func (run *fuzzRun) barrier() {
	for i, c := range run.conns {
		if c == nil || c.dead {
			continue
		}
		id := uint64(barrierIDs + i)
		run.write(c, protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{
			Topic: proto.String("persistent://public/default/barrier"), RequestId: proto.Uint64(id)})))
		if c.dead {
			continue
		}
		select {
		case <-c.barrier:
		case err := <-c.done:
			// The broker closed the connection (it was not connected).
			c.done <- err
		case <-time.After(fuzzTimeout):
			stuck(run.t, "a barrier lookup got no answer")
		}
	}
}

// conn returns the current connection, dialing (and connecting) it when it
// is not open.
func (run *fuzzRun) conn(handshake bool) *fuzzConn {
	c := run.conns[run.cur]
	if c != nil && !c.dead {
		return c
	}
	if c != nil {
		c.nc.Close()
		if err := <-c.done; err != nil {
			run.t.Fatal(err)
		}
	}
	nc := run.ln.dial(run.t)
	c = &fuzzConn{nc: nc, done: make(chan error, 1), barrier: make(chan uint64, 1)}
	go drain(nc, c.done, c.barrier)
	run.conns[run.cur] = c
	if handshake {
		run.write(c, protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
			ClientVersion: proto.String("fuzz"), ProtocolVersion: proto.Int32(20),
		})))
	}
	return c
}

// write sends bytes to the broker; a connection the broker closed is
// marked dead (the next instruction opens another).
func (run *fuzzRun) write(c *fuzzConn, b []byte) {
	c.nc.SetWriteDeadline(time.Now().Add(fuzzTimeout))
	if _, err := c.nc.Write(b); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			stuck(run.t, "the broker stopped reading a connection")
		}
		c.dead = true
	}
}

func (run *fuzzRun) send(cmd *pb.BaseCommand) {
	c := run.conn(true)
	run.write(c, protocol.AppendCommand(nil, cmd))
}

func (run *fuzzRun) req() *uint64 {
	run.reqID++
	return proto.Uint64(run.reqID)
}

func (run *fuzzRun) step(r *fuzzReader) {
	op := r.byte() % opCount
	id := func() *uint64 { return proto.Uint64(uint64(r.byte() % 4)) }
	switch op {
	case opConnect:
		c := run.conn(false)
		run.write(c, protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
			ClientVersion: proto.String("fuzz"), ProtocolVersion: proto.Int32(int32(r.byte() % 25)),
		})))
	case opProducer:
		p := &pb.CommandProducer{Topic: proto.String(r.topic()), ProducerId: id(), RequestId: run.req()}
		f := r.byte()
		if f&1 == 1 {
			p.ProducerName = proto.String(fmt.Sprint("p", f%3))
		}
		if f&2 == 2 {
			p.ProducerAccessMode = pb.ProducerAccessMode(r.byte() % 5).Enum()
		}
		if f&4 == 4 {
			p.InitialSubscriptionName = proto.String(fmt.Sprint("s", f%3))
		}
		if f&8 == 8 {
			p.TopicEpoch = proto.Uint64(uint64(r.byte()))
		}
		if f&16 == 16 {
			p.Schema = &pb.Schema{Name: proto.String("s"), Type: pb.Schema_Type(r.byte() % 24).Enum(), SchemaData: r.bytes(4)}
		}
		run.send(protocol.Base(pb.BaseCommand_PRODUCER, p))
	case opSend:
		run.sendMessage(r)
	case opSubscribe:
		run.subscribe(r)
	case opFlow:
		run.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: id(),
			MessagePermits: proto.Uint32(uint32(r.count()))}))
	case opAck:
		a := &pb.CommandAck{ConsumerId: id(), AckType: pb.CommandAck_AckType(r.byte() % 2).Enum()}
		for range 1 + int(r.byte()%3) {
			a.MessageId = append(a.MessageId, r.messageID())
		}
		if r.bool() {
			a.RequestId = run.req()
		}
		if r.bool() {
			a.ValidationError = pb.CommandAck_BatchDeSerializeError.Enum()
		}
		run.send(protocol.Base(pb.BaseCommand_ACK, a))
	case opRedeliver:
		rd := &pb.CommandRedeliverUnacknowledgedMessages{ConsumerId: id()}
		for range int(r.byte() % 3) {
			rd.MessageIds = append(rd.MessageIds, r.messageID())
		}
		if r.bool() {
			rd.ConsumerEpoch = proto.Uint64(uint64(r.byte()))
		}
		run.send(protocol.Base(pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES, rd))
	case opSeek:
		s := &pb.CommandSeek{ConsumerId: id(), RequestId: run.req()}
		if r.bool() {
			s.MessageId = r.messageID()
		} else {
			s.MessagePublishTime = proto.Uint64(uint64(r.count()))
		}
		run.send(protocol.Base(pb.BaseCommand_SEEK, s))
	case opCloseProducer:
		run.send(protocol.Base(pb.BaseCommand_CLOSE_PRODUCER, &pb.CommandCloseProducer{ProducerId: id(), RequestId: run.req()}))
	case opCloseConsumer:
		run.send(protocol.Base(pb.BaseCommand_CLOSE_CONSUMER, &pb.CommandCloseConsumer{ConsumerId: id(), RequestId: run.req()}))
	case opUnsubscribe:
		run.send(protocol.Base(pb.BaseCommand_UNSUBSCRIBE, &pb.CommandUnsubscribe{ConsumerId: id(), RequestId: run.req(),
			Force: proto.Bool(r.bool())}))
	case opLookup:
		l := &pb.CommandLookupTopic{Topic: proto.String(r.topic()), RequestId: run.req(), Authoritative: proto.Bool(r.bool())}
		if r.bool() {
			l.AdvertisedListenerName = proto.String("internal")
		}
		run.send(protocol.Base(pb.BaseCommand_LOOKUP, l))
	case opPartitionedMetadata:
		run.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
			Topic: proto.String(r.topic()), RequestId: run.req(), MetadataAutoCreationEnabled: proto.Bool(r.bool())}))
	case opLastMessageID:
		run.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{ConsumerId: id(), RequestId: run.req()}))
	case opConsumerStats:
		run.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS, &pb.CommandConsumerStats{ConsumerId: id(), RequestId: run.req()}))
	case opPing:
		if r.bool() {
			run.send(protocol.PingCommand())
		} else {
			run.send(protocol.PongCommand())
		}
	case opTopicsOfNamespace:
		ns := []string{"public/default", "public/nons", "bad", "", "a/b/c"}[r.byte()%5]
		run.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, &pb.CommandGetTopicsOfNamespace{
			RequestId: run.req(), Namespace: proto.String(ns), Mode: pb.CommandGetTopicsOfNamespace_Mode(r.byte() % 3).Enum()}))
	case opSchema:
		if r.bool() {
			run.send(protocol.Base(pb.BaseCommand_GET_SCHEMA, &pb.CommandGetSchema{RequestId: run.req(),
				Topic: proto.String(r.topic()), SchemaVersion: r.bytes(int(r.byte() % 9))}))
		} else {
			run.send(protocol.Base(pb.BaseCommand_GET_OR_CREATE_SCHEMA, &pb.CommandGetOrCreateSchema{RequestId: run.req(),
				Topic: proto.String(r.topic()), Schema: &pb.Schema{Name: proto.String("s"),
					Type: pb.Schema_Type(r.byte() % 24).Enum(), SchemaData: r.bytes(int(r.byte() % 16))}}))
		}
	case opRawFrame:
		// Arbitrary bytes after a size prefix that counts them.
		body := r.bytes(int(r.byte()))
		c := run.conn(r.bool())
		run.write(c, append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	case opRawCommand:
		// A command of any type with arbitrary bytes as its body.
		typ := cmdType(r.byte() % 70)
		sub := r.bytes(int(r.byte() % 32))
		cmd := binary.AppendUvarint([]byte{0x08}, uint64(typ))
		cmd = binary.AppendUvarint(append(cmd, fieldTag(typ)...), uint64(len(sub)))
		cmd = append(cmd, sub...)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(cmd)+4))
		frame = binary.BigEndian.AppendUint32(frame, uint32(len(cmd)))
		run.write(run.conn(true), append(frame, cmd...))
	case opSwitchConn:
		run.cur = int(r.byte()) % len(run.conns)
	case opDropConn:
		if c := run.conns[run.cur]; c != nil {
			c.dead = true
		}
	case opBrokerAction:
		bounded(run.t, "a broker action", func() { run.brokerAction(r) })
	case opOther:
		switch r.byte() % 3 {
		case 0:
			run.send(protocol.Base(pb.BaseCommand_NEW_TXN, &pb.CommandNewTxn{RequestId: run.req()}))
		case 1:
			run.send(protocol.Base(pb.BaseCommand_AUTH_RESPONSE, &pb.CommandAuthResponse{
				Response: &pb.AuthData{AuthMethodName: proto.String("token"), AuthData: r.bytes(8)}}))
		default:
			run.send(protocol.Base(pb.BaseCommand_CONNECTED, &pb.CommandConnected{ServerVersion: proto.String("x")}))
		}
	}
}

// cmdType is a BaseCommand type number.
type cmdType int

// fieldTag is the tag of BaseCommand's sub-command field for type typ,
// whose number equals the type's (a length-delimited field).
func fieldTag(typ cmdType) []byte {
	return binary.AppendUvarint(nil, uint64(typ)<<3|2)
}

func (run *fuzzRun) sendMessage(r *fuzzReader) {
	producer := uint64(r.byte() % 4)
	f := r.byte()
	md := &pb.MessageMetadata{ProducerName: proto.String("fuzz"), SequenceId: proto.Uint64(run.seq),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
	run.seq++
	var body []byte
	if f&1 == 1 {
		// A batch of k messages that claims n.
		k, n := int(r.byte()%5), r.count()
		md.NumMessagesInBatch = proto.Int32(int32(n))
		for i := range k {
			smd, _ := proto.Marshal(&pb.SingleMessageMetadata{PayloadSize: proto.Int32(1),
				PartitionKey: proto.String(fmt.Sprint("k", i%2))})
			body = binary.BigEndian.AppendUint32(body, uint32(len(smd)))
			body = append(append(body, smd...), 'x')
		}
	} else {
		body = r.bytes(int(r.byte() % 16))
	}
	if f&2 == 2 {
		md.PartitionKey = proto.String(fmt.Sprint("k", f%3))
	}
	if f&4 == 4 {
		md.DeliverAtTime = proto.Int64(time.Now().UnixMilli() + int64(r.count()))
	}
	if f&8 == 8 {
		md.Compression = pb.CompressionType(r.byte() % 5).Enum()
		md.UncompressedSize = proto.Uint32(uint32(r.count()))
	}
	payload := protocol.AppendPayload(nil, md, body)
	if f&16 == 16 {
		payload[3] ^= 0xff // a wrong checksum
	}
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(producer),
		SequenceId: md.SequenceId, NumMessages: proto.Int32(int32(r.count()))})
	c := run.conn(true)
	run.write(c, protocol.AppendPayloadCommand(nil, cmd, payload))
}

func (run *fuzzRun) subscribe(r *fuzzReader) {
	s := &pb.CommandSubscribe{
		Topic: proto.String(r.topic()), Subscription: proto.String([]string{"s0", "s1", "s2", ""}[r.byte()%4]),
		SubType: pb.CommandSubscribe_SubType(r.byte() % 4).Enum(), ConsumerId: proto.Uint64(uint64(r.byte() % 4)),
		RequestId: run.req(), ConsumerName: proto.String(fmt.Sprint("c", r.byte()%3)),
	}
	f := r.byte()
	s.Durable = proto.Bool(f&1 == 0)
	s.InitialPosition = pb.CommandSubscribe_InitialPosition((f >> 1) & 1).Enum()
	if f&4 == 4 {
		s.StartMessageId = r.messageID()
	}
	if f&8 == 8 {
		ks := &pb.KeySharedMeta{KeySharedMode: pb.KeySharedMode((f >> 4) & 1).Enum()}
		for range int(r.byte() % 3) {
			start := int32(r.byte()) << 8
			ks.HashRanges = append(ks.HashRanges, &pb.IntRange{Start: proto.Int32(start),
				End: proto.Int32(start + int32(r.byte())<<4)})
		}
		s.KeySharedMeta = ks
	}
	if f&32 == 32 {
		s.PriorityLevel = proto.Int32(int32(r.byte() % 3))
	}
	if f&64 == 64 {
		s.ReadCompacted = proto.Bool(true)
	}
	if f&128 == 128 {
		s.ConsumerEpoch = proto.Uint64(uint64(r.byte()))
	}
	s.ForceTopicCreation = proto.Bool(r.bool())
	run.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, s))
}

// brokerAction runs one of the broker's own operations, concurrently with
// whatever the connections' commands are doing.
func (run *fuzzRun) brokerAction(r *fuzzReader) {
	b := run.b
	topic := r.topic()
	switch r.byte() % 8 {
	case 0:
		b.TerminateTopic(topic)
	case 1:
		b.DeleteTopic(topic, r.bool())
	case 2:
		b.UnloadTopic(topic)
	case 3:
		b.DropConnections()
	case 4:
		b.RunExpiryCheck()
	case 5:
		sub, consumer := fmt.Sprint("s", r.byte()%3), fmt.Sprint("c", r.byte()%3)
		if r.bool() {
			b.CloseConsumer(topic, sub, consumer)
		} else {
			b.DropConsumerConnection(topic, sub, consumer)
		}
	case 6:
		b.Messages(topic)
	case 7:
		for _, name := range b.Topics() {
			for _, sub := range []string{"s0", "s1", "s2"} {
				b.Subscription(name, sub)
			}
		}
	}
}

// checkFuzzInvariants checks what must hold of every subscription whatever
// the clients did: the broker's settlement invariants (CheckSettlement) and
// the positions of every cursor. A dropped connection may still have
// commands in flight, so every check holds at any moment.
func checkFuzzInvariants(b *broker.Broker) error {
	if vs := b.CheckSettlement(); len(vs) > 0 {
		return fmt.Errorf("settlement invariant broken: %v", vs[0])
	}
	for _, name := range b.Topics() {
		topic, ok := b.Topic(name)
		if !ok {
			continue
		}
		for _, subName := range topic.Subscriptions {
			s, ok := b.Subscription(name, subName)
			if !ok {
				continue
			}
			// Entries only grow: read them after the subscription, so that
			// a SEND still being handled cannot make the check fail.
			if after, ok := b.Topic(name); ok {
				topic = after
			}
			if s.Backlog < 0 || s.Backlog > topic.Entries {
				return fmt.Errorf("%s/%s: backlog %d of %d entries", name, subName, s.Backlog, topic.Entries)
			}
			if s.MarkDelete.Entry >= topic.Entries || s.ReadPosition.Entry <= s.MarkDelete.Entry {
				return fmt.Errorf("%s/%s: mark-delete %d, read position %d, %d entries", name, subName,
					s.MarkDelete.Entry, s.ReadPosition.Entry, topic.Entries)
			}
			for _, c := range s.Consumers {
				if c.Unacked < 0 {
					return fmt.Errorf("%s/%s: consumer %s has %d unacked", name, subName, c.Name, c.Unacked)
				}
				for _, p := range c.Pending {
					if p.ID.Entry <= s.MarkDelete.Entry || p.ID.Entry >= topic.Entries {
						return fmt.Errorf("%s/%s: consumer %s holds entry %d outside (%d, %d)", name, subName, c.Name,
							p.ID.Entry, s.MarkDelete.Entry, topic.Entries)
					}
				}
			}
		}
	}
	return nil
}

// freshClientIsServed checks that a new client can still publish and
// consume a message, on a topic the program never names.
func (run *fuzzRun) freshClientIsServed() {
	t := run.t
	nc := run.ln.dial(t)
	defer nc.Close()
	c := &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
	nc.SetDeadline(time.Now().Add(fuzzTimeout))
	read := func(what string) *pb.BaseCommand {
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		for err == nil {
			f, derr := protocol.DecodeFrame(body)
			if derr != nil {
				t.Fatalf("fresh client, %s: %v", what, derr)
			}
			if f.Command.GetType() != pb.BaseCommand_PING {
				return f.Command
			}
			body, err = protocol.ReadFrame(c.r, nil, 64<<20)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			stuck(t, "a fresh client got no answer: "+what)
		}
		if errors.Is(err, io.EOF) {
			t.Fatalf("fresh client, %s: the broker closed the connection", what)
		}
		t.Fatalf("fresh client, %s: %v", what, err)
		return nil
	}
	write := func(b []byte) {
		if _, err := nc.Write(b); err != nil {
			t.Fatalf("fresh client: %v", err)
		}
	}
	write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("fresh"), ProtocolVersion: proto.Int32(20)})))
	if r := read("CONNECT"); r.Connected == nil {
		t.Fatalf("fresh client: CONNECT answered with %v", r)
	}
	const topic = "persistent://public/default/fresh"
	write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1)})))
	if r := read("PRODUCER"); r.ProducerSuccess == nil {
		t.Fatalf("fresh client: PRODUCER answered with %v", r)
	}
	write(sendFrame(1, 0, []byte("alive")))
	if r := read("SEND"); r.SendReceipt == nil {
		t.Fatalf("fresh client: SEND answered with %v", r)
	}
	write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String("fresh"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2), InitialPosition: pb.CommandSubscribe_Earliest.Enum()})))
	if r := read("SUBSCRIBE"); r.Success == nil {
		t.Fatalf("fresh client: SUBSCRIBE answered with %v", r)
	}
	write(protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
		ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(10)})))
	if r := read("FLOW"); r.Message == nil {
		t.Fatalf("fresh client: FLOW answered with %v", r)
	}
}
