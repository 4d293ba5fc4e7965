package broker_test

import (
	"context"
	"encoding/binary"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func addrOf(b *testkit.Broker) string { return strings.TrimPrefix(b.URL(), "pulsar://") }

func TestWrongChecksumGetsSendErrorAndConnectionKeepsWorking(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("checksum", 1)

	bad := sendFrame(1, 0, []byte("hello"))
	bad[len(bad)-1] ^= 0xff // corrupt the payload, not the checksum
	c.write(bad)
	resp := c.read()
	if resp.SendError == nil || resp.SendError.GetError() != pb.ServerError_ChecksumError {
		t.Fatalf("got %v %v, want SEND_ERROR ChecksumError", resp.GetType(), resp.GetSendError())
	}
	if resp.SendError.GetSequenceId() != 0 || resp.SendError.GetProducerId() != 1 {
		t.Fatalf("send error for %d/%d", resp.SendError.GetProducerId(), resp.SendError.GetSequenceId())
	}

	c.write(sendFrame(1, 1, []byte("hello")))
	resp = c.read()
	if resp.SendReceipt == nil || resp.SendReceipt.GetSequenceId() != 1 {
		t.Fatalf("after the bad frame: got %v, want SEND_RECEIPT for sequence 1", resp.GetType())
	}
	if id := resp.SendReceipt.GetMessageId(); id.GetEntryId() != 0 {
		t.Fatalf("first stored entry got id %d:%d, want entry 0", id.GetLedgerId(), id.GetEntryId())
	}
	if ms := b.Messages("checksum"); len(ms) != 1 || string(ms[0].Payload) != "hello" {
		t.Fatalf("stored %v, want only the good message", ms)
	}
}

// keepProducing runs a real client producing on its own topic until stop is
// closed, and reports how many sends failed and succeeded.
func keepProducing(t *testing.T, b *testkit.Broker, stop <-chan struct{}) (failed, ok *atomic.Int64, wait func()) {
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "bystander", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	failed, ok = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("still here")}); err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		}
	}()
	return failed, ok, wg.Wait
}

func TestBadFramesCloseOnlyTheirOwnConnection(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithMaxMessageSize(64<<10)))
	stop := make(chan struct{})
	failed, ok, wait := keepProducing(t, b, stop)

	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 256)
	rng.Read(garbage)
	binary.BigEndian.PutUint32(garbage, 200) // a plausible size, garbage inside

	connectFrame := protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{}))
	cases := []struct {
		name    string
		connect bool
		frame   []byte
	}{
		{"random bytes", false, garbage},
		{"random bytes after handshake", true, garbage},
		{"truncated frame", true, sendFrame(1, 0, []byte("cut short"))[:20]},
		{"oversize frame", true, binary.BigEndian.AppendUint32(nil, 80<<10)},
		{"command before CONNECT", false, protocol.AppendCommand(nil, protocol.PingCommand())},
		{"CONNECT without client version", false, connectFrame},
		{"FLOW with zero permits", true, protocol.AppendCommand(nil, protocol.Base(pb.BaseCommand_FLOW,
			&pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(0))}))},
		{"SEND for an unknown producer", true, sendFrame(9, 0, []byte("who?"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addrOf(b))
			if tc.connect {
				c.connect()
			}
			c.write(tc.frame)
			if tc.name == "truncated frame" {
				c.nc.(interface{ CloseWrite() error }).CloseWrite()
			}
			if !c.closedByBroker() {
				t.Fatal("the broker kept the connection open")
			}
		})
	}
	before := ok.Load()
	// The bystander keeps producing after all of that.
	for ok.Load() < before+10 {
		if failed.Load() > 0 {
			break
		}
	}
	close(stop)
	wait()
	if failed.Load() != 0 {
		t.Fatalf("the bystander producer saw %d failed sends", failed.Load())
	}
	if got := len(b.Messages("bystander")); int64(got) != ok.Load() {
		t.Fatalf("bystander: %d stored, %d acknowledged", got, ok.Load())
	}
}

func TestUnknownCommandTypeIsIgnored(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	// A BaseCommand with type 99, a number no Pulsar version uses.
	raw := []byte{0x08, 99}
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(raw)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(raw)))
	c.write(append(frame, raw...))
	c.send(protocol.PingCommand())
	if resp := c.read(); resp.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("after an unknown command: got %v, want PONG", resp.GetType())
	}
}

func TestTransactionCommandsGetNotAllowed(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.send(protocol.Base(pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, &pb.CommandTcClientConnectRequest{RequestId: ptr(uint64(7)), TcId: ptr(uint64(0))}))
	resp := c.read()
	if resp.Error == nil || resp.Error.GetError() != pb.ServerError_NotAllowedError || resp.Error.GetRequestId() != 7 {
		t.Fatalf("got %v %v, want ERROR NotAllowedError for request 7", resp.GetType(), resp.GetError())
	}
}

func TestGetSchemaOnSchemalessTopicAnswersInsideTheResponse(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("no-schema", 1)
	c.send(protocol.Base(pb.BaseCommand_GET_SCHEMA, &pb.CommandGetSchema{
		RequestId: ptr(uint64(5)), Topic: ptr("persistent://public/default/no-schema"),
	}))
	resp := c.read()
	if resp.GetSchemaResponse == nil || resp.GetSchemaResponse.GetErrorCode() != pb.ServerError_TopicNotFound {
		t.Fatalf("got %v, want GET_SCHEMA_RESPONSE with TopicNotFound", resp)
	}
}

func TestHandshakeAdvertisesProtocolAndMaxMessageSize(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithMaxMessageSize(1<<20)))
	c := dialRaw(t, addrOf(b))
	got := c.connect()
	if got.GetProtocolVersion() != 20 || got.GetMaxMessageSize() != 1<<20 || got.GetServerVersion() == "" {
		t.Fatalf("CONNECTED %v", got)
	}
	c2 := dialRaw(t, addrOf(b))
	c2.send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: ptr("future"), ProtocolVersion: ptr(int32(40)),
	}))
	if v := c2.read().GetConnected().GetProtocolVersion(); v != 21 {
		t.Fatalf("protocol version for a newer client: %d, want 21", v)
	}
}

func TestLookupAnswersConnectWithOwnURL(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: ptr("t"), RequestId: ptr(uint64(1))}))
	l := c.read().GetLookupTopicResponse()
	if l.GetResponse() != pb.CommandLookupTopicResponse_Connect || !l.GetAuthoritative() || l.GetBrokerServiceUrl() != b.URL() {
		t.Fatalf("lookup: %v", l)
	}
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: ptr("a/b/c/d/e"), RequestId: ptr(uint64(2))}))
	l = c.read().GetLookupTopicResponse()
	if l.GetResponse() != pb.CommandLookupTopicResponse_Failed || l.GetError() != pb.ServerError_InvalidTopicName {
		t.Fatalf("lookup of an invalid name: %v", l)
	}
}

func TestPartitionedMetadata(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithAutoTopicCreation(false)))
	c := dialRaw(t, addrOf(b))
	c.connect()
	ask := func(topic string) *pb.CommandPartitionedTopicMetadataResponse {
		c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
			Topic: ptr(topic), RequestId: ptr(uint64(1)),
		}))
		return c.read().GetPartitionMetadataResponse()
	}
	if r := ask("persistent://public/default/absent"); r.GetError() != pb.ServerError_TopicNotFound {
		t.Fatalf("missing topic with auto-creation off: %v", r)
	}
	b.CreatePartitionedTopic("persistent://public/default/parts", 3)
	if r := ask("persistent://public/default/parts"); r.GetPartitions() != 3 || r.GetResponse() != pb.CommandPartitionedTopicMetadataResponse_Success {
		t.Fatalf("partitioned topic: %v", r)
	}
	if r := ask("persistent://public/default/parts-partition-1"); r.GetPartitions() != 0 || r.Error != nil {
		t.Fatalf("a partition: %v", r)
	}
	if r := ask("bad://x"); r.GetError() != pb.ServerError_InvalidTopicName {
		t.Fatalf("invalid name: %v", r)
	}
}

func ptr[T any](v T) *T { return &v }
