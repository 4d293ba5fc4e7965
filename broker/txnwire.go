package broker

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// The transaction commands on the wire (ServerCnx's handlers). With the
// coordinator off each is refused with ERROR NotAllowedError; on, each is
// answered with its own response, errors inside it.

// txnErrorCode maps a transaction error to the Pulsar error code it is sent
// with; anything else is UnknownError.
func txnErrorCode(err error) pb.ServerError {
	var te *txn.Error
	if !errors.As(err, &te) {
		return pb.ServerError_UnknownError
	}
	switch te.Kind {
	case txn.KindNotFound:
		return pb.ServerError_TransactionNotFound
	case txn.KindInvalidStatus:
		return pb.ServerError_InvalidTxnStatus
	case txn.KindConflict:
		return pb.ServerError_TransactionConflict
	case txn.KindNotAllowed:
		return pb.ServerError_NotAllowedError
	case txn.KindCoordinatorNotFound:
		return pb.ServerError_TransactionCoordinatorNotFound
	}
	return pb.ServerError_UnknownError
}

// runTxnCommand handles a transaction command; it returns false when the
// connection must close.
func (c *conn) runTxnCommand(cmd *pb.BaseCommand) bool {
	if !c.b.cfg.transactions {
		switch {
		case cmd.EndTxnOnPartition != nil:
			c.handleEndTxnOnPartition(cmd.EndTxnOnPartition)
		case cmd.EndTxnOnSubscription != nil:
			c.handleEndTxnOnSubscription(cmd.EndTxnOnSubscription)
		default:
			id, _ := requestID(cmd)
			c.send(protocol.ErrorCommand(id, pb.ServerError_NotAllowedError, errTxnsOff))
		}
		return true
	}
	switch {
	case cmd.TcClientConnectRequest != nil:
		c.b.connectCoordinator(cmd.TcClientConnectRequest.GetTcId())
		c.send(protocol.Base(pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE, &pb.CommandTcClientConnectResponse{
			RequestId: cmd.TcClientConnectRequest.RequestId}))
	case cmd.NewTxn != nil:
		c.handleNewTxn(cmd.NewTxn)
	case cmd.AddPartitionToTxn != nil:
		c.handleAddPartitionToTxn(cmd.AddPartitionToTxn)
	case cmd.AddSubscriptionToTxn != nil:
		c.handleAddSubscriptionToTxn(cmd.AddSubscriptionToTxn)
	case cmd.EndTxn != nil:
		return c.handleEndTxn(cmd.EndTxn)
	case cmd.EndTxnOnPartition != nil:
		c.handleEndTxnOnPartition(cmd.EndTxnOnPartition)
	case cmd.EndTxnOnSubscription != nil:
		c.handleEndTxnOnSubscription(cmd.EndTxnOnSubscription)
	}
	return true
}

func (c *conn) handleNewTxn(n *pb.CommandNewTxn) {
	tc := n.GetTcId()
	// txn_ttl_seconds carries milliseconds: the clients send the timeout in
	// ms there, and Pulsar's coordinator reads it so.
	id, err := c.b.beginTxn(tc, int64(n.GetTxnTtlSeconds()), c.role())
	if errors.Is(err, txn.ErrMaxActive) {
		return // Pulsar answers nothing, so that the client does not retry
	}
	resp := &pb.CommandNewTxnResponse{RequestId: n.RequestId, TxnidMostBits: proto.Uint64(tc)}
	if err != nil {
		resp.Error, resp.Message = txnErrorCode(err).Enum(), proto.String(err.Error())
	} else {
		resp.TxnidLeastBits = proto.Uint64(id.Least)
	}
	c.send(protocol.Base(pb.BaseCommand_NEW_TXN_RESPONSE, resp))
}

func (c *conn) handleAddPartitionToTxn(a *pb.CommandAddPartitionToTxn) {
	id := txn.ID{Most: a.GetTxnidMostBits(), Least: a.GetTxnidLeastBits()}
	err := c.b.addPartitions(id, c.role(), a.GetPartitions())
	resp := &pb.CommandAddPartitionToTxnResponse{RequestId: a.RequestId,
		TxnidLeastBits: proto.Uint64(id.Least), TxnidMostBits: proto.Uint64(id.Most)}
	if err != nil {
		resp.Error, resp.Message = txnErrorCode(err).Enum(), proto.String(err.Error())
	}
	c.send(protocol.Base(pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE, resp))
}

func (c *conn) handleAddSubscriptionToTxn(a *pb.CommandAddSubscriptionToTxn) {
	id := txn.ID{Most: a.GetTxnidMostBits(), Least: a.GetTxnidLeastBits()}
	subs := make([]txn.Subscription, 0, len(a.GetSubscription()))
	for _, s := range a.GetSubscription() {
		subs = append(subs, txn.Subscription{Topic: s.GetTopic(), Name: s.GetSubscription()})
	}
	err := c.b.addSubscriptions(id, c.role(), subs)
	resp := &pb.CommandAddSubscriptionToTxnResponse{RequestId: a.RequestId,
		TxnidLeastBits: proto.Uint64(id.Least), TxnidMostBits: proto.Uint64(id.Most)}
	if err != nil {
		resp.Error, resp.Message = txnErrorCode(err).Enum(), proto.String(err.Error())
	}
	c.send(protocol.Base(pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE, resp))
}

// handleEndTxn commits or aborts a transaction. END_TXN without its action
// closes the connection, as Pulsar's handler fails on reading it.
func (c *conn) handleEndTxn(e *pb.CommandEndTxn) bool {
	if e.TxnAction == nil {
		c.log.Info("closing connection: END_TXN without txn_action")
		return false
	}
	id := txn.ID{Most: e.GetTxnidMostBits(), Least: e.GetTxnidLeastBits()}
	err := c.b.endTxn(id, e.GetTxnAction() == pb.TxnAction_COMMIT, false, c.role(), true)
	resp := &pb.CommandEndTxnResponse{RequestId: e.RequestId,
		TxnidLeastBits: proto.Uint64(id.Least), TxnidMostBits: proto.Uint64(id.Most)}
	if err != nil {
		resp.Error, resp.Message = txnErrorCode(err).Enum(), proto.String(err.Error())
	}
	c.send(protocol.Base(pb.BaseCommand_END_TXN_RESPONSE, resp))
	return true
}

// tcSuperUser is Pulsar's isSuperUser for the coordinator-to-broker
// commands: everyone, unless authentication and authorization are both on.
func (c *conn) tcSuperUser() bool {
	if c.b.cfg.authn == nil || c.b.cfg.authz == nil {
		return true
	}
	return c.b.cfg.authz.IsSuperUser(c.role())
}

// notTCClient is Pulsar's refusal of END_TXN_ON_* from a client that is not
// a super-user.
func (c *conn) notTCClient(id txn.ID) string {
	return "TC client (" + c.role() + ") is not a super user, and is not allowed to operate on transaction " + id.String()
}

// handleEndTxnOnPartition ends a transaction on one topic, as a
// coordinator asks the topic's owner to (pulsarsim's own coordinator does it
// in place). A topic that does not exist needs nothing.
func (c *conn) handleEndTxnOnPartition(e *pb.CommandEndTxnOnPartition) {
	id := txn.ID{Most: e.GetTxnidMostBits(), Least: e.GetTxnidLeastBits()}
	resp := &pb.CommandEndTxnOnPartitionResponse{RequestId: e.RequestId,
		TxnidLeastBits: proto.Uint64(id.Least), TxnidMostBits: proto.Uint64(id.Most)}
	switch {
	case c.b.topicByName(e.GetTopic()) == nil:
	case !c.tcSuperUser():
		resp.Error, resp.Message = pb.ServerError_TransactionNotFound.Enum(), proto.String(c.notTCClient(id))
	default:
		c.b.endOnTopic(e.GetTopic(), id, e.GetTxnAction() == pb.TxnAction_COMMIT,
			int64(e.GetTxnidLeastBitsOfLowWatermark()))
	}
	c.send(protocol.Base(pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE, resp))
}

// handleEndTxnOnSubscription ends a transaction on one subscription, as a
// coordinator asks the topic's owner to. A topic or subscription that does
// not exist needs nothing.
func (c *conn) handleEndTxnOnSubscription(e *pb.CommandEndTxnOnSubscription) {
	id := txn.ID{Most: e.GetTxnidMostBits(), Least: e.GetTxnidLeastBits()}
	resp := &pb.CommandEndTxnOnSubscriptionResponse{RequestId: e.RequestId,
		TxnidLeastBits: proto.Uint64(id.Least), TxnidMostBits: proto.Uint64(id.Most)}
	sub := e.GetSubscription()
	switch {
	case c.b.topicByName(sub.GetTopic()) == nil:
	case !c.tcSuperUser():
		resp.Error, resp.Message = pb.ServerError_TransactionNotFound.Enum(), proto.String(c.notTCClient(id))
	default:
		c.b.endOnSubscription(sub.GetTopic(), sub.GetSubscription(), id, e.GetTxnAction() == pb.TxnAction_COMMIT,
			int64(e.GetTxnidLeastBitsOfLowWatermark()))
	}
	c.send(protocol.Base(pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE, resp))
}
