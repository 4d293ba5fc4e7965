package broker_test

import (
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Hostile clients: what a producer claims in its metadata must not cost the
// broker memory out of proportion to the bytes it sent.

// heapAllocatedBy returns the bytes the Go heap handed out while f ran. Other
// tests' brokers may allocate meanwhile; the bounds below are far above that
// noise and far below what the claims would cost.
func heapAllocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// sendClaiming sends one message whose metadata says whatever md says.
func sendClaiming(c *rawClient, seq uint64, md *pb.MessageMetadata, body []byte) *pb.CommandSendReceipt {
	c.t.Helper()
	md.ProducerName = proto.String("hostile")
	md.SequenceId = proto.Uint64(seq)
	md.PublishTime = proto.Uint64(uint64(time.Now().UnixMilli()))
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(seq),
		NumMessages: md.NumMessagesInBatch})
	c.write(protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, body)))
	r := c.read()
	if r.SendReceipt == nil {
		c.t.Fatalf("send: %v", r)
	}
	return r.SendReceipt
}

// oneMessageBatch is a batch body holding a single one-byte message.
func oneMessageBatch() []byte {
	smd, _ := proto.Marshal(&pb.SingleMessageMetadata{PayloadSize: proto.Int32(1)})
	body := binary.BigEndian.AppendUint32(nil, uint32(len(smd)))
	return append(append(body, smd...), 'x')
}

func TestBatchClaimingTwoBillionMessagesCostsItsBytesOnPartialAck(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithBatchIndexAck(true)))
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("huge-batch", 1)
	// Pulsar stores and dispatches such a batch as it is (it never checks
	// the count against the payload); the consumer's client finds it corrupt.
	sendClaiming(c, 0, &pb.MessageMetadata{NumMessagesInBatch: proto.Int32(math.MaxInt32)}, oneMessageBatch())
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String("huge-batch"), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2), InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("subscribe: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1000)}))
	msg := c.read().Message
	if msg == nil {
		t.Fatal("the batch was not delivered")
	}
	// Acknowledge indexes 0 and 1 of it: one ack-set word.
	id := msg.GetMessageId()
	got := heapAllocatedBy(func() {
		c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{
			ConsumerId: proto.Uint64(1), AckType: pb.CommandAck_Individual.Enum(), RequestId: proto.Uint64(3),
			MessageId: []*pb.MessageIdData{{LedgerId: id.LedgerId, EntryId: id.EntryId, AckSet: []int64{-4}}},
		}))
		if r := c.read(); r.AckResponse == nil {
			t.Fatalf("ack: %v", r)
		}
	})
	t.Logf("a partial ack of a batch claiming %d messages: %d bytes allocated while it was handled and answered", math.MaxInt32, got)
	if got > 64<<20 {
		t.Fatalf("a partial ack of a batch claiming %d messages made the broker allocate %d bytes", math.MaxInt32, got)
	}
	s, _ := b.Subscription("huge-batch", "s")
	if idx := s.PartlyAcked[int64(id.GetEntryId())]; len(idx) != 62 {
		t.Fatalf("partly acked indexes %v, want the 62 left of the first word", idx)
	}
	// The broker still serves this client.
	sendClaiming(c, 1, &pb.MessageMetadata{}, []byte("plain"))
}

func TestCompressedEntryClaimingFourGigabytesIsReportedNotInflated(t *testing.T) {
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := dialRaw(t, b.Addr().String())
	c.connect()
	c.producer("bomb", 1)
	for i, codec := range []pb.CompressionType{pb.CompressionType_LZ4, pb.CompressionType_ZLIB,
		pb.CompressionType_ZSTD, pb.CompressionType_SNAPPY} {
		sendClaiming(c, uint64(i), &pb.MessageMetadata{Compression: codec.Enum(),
			UncompressedSize: proto.Uint32(math.MaxUint32)}, []byte("not really compressed"))
	}
	var err error
	got := heapAllocatedBy(func() { _, err = b.Messages("bomb") })
	if err == nil || !strings.Contains(err.Error(), "beyond the maximum message size") {
		t.Fatalf("Messages: %v, want an error about the uncompressed size", err)
	}
	t.Logf("inspecting 4 entries that claim 4 GiB uncompressed each allocated %d bytes", got)
	if got > 64<<20 {
		t.Fatalf("inspecting entries that claim 4 GB uncompressed allocated %d bytes", got)
	}
}

func TestBatchHoldingFewerMessagesThanItClaimsIsReportedByInspection(t *testing.T) {
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := dialRaw(t, b.Addr().String())
	c.connect()
	c.producer("short-batch", 1)
	// Stored as sent, as Pulsar stores it.
	sendClaiming(c, 0, &pb.MessageMetadata{NumMessagesInBatch: proto.Int32(5)}, oneMessageBatch())
	if _, err := b.Messages("short-batch"); err == nil || !strings.Contains(err.Error(), "batch message 1") {
		t.Fatalf("Messages: %v, want an error about the missing batch message 1", err)
	}
	if st, _ := b.Topic("short-batch"); st.Entries != 1 {
		t.Fatalf("entries %d, want the batch stored", st.Entries)
	}
}
