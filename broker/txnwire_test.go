package broker_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The answers these tests expect are those Pulsar 4.0.8 sent to the same
// commands (recorded with a raw client against a standalone with
// transactionCoordinatorEnabled=true).

var reqID uint64 = 1000

func nextReq() *uint64 { reqID++; return proto.Uint64(reqID) }

func (c *rawClient) tcConnect(tc uint64) *pb.BaseCommand {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_TC_CLIENT_CONNECT_REQUEST, &pb.CommandTcClientConnectRequest{
		RequestId: nextReq(), TcId: proto.Uint64(tc)}))
	return c.read()
}

func (c *rawClient) newTxn(tc, timeoutMs uint64) *pb.CommandNewTxnResponse {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_NEW_TXN, &pb.CommandNewTxn{RequestId: nextReq(), TcId: proto.Uint64(tc),
		TxnTtlSeconds: proto.Uint64(timeoutMs)}))
	r := c.read()
	if r.NewTxnResponse == nil {
		c.t.Fatalf("NEW_TXN: got %v", r)
	}
	return r.NewTxnResponse
}

func (c *rawClient) endTxn(least uint64, action *pb.TxnAction) {
	c.send(protocol.Base(pb.BaseCommand_END_TXN, &pb.CommandEndTxn{RequestId: nextReq(),
		TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least), TxnAction: action}))
}

func (c *rawClient) addPartition(least uint64, topic string) *pb.CommandAddPartitionToTxnResponse {
	c.t.Helper()
	c.send(protocol.Base(pb.BaseCommand_ADD_PARTITION_TO_TXN, &pb.CommandAddPartitionToTxn{RequestId: nextReq(),
		TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least), Partitions: []string{topic}}))
	return c.read().AddPartitionToTxnResponse
}

func TestCoordinatorAnswersAsPulsarDoes(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	c := dialRaw(t, addrOf(b))
	c.connect()
	r := c.newTxn(0, 60_000)
	if r.GetError() != pb.ServerError_TransactionCoordinatorNotFound || r.GetMessage() != "Transaction coordinator with id 0 not found!" ||
		r.TxnidMostBits == nil || r.TxnidLeastBits != nil {
		t.Fatalf("NEW_TXN before TC_CLIENT_CONNECT: %v", r)
	}
	if resp := c.tcConnect(0); resp.TcClientConnectResponse == nil || resp.TcClientConnectResponse.Error != nil {
		t.Fatalf("TC_CLIENT_CONNECT: %v", resp)
	}
	first, second := c.newTxn(0, 60_000), c.newTxn(0, 60_000)
	if first.GetTxnidLeastBits() != 0 || second.GetTxnidLeastBits() != 1 || first.Error != nil {
		t.Fatalf("NEW_TXN: %v, %v", first, second)
	}
	c.endTxn(0, pb.TxnAction_COMMIT.Enum())
	if resp := c.read().EndTxnResponse; resp == nil || resp.Error != nil || resp.GetTxnidLeastBits() != 0 {
		t.Fatalf("END_TXN: %v", resp)
	}
	const gone = "The transaction with this txdID `(0,0)`not found "
	c.endTxn(0, pb.TxnAction_COMMIT.Enum())
	if resp := c.read().EndTxnResponse; resp.GetError() != pb.ServerError_TransactionNotFound || resp.GetMessage() != gone {
		t.Fatalf("second END_TXN: %v", resp)
	}
	if resp := c.addPartition(0, "persistent://public/default/x"); resp.GetError() != pb.ServerError_TransactionNotFound ||
		resp.GetMessage() != gone {
		t.Fatalf("ADD_PARTITION_TO_TXN after the end: %v", resp)
	}
	c.endTxn(1, nil)
	if !c.closedByBroker() {
		t.Fatal("END_TXN without txn_action: the connection stays open")
	}
}

func TestTransactionalSendIsRefusedWhileTheCoordinatorIsOff(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("t", 1)
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(7),
		TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(3)})
	md := &pb.MessageMetadata{ProducerName: proto.String("raw"), SequenceId: proto.Uint64(7),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
	frame := protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, []byte("x")))
	c.write(frame)
	r := c.read()
	if r.SendError == nil || r.SendError.GetError() != pb.ServerError_NotAllowedError ||
		r.SendError.GetMessage() != "Transaction buffer disable!" || r.SendError.GetSequenceId() != 7 {
		t.Fatalf("got %v", r)
	}
	if ms := b.Messages("t"); len(ms) != 0 {
		t.Fatalf("stored %d messages", len(ms))
	}
}

func TestConflictingAckIsAnsweredWithPulsarsException(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	b.Publish("t", publishN(1)...)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.tcConnect(0)
	a, other := c.newTxn(0, 60_000).GetTxnidLeastBits(), c.newTxn(0, 60_000).GetTxnidLeastBits()
	c.subscribeRaw("t", "s", pb.CommandSubscribe_Shared)
	ack := func(least uint64) *pb.CommandAckResponse {
		c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1),
			AckType: pb.CommandAck_Individual.Enum(), RequestId: nextReq(),
			MessageId:     []*pb.MessageIdData{{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(0)}},
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least)}))
		for {
			if r := c.read(); r.AckResponse != nil {
				return r.AckResponse
			}
		}
	}
	if r := ack(a); r.Error != nil {
		t.Fatalf("first ack: %v", r)
	}
	want := "org.apache.pulsar.transaction.common.exception.TransactionConflictException: " +
		"[persistent://public/default/t][s] Transaction:(0,1) try to ack message:1:0 (ackSet is null) in pending ack status."
	if r := ack(other); r.GetError() != pb.ServerError_TransactionConflict || r.GetMessage() != want {
		t.Fatalf("second ack: %v", r)
	}
}

func TestLastMessageIDStopsBeforeAnOpenTransaction(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	b.Publish("t", publishN(1)...)
	id := b.NewTransaction(time.Hour)
	b.PublishInTransaction(id, "t", publishN(1)...)
	b.Publish("t", publishN(1)...)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.subscribeRaw("t", "s", pb.CommandSubscribe_Exclusive)
	last := func() uint64 {
		c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{
			ConsumerId: proto.Uint64(1), RequestId: nextReq()}))
		for {
			if r := c.read(); r.GetLastMessageIdResponse != nil {
				return r.GetLastMessageIdResponse.GetLastMessageId().GetEntryId()
			}
		}
	}
	if got := last(); got != 0 {
		t.Fatalf("while open: last entry %d, want 0", got)
	}
	b.AbortTransaction(id)
	// Entry 3 is the abort marker, entry 1 the aborted message.
	if got := last(); got != 2 {
		t.Fatalf("after abort: last entry %d, want 2", got)
	}
}

func publishN(n int) []broker.ProducerMessage {
	out := make([]broker.ProducerMessage, n)
	for i := range out {
		out[i] = broker.ProducerMessage{Payload: []byte{byte('0' + i)}}
	}
	return out
}

// A transactional ack does not ask the coordinator: an ack in a transaction
// that has already ended is held like any other, until the next end on the
// subscription brings a low water mark past it and aborts it there. Pulsar
// 4.0.8 answered this very sequence the same way.
func TestAnAckInAnEndedTransactionIsHeldUntilTheLowWaterMark(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions())
	b.Publish("t", publishN(2)...)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.tcConnect(0)
	c.subscribeRaw("t", "s", pb.CommandSubscribe_Shared)
	var queued []string // MESSAGE frames read while waiting for a response
	readCmd := func() *pb.BaseCommand {
		for {
			r := c.read()
			if r.Message == nil {
				return r
			}
			queued = append(queued, fmt.Sprintf("%d/%d", r.Message.MessageId.GetEntryId(), r.Message.GetRedeliveryCount()))
		}
	}
	msgs := func(n int) []string {
		for len(queued) < n {
			if r := c.read(); r.Message != nil {
				queued = append(queued, fmt.Sprintf("%d/%d", r.Message.MessageId.GetEntryId(), r.Message.GetRedeliveryCount()))
			}
		}
		got := queued[:n]
		queued = queued[n:]
		return got
	}
	msgs(2)
	addSub := func(least uint64) {
		c.send(protocol.Base(pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, &pb.CommandAddSubscriptionToTxn{RequestId: nextReq(),
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least),
			Subscription: []*pb.Subscription{{Topic: proto.String("persistent://public/default/t"), Subscription: proto.String("s")}}}))
		if r := readCmd(); r.AddSubscriptionToTxnResponse == nil || r.AddSubscriptionToTxnResponse.Error != nil {
			t.Fatalf("ADD_SUBSCRIPTION_TO_TXN: %v", r)
		}
	}
	ack := func(least, entry uint64) {
		c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1),
			AckType: pb.CommandAck_Individual.Enum(), RequestId: nextReq(),
			MessageId:     []*pb.MessageIdData{{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(entry)}},
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least)}))
		for {
			if r := readCmd(); r.AckResponse != nil {
				if r.AckResponse.Error != nil {
					t.Fatalf("ack of %d in (0,%d): %v", entry, least, r.AckResponse)
				}
				return
			}
		}
	}
	end := func(least uint64) {
		c.endTxn(least, pb.TxnAction_COMMIT.Enum())
		for {
			if r := readCmd(); r.EndTxnResponse != nil {
				return
			}
		}
	}
	a := c.newTxn(0, 60_000).GetTxnidLeastBits()
	addSub(a)
	end(a)
	ack(a, 0) // accepted: the transaction has ended, but the subscription cannot tell
	c.send(protocol.Base(pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES, &pb.CommandRedeliverUnacknowledgedMessages{
		ConsumerId: proto.Uint64(1)}))
	if got := msgs(1); fmt.Sprint(got) != "[1/1]" {
		t.Fatalf("after redeliver-all: %v, want only entry 1 (entry 0 is held)", got)
	}
	next := c.newTxn(0, 60_000).GetTxnidLeastBits()
	addSub(next)
	ack(next, 1)
	end(next)
	if got := msgs(1); fmt.Sprint(got) != "[0/1]" {
		t.Fatalf("after the next commit: %v, want entry 0 back with count 1", got)
	}
}

// Only the role that opened a transaction, or a super-user, may use it;
// anyone else is told it does not exist.
func TestAnotherRolesTransactionIsNotFound(t *testing.T) {
	b := testkit.Start(t, testkit.WithTransactions(), testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	dial := func(role string) *rawClient {
		c := dialRaw(t, addrOf(b))
		c.send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{ClientVersion: proto.String("raw-test"),
			ProtocolVersion: proto.Int32(20), AuthMethodName: proto.String("token"), AuthData: []byte(b.Token(role))}))
		if r := c.read(); r.Connected == nil {
			t.Fatalf("%s: handshake: %v", role, r)
		}
		c.tcConnect(0)
		return c
	}
	alice, bob, admin := dial("alice"), dial("bob"), dial("admin")
	id := alice.newTxn(0, 60_000).GetTxnidLeastBits()
	resp := bob.addPartition(id, "persistent://public/default/t")
	want := fmt.Sprintf("Client (bob) is neither the owner of the transaction (0,%d) nor a super user", id)
	if resp.GetError() != pb.ServerError_TransactionNotFound || resp.GetMessage() != want {
		t.Fatalf("bob: %v", resp)
	}
	if resp := admin.addPartition(id, "persistent://public/default/t"); resp.Error != nil {
		t.Fatalf("a super-user: %v", resp)
	}
	if resp := alice.addPartition(id, "persistent://public/default/t"); resp.Error != nil {
		t.Fatalf("the owner: %v", resp)
	}
}

// A cumulative ack in a transaction moves the mark-delete position only
// when the transaction commits; an abort drops it without giving anything
// back (the consumer keeps what it received), as on Pulsar 4.0.8.
func TestCumulativeAckInATransactionMovesTheCursorAtCommit(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := testkit.Start(t, testkit.WithTransactions())
		b.Publish("t", publishN(3)...)
		c := dialRaw(t, addrOf(b))
		c.connect()
		c.tcConnect(0)
		least := c.newTxn(0, 60_000).GetTxnidLeastBits()
		// The subscription is registered, as clients do before their first ack.
		c.send(protocol.Base(pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, &pb.CommandAddSubscriptionToTxn{RequestId: nextReq(),
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least),
			Subscription: []*pb.Subscription{{Topic: proto.String("persistent://public/default/t"), Subscription: proto.String("s")}}}))
		c.read()
		c.subscribeRaw("t", "s", pb.CommandSubscribe_Exclusive)
		c.send(protocol.Base(pb.BaseCommand_ACK, &pb.CommandAck{ConsumerId: proto.Uint64(1),
			AckType: pb.CommandAck_Cumulative.Enum(), RequestId: nextReq(),
			MessageId:     []*pb.MessageIdData{{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(1)}},
			TxnidMostBits: proto.Uint64(0), TxnidLeastBits: proto.Uint64(least)}))
		for {
			if r := c.read(); r.AckResponse != nil {
				if r.AckResponse.Error != nil {
					t.Fatalf("cumulative ack: %v", r.AckResponse)
				}
				break
			}
		}
		if md := b.Sub("t", "s").MarkDelete.Entry; md != -1 {
			t.Fatalf("before the end: mark-delete %d, want -1", md)
		}
		id := broker.TxnID{Most: 0, Least: least}
		want := int64(1)
		if commit {
			b.CommitTransaction(id)
		} else {
			b.AbortTransaction(id)
			want = -1
		}
		s := b.Sub("t", "s")
		if s.MarkDelete.Entry != want || len(s.Consumers[0].Pending) != 3-int(want+1) {
			t.Fatalf("commit %v: mark-delete %d, pending %+v", commit, s.MarkDelete.Entry, s.Consumers[0].Pending)
		}
	}
}
