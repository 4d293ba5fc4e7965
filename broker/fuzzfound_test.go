package broker_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Regressions found by FuzzConnection.

func TestReaderStartingBeyondTheLastEntryStartsAtItsInitialPosition(t *testing.T) {
	// A reader whose start id lay past the end of the topic got a cursor
	// past the end (its backlog negative), and the broker then withheld the
	// entries published up to that id. Pulsar's non-durable cursor starts
	// such a reader at its initial position instead (Latest here).
	// pulsar-client-go's reader drops messages before its start id itself,
	// so this client speaks the protocol.
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("beyond", 1)
	c.write(sendFrame(1, 0, []byte("before")))
	receipt := c.read().SendReceipt
	if receipt == nil {
		t.Fatal("no receipt")
	}
	ledger := receipt.GetMessageId().GetLedgerId()
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String("beyond"), Subscription: proto.String("reader"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2), Durable: proto.Bool(false),
		StartMessageId: &pb.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(6)},
	}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("subscribe: %v", r)
	}
	if s, _ := b.Subscription("beyond", "reader"); s.MarkDelete.Entry != 0 || s.Backlog != 0 {
		t.Fatalf("reader positioned at mark-delete %d with backlog %d, want 0 and 0 (Latest)", s.MarkDelete.Entry, s.Backlog)
	}
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(10)}))
	for seq := uint64(1); seq <= 3; seq++ {
		c.write(sendFrame(1, seq, []byte("after")))
	}
	var got []uint64
	for len(got) < 3 {
		r := c.read()
		if r.Message != nil {
			got = append(got, r.Message.GetMessageId().GetEntryId())
		}
	}
	if got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("reader got entries %v, want 1, 2, 3", got)
	}
}
