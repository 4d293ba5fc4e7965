package broker_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// rawClient speaks the wire protocol by hand, for the tests that must send
// what no real client sends: bad checksums, garbage, oversize frames.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) send(cmd *pb.BaseCommand) { c.write(protocol.AppendCommand(nil, cmd)) }

// read returns the next command from the broker, skipping PINGs.
func (c *rawClient) read() *pb.BaseCommand {
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
			return f.Command
		}
	}
}

// closedByBroker reports whether the broker closed the connection: a read
// ends with an error before any frame other than PING arrives.
func (c *rawClient) closedByBroker() bool {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return false
			}
			return true
		}
		if f, err := protocol.DecodeFrame(body); err == nil && f.Command.GetType() == pb.BaseCommand_PING {
			continue
		}
		return false
	}
}

func (c *rawClient) connect() *pb.CommandConnected {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
	}))
	resp := c.read()
	if resp.Connected == nil {
		c.t.Fatalf("handshake: got %v", resp.GetType())
	}
	return resp.Connected
}

// producer opens a producer with the given id on topic.
func (c *rawClient) producer(topic string, id uint64) *pb.CommandProducerSuccess {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(100 + id),
	}))
	resp := c.read()
	if resp.ProducerSuccess == nil {
		c.t.Fatalf("producer: got %v %v", resp.GetType(), resp.GetError())
	}
	return resp.ProducerSuccess
}

// sendFrame builds a SEND frame with one plain message.
func sendFrame(producerID, seq uint64, payload []byte) []byte {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("raw"), SequenceId: proto.Uint64(seq),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli())),
	}
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{
		ProducerId: proto.Uint64(producerID), SequenceId: proto.Uint64(seq), NumMessages: proto.Int32(1),
	})
	return protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, payload))
}

// closedByBrokerWithin is closedByBroker with a shorter wait for the
// broker's silence.
func (c *rawClient) closedByBrokerWithin(d time.Duration) bool {
	c.nc.SetReadDeadline(time.Now().Add(d))
	for {
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return false
			}
			return true
		}
		if f, err := protocol.DecodeFrame(body); err == nil && f.Command.GetType() == pb.BaseCommand_PING {
			continue
		}
		return false
	}
}

// connectPing sends a PING and expects its PONG: the connection still works.
func (c *rawClient) connectPing() {
	c.t.Helper()
	c.send(protocol.PingCommand())
	for {
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if err != nil {
			c.t.Fatalf("no PONG: %v", err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			c.t.Fatal(err)
		}
		if f.Command.GetType() == pb.BaseCommand_PONG {
			return
		}
		if f.Command.GetType() != pb.BaseCommand_PING {
			c.t.Fatalf("got %v waiting for PONG", f.Command.GetType())
		}
	}
}
