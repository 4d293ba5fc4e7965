package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// maxProtocolVersion is the newest protocol version this broker speaks, as
// Pulsar 4.0 does.
const maxProtocolVersion = 21

// conn is one client connection. Its reader goroutine handles commands in
// order; its writer goroutine drains an outbound buffer so that no topic lock
// is ever held while writing to the socket.
type conn struct {
	b  *Broker
	nc net.Conn
	// replayTwice is set by a Duplicate fault for the REDELIVER command
	// about to run (handling goroutine only).
	replayTwice bool
	ip          string // the client's IP address, for the same-address limits
	// remote is the client's address, "host:port", for events.
	remote string
	log    *slog.Logger

	// handshake closes the connection if its handshake is not done in
	// time. Under wmu.
	handshake *time.Timer

	// Outbound frames, appended under wmu and flushed by writeLoop.
	wmu    sync.Mutex
	wq     outbound
	wake   chan struct{}
	done   chan struct{}
	closed bool
	// unsent counts the bytes queued and not yet written to the socket;
	// unwritable is set past the high-water mark (writebuf.go). Changed
	// under wmu, read without it.
	unsent     atomic.Int64
	unwritable atomic.Bool
	// entryMetadata says the client receives broker entry metadata
	// (entrymetadata.go), set at CONNECT.
	entryMetadata atomic.Bool

	received atomic.Bool // any frame since the last keep-alive tick
	// reads pauses the reader while a publish rate limit throttles the
	// connection (publishrate.go).
	reads readGate
	// unwoken is set while replies queued by deferWake wait for the writer.
	unwoken atomic.Bool

	// hmu is the handling lock: every command of the connection runs under
	// it, read by the reader or released from a hold (hold.go).
	hmu sync.Mutex
	// keptFrame is set by a handler that kept the bytes of the frame being
	// handled (a stored SEND), so the reader does not reuse its buffer.
	// Under hmu.
	keptFrame bool
	// dec decodes the connection's frames, reusing the memory of the last
	// SEND and its metadata: its DecodeFrame is the reader's, its
	// ParsePayload runs under hmu (handleSend). Held commands are copies.
	dec protocol.Decoder

	// Commands set aside by a hold, and those released to run, in order;
	// under holdMu. anyReleased says released is not empty.
	holdMu      sync.Mutex
	held        map[*HeldCommand]struct{}
	released    []*HeldCommand
	anyReleased atomic.Bool

	// Owned by the reader goroutine, but also read by broker-side actions.
	mu        sync.Mutex
	connected bool
	version   int32
	client    string
	producers map[uint64]*Producer
	consumers map[uint64]*Consumer
	auth      connectionAuth
	// closedProducers holds the ids of the producers the broker closed,
	// with when, so that SENDs the client had in flight are ignored
	// (closedproducer.go).
	closedProducers map[uint64]time.Time
}

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{
		b:         b,
		nc:        nc,
		ip:        clientIP(nc),
		remote:    nc.RemoteAddr().String(),
		log:       b.cfg.logger.With("remote", nc.RemoteAddr().String()),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		producers: map[uint64]*Producer{},
		consumers: map[uint64]*Consumer{},
	}
}

// send queues cmd for writing. It never blocks on the socket.
func (c *conn) send(cmd *pb.BaseCommand) { c.sendPayload(cmd, nil) }

// sendPayload queues cmd followed by payload (a MESSAGE and its entry).
func (c *conn) sendPayload(cmd *pb.BaseCommand, payload []byte) {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return
	}
	n := len(c.wq.buf)
	c.wq.buf = protocol.AppendPayloadCommand(c.wq.buf, cmd, payload)
	c.queuedLocked(len(c.wq.buf) - n)
	c.wmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendMessage queues a MESSAGE frame with an entry's bytes.
func (c *conn) sendMessage(m *protocol.Message, entry []byte) {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return
	}
	start := len(c.wq.buf)
	c.wq.buf = protocol.AppendMessage(c.wq.buf, m, len(entry))
	c.queuedLocked(c.wq.appendPayload(start, entry))
	c.wmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendFrame queues the frame that appendFrame appends to the outbound buffer
// (for the hand-encoded frames of the hot paths).
func (c *conn) sendFrame(appendFrame func(dst []byte) []byte) {
	if c.queueFrame(appendFrame) {
		c.wakeWriter()
	}
}

// queueFrame appends a frame to the outbound buffer without waking the
// writer. It reports false when the connection is closed.
func (c *conn) queueFrame(appendFrame func(dst []byte) []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return false
	}
	n := len(c.wq.buf)
	c.wq.buf = appendFrame(c.wq.buf)
	c.queuedLocked(len(c.wq.buf) - n)
	return true
}

// wakeWriter wakes the writer goroutine, which writes out everything
// queued so far, the frames queued by deferWake included.
func (c *conn) wakeWriter() {
	c.unwoken.Store(false)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// deferWake queues a reply of the reader's without waking the writer: the
// reader wakes it before it can wait for anything (wakeDeferred), so that
// the replies to a run of frames that arrived together go out in one write
// and one wake-up of the writer, as the client's frames came in. Only
// replies to SEND are deferred, and only while no event hook is registered:
// a hook runs on the goroutine that handles the command and might wait.
func (c *conn) deferWake(appendFrame func(dst []byte) []byte) {
	if c.queueFrame(appendFrame) {
		c.unwoken.Store(true)
	}
}

// wakeDeferred wakes the writer if a reply is waiting for it.
func (c *conn) wakeDeferred() {
	if c.unwoken.Load() {
		c.wakeWriter()
	}
}

// frameBuffered reports whether r holds the whole of the next frame, so
// that reading it cannot wait for the client.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < 4 {
		return false
	}
	head, _ := r.Peek(4)
	return uint64(n)-4 >= uint64(binary.BigEndian.Uint32(head))
}

func (c *conn) writeLoop() {
	defer c.b.wg.Done()
	var spare outbound
	var pieces net.Buffers
	ka := time.NewTicker(c.b.cfg.keepAlive)
	defer ka.Stop()
	awaitingPong := false
	for {
		select {
		case <-c.done:
			return
		case <-ka.C:
			c.mu.Lock()
			connected := c.connected
			c.mu.Unlock()
			got := c.received.Swap(false)
			switch {
			case !connected:
				continue // the handshake timer is in charge
			case awaitingPong && !got:
				c.log.Info("closing connection: no answer to keep-alive ping")
				c.close()
				return
			}
			awaitingPong = true
			c.send(protocol.PingCommand())
			continue
		case <-c.wake:
		}
		c.wmu.Lock()
		out := c.wq
		c.wq = spare
		c.wmu.Unlock()
		n := out.size()
		if n > 0 {
			if err := out.writeTo(c.nc, &pieces); err != nil {
				c.close()
				return
			}
		}
		c.written(n)
		out.reset()
		spare = out
	}
}

// close shuts the connection down once. The reader goroutine notices and
// releases the connection's producers and consumers.
func (c *conn) close() {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return
	}
	c.closed = true
	c.wq = outbound{}
	close(c.done)
	if c.handshake != nil {
		c.handshake.Stop()
	}
	c.wmu.Unlock()
	c.nc.Close()
}

func (c *conn) readLoop() {
	defer c.b.wg.Done()
	defer c.release()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	maxFrame := protocol.MaxFrameSize(c.b.cfg.maxMessageSize)
	var buf []byte
	for {
		c.waitReads()
		if !frameBuffered(r) {
			c.wakeDeferred() // the next read may wait for the client
		}
		body, err := protocol.ReadFrame(r, buf, maxFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.log.Info("closing connection", "reason", err)
			}
			return
		}
		buf = body
		c.received.Store(true)
		f, err := c.dec.DecodeFrame(body)
		if err != nil {
			c.log.Info("closing connection", "reason", err)
			return
		}
		if f.UnknownType {
			continue
		}
		c.hmu.Lock()
		keep, kept := c.handle(f), c.keptFrame
		c.keptFrame = false
		c.hmu.Unlock()
		// Commands released while this one ran go next.
		c.runReleased()
		if !keep {
			return
		}
		if kept {
			buf = nil // a stored entry now owns the frame's bytes
		}
		if cap(buf) > 1<<20 {
			buf = nil // a large frame's buffer is not kept for the small ones
		}
	}
}

// release closes the connection, drops its held commands and detaches its
// producers and consumers.
func (c *conn) release() {
	c.close()
	c.dropHeld()
	c.mu.Lock()
	prods := c.producers
	cons := c.consumers
	c.producers = map[uint64]*Producer{}
	c.consumers = map[uint64]*Consumer{}
	c.mu.Unlock()
	for _, p := range prods {
		p.topic.removeProducer(p)
	}
	for _, cs := range cons {
		cs.detach(false)
	}
	c.b.removeConn(c)
}

// handle handles one command read from the connection: the handshake, the
// checks every command passes, the faults in force, then the command
// itself. It returns false when the connection must close, as Pulsar closes
// it for a protocol violation. The caller holds the handling lock.
func (c *conn) handle(f protocol.Frame) bool {
	cmd := f.Command
	t := cmd.GetType()
	c.mu.Lock()
	connected := c.connected
	c.mu.Unlock()
	if !connected {
		if t != pb.BaseCommand_CONNECT || cmd.Connect == nil {
			c.log.Info("closing connection: command before CONNECT", "type", t.String())
			return false
		}
		return c.handleConnect(cmd.Connect)
	}
	if t != pb.BaseCommand_SEND {
		c.wakeDeferred() // only SENDs run with replies deferred
	}
	if !hasSubCommand(cmd) {
		c.log.Info("closing connection: command without its body", "type", t.String())
		return false
	}
	if handled, keep := c.applyFaults(f); handled {
		return keep
	}
	return c.run(f)
}

// run runs a command of a connection that completed its handshake. It
// returns false when the connection must close.
func (c *conn) run(f protocol.Frame) bool {
	cmd := f.Command
	t := cmd.GetType()
	switch t {
	case pb.BaseCommand_CONNECT:
		c.log.Info("closing connection: second CONNECT")
		return false
	case pb.BaseCommand_PING:
		c.send(protocol.PongCommand())
	case pb.BaseCommand_PONG:
	case pb.BaseCommand_LOOKUP:
		c.handleLookup(cmd.LookupTopic)
	case pb.BaseCommand_PARTITIONED_METADATA:
		c.handlePartitionedMetadata(cmd.PartitionMetadata)
	case pb.BaseCommand_PRODUCER:
		if !knownSchemaType(cmd.Producer.Schema) {
			return c.closeForSchema()
		}
		c.handleProducer(cmd.Producer)
	case pb.BaseCommand_SEND:
		if c.replayTwice {
			return c.handleSendTwice(cmd.Send, f.Payload)
		}
		return c.handleSend(cmd.Send, f.Payload)
	case pb.BaseCommand_CLOSE_PRODUCER:
		c.handleCloseProducer(cmd.CloseProducer)
	case pb.BaseCommand_SUBSCRIBE:
		if !knownSchemaType(cmd.Subscribe.Schema) {
			return c.closeForSchema()
		}
		c.handleSubscribe(cmd.Subscribe)
	case pb.BaseCommand_FLOW:
		return c.handleFlow(cmd.Flow)
	case pb.BaseCommand_ACK:
		c.handleAck(cmd.Ack)
	case pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		c.handleRedeliver(cmd.RedeliverUnacknowledgedMessages)
	case pb.BaseCommand_CLOSE_CONSUMER:
		c.handleCloseConsumer(cmd.CloseConsumer)
	case pb.BaseCommand_UNSUBSCRIBE:
		c.handleUnsubscribe(cmd.Unsubscribe)
	case pb.BaseCommand_SEEK:
		c.handleSeek(cmd.Seek)
	case pb.BaseCommand_GET_LAST_MESSAGE_ID:
		c.handleGetLastMessageID(cmd.GetLastMessageId)
	case pb.BaseCommand_CONSUMER_STATS:
		return c.handleConsumerStats(cmd.ConsumerStats)
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		return c.handleGetTopicsOfNamespace(cmd.GetTopicsOfNamespace)
	case pb.BaseCommand_GET_SCHEMA:
		c.handleGetSchema(cmd.GetSchema)
	case pb.BaseCommand_GET_OR_CREATE_SCHEMA:
		if !knownSchemaType(cmd.GetOrCreateSchema.Schema) {
			return c.closeForSchema()
		}
		c.handleGetOrCreateSchema(cmd.GetOrCreateSchema)
	case pb.BaseCommand_AUTH_RESPONSE:
		return c.handleAuthResponse(cmd.AuthResponse)
	case pb.BaseCommand_NEW_TXN, pb.BaseCommand_ADD_PARTITION_TO_TXN, pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN,
		pb.BaseCommand_END_TXN, pb.BaseCommand_END_TXN_ON_PARTITION, pb.BaseCommand_END_TXN_ON_SUBSCRIPTION,
		pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST:
		return c.runTxnCommand(cmd)
	case pb.BaseCommand_CONNECTED, pb.BaseCommand_SEND_RECEIPT, pb.BaseCommand_SEND_ERROR, pb.BaseCommand_MESSAGE,
		pb.BaseCommand_SUCCESS, pb.BaseCommand_ERROR, pb.BaseCommand_PRODUCER_SUCCESS,
		pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, pb.BaseCommand_LOOKUP_RESPONSE,
		pb.BaseCommand_CONSUMER_STATS_RESPONSE, pb.BaseCommand_REACHED_END_OF_TOPIC,
		pb.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE, pb.BaseCommand_ACTIVE_CONSUMER_CHANGE,
		pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE, pb.BaseCommand_GET_SCHEMA_RESPONSE,
		pb.BaseCommand_ACK_RESPONSE, pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, pb.BaseCommand_AUTH_CHALLENGE,
		pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE, pb.BaseCommand_NEW_TXN_RESPONSE,
		pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE, pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE,
		pb.BaseCommand_END_TXN_RESPONSE, pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE,
		pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE:
		// Commands only a broker sends: Pulsar treats them as a protocol violation.
		c.log.Info("closing connection: unexpected command from a client", "type", t.String())
		return false
	default:
		// Known to the protocol, not served by this broker: ignored, as Pulsar's
		// decoder ignores types outside its switch.
	}
	return true
}

// hasSubCommand reports whether the sub-command matching the type is present
// (Pulsar's decoder requires it, even for PING).
func hasSubCommand(cmd *pb.BaseCommand) bool {
	m := cmd.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(protocol.SubCommandField(cmd.GetType()))
	return fd == nil || m.Has(fd)
}

func (c *conn) handleConnect(cc *pb.CommandConnect) bool {
	if !c.authenticate(cc) {
		return false
	}
	v := cc.GetProtocolVersion()
	if v > maxProtocolVersion {
		v = maxProtocolVersion
	}
	c.mu.Lock()
	c.connected = true
	c.version = v
	c.client = cc.GetClientVersion()
	c.mu.Unlock()
	c.takeEntryMetadata(v, cc.GetFeatureFlags().GetSupportsBrokerEntryMetadata())
	c.stopHandshakeTimer()
	c.log.Debug("client connected", "client", cc.GetClientVersion(), "protocol", cc.GetProtocolVersion())
	c.send(protocol.Base(pb.BaseCommand_CONNECTED, &pb.CommandConnected{
		ServerVersion:   proto.String(c.b.cfg.serverVersion),
		ProtocolVersion: proto.Int32(v),
		MaxMessageSize:  proto.Int32(int32(c.b.cfg.maxMessageSize)),
		FeatureFlags: &pb.FeatureFlags{
			SupportsTopicWatchers:                             proto.Bool(false),
			SupportsGetPartitionedMetadataWithoutAutoCreation: proto.Bool(true),
		},
	}))
	return true
}
