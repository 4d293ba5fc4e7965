package broker

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// How a connection applies the faults in force (fault.go) to the commands it
// reads, before their handlers.

// commandScope is what a command concerns, for matching faults: its topic
// (canonical, and the base name of a partition), subscription, consumer name
// and producer name, each empty when the command does not concern one.
type commandScope struct {
	topic, base                      string
	subscription, consumer, producer string
}

func (s *commandScope) setTopic(tn TopicName) {
	s.topic, s.base = tn.String(), tn.Base().String()
}

// scopeOf resolves what cmd concerns. SUBSCRIBE, PRODUCER, LOOKUP and the
// like carry their topic (and subscription, consumer or producer name)
// themselves; a command that carries a consumer_id or producer_id concerns
// that consumer or producer of this connection, and so its topic.
func (c *conn) scopeOf(cmd *pb.BaseCommand) commandScope {
	var s commandScope
	m := cmd.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(protocol.SubCommandField(cmd.GetType()))
	if fd == nil || fd.Message() == nil || !m.Has(fd) {
		return s
	}
	sub := m.Get(fd).Message()
	if id, ok := subField(sub, "consumer_id", protoreflect.Uint64Kind); ok {
		if cs := c.consumer(id.Uint()); cs != nil {
			s.setTopic(cs.sub.topic.name)
			s.subscription, s.consumer = cs.sub.name, cs.Name
		}
	}
	if id, ok := subField(sub, "producer_id", protoreflect.Uint64Kind); ok {
		c.mu.Lock()
		p := c.producers[id.Uint()]
		c.mu.Unlock()
		if p != nil {
			s.setTopic(p.topic.name)
			s.producer = p.Name
		}
	}
	if v, ok := subField(sub, "topic", protoreflect.StringKind); ok {
		if tn, err := ParseTopicName(v.String()); err == nil {
			s.setTopic(tn)
		}
	}
	txnScope(cmd, &s)
	for name, dst := range map[protoreflect.Name]*string{
		"subscription": &s.subscription, "consumer_name": &s.consumer, "producer_name": &s.producer,
	} {
		if v, ok := subField(sub, name, protoreflect.StringKind); ok {
			*dst = v.String()
		}
	}
	return s
}

// subField returns the value of a sub-command's singular field of this name
// and kind, when it is set.
func subField(m protoreflect.Message, name protoreflect.Name, kind protoreflect.Kind) (protoreflect.Value, bool) {
	fd := m.Descriptor().Fields().ByName(name)
	if fd == nil || fd.Kind() != kind || fd.IsList() || !m.Has(fd) {
		return protoreflect.Value{}, false
	}
	return m.Get(fd), true
}

// applyFaults applies the faults in force to the command of f. It returns
// handled when the command must not run now (it failed, was held, or the
// connection is to close), and keep false when the connection must close.
func (c *conn) applyFaults(f protocol.Frame) (handled, keep bool) {
	cmd := f.Command
	list := c.b.faults.forKind(cmd.GetType())
	if len(list) == 0 {
		return false, true
	}
	scope := c.scopeOf(cmd)
	var delay time.Duration
	twice := false
	for _, h := range list {
		if h.act.passes() && h.matches(scope) && h.fire() {
			delay += h.spec.Delay
			twice = twice || h.act == actDuplicate
		}
	}
	if delay > 0 {
		c.wakeDeferred() // the replies before this command do not wait with it
		select {
		case <-time.After(delay):
		case <-c.done:
			return true, true // closing: the reader notices at its next read
		}
	}
	var final *FaultHandle
	for _, h := range list {
		if !h.act.passes() && h.matches(scope) && h.fire() {
			final = h
			break
		}
	}
	if final == nil {
		// The command runs right after this, on this goroutine. (A held
		// command runs later without it.)
		c.replayTwice = twice
		return false, true
	}
	switch final.act {
	case actHold:
		c.hold(final, f, scope)
		return true, true
	case actDrop:
		c.log.Info("closing connection: injected drop", "type", cmd.GetType().String())
		return true, false
	case actCutOff:
		c.log.Info("cutting the cluster off: injected", "type", cmd.GetType().String())
		c.b.cutOffCluster()
		return true, false
	default:
		c.log.Info("injected failure", "type", cmd.GetType().String(), "code", final.spec.Error.String())
		c.answerWithError(cmd, final.spec.Error, final.spec.Message)
		return true, true
	}
}

// answerWithError answers cmd with an error, as Pulsar answers that command
// when it fails; a command Pulsar does not answer gets nothing.
func (c *conn) answerWithError(cmd *pb.BaseCommand, code pb.ServerError, msg string) {
	switch {
	case cmd.Send != nil:
		c.send(protocol.Base(pb.BaseCommand_SEND_ERROR, &pb.CommandSendError{
			ProducerId: cmd.Send.ProducerId, SequenceId: cmd.Send.SequenceId, Error: code.Enum(), Message: proto.String(msg),
		}))
	case cmd.LookupTopic != nil:
		c.send(protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
			RequestId: cmd.LookupTopic.RequestId, Response: pb.CommandLookupTopicResponse_Failed.Enum(),
			Error: code.Enum(), Message: proto.String(msg),
		}))
	case cmd.PartitionMetadata != nil:
		c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, &pb.CommandPartitionedTopicMetadataResponse{
			RequestId: cmd.PartitionMetadata.RequestId, Response: pb.CommandPartitionedTopicMetadataResponse_Failed.Enum(),
			Error: code.Enum(), Message: proto.String(msg),
		}))
	case cmd.GetSchema != nil:
		c.send(protocol.Base(pb.BaseCommand_GET_SCHEMA_RESPONSE, &pb.CommandGetSchemaResponse{
			RequestId: cmd.GetSchema.RequestId, ErrorCode: code.Enum(), ErrorMessage: proto.String(msg),
		}))
	case cmd.GetOrCreateSchema != nil:
		c.send(protocol.Base(pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, &pb.CommandGetOrCreateSchemaResponse{
			RequestId: cmd.GetOrCreateSchema.RequestId, ErrorCode: code.Enum(), ErrorMessage: proto.String(msg),
		}))
	case cmd.ConsumerStats != nil:
		c.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS_RESPONSE, &pb.CommandConsumerStatsResponse{
			RequestId: cmd.ConsumerStats.RequestId, ErrorCode: code.Enum(), ErrorMessage: proto.String(msg),
		}))
	case cmd.Ack != nil:
		if cmd.Ack.RequestId != nil {
			c.send(ackResponse(cmd.Ack, code, msg))
		}
	default:
		if r := txnResponse(cmd, code, msg); r != nil && c.b.cfg.transactions {
			c.send(r)
		} else if id, ok := requestID(cmd); ok {
			c.send(protocol.ErrorCommand(id, code, msg))
		}
	}
}

// requestID returns the request_id of a command's sub-command, if it has one.
func requestID(cmd *pb.BaseCommand) (uint64, bool) {
	m := cmd.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(protocol.SubCommandField(cmd.GetType()))
	if fd == nil || fd.Message() == nil || !m.Has(fd) {
		return 0, false
	}
	v, ok := subField(m.Get(fd).Message(), "request_id", protoreflect.Uint64Kind)
	return v.Uint(), ok
}

// txnScope sets what a transaction registration concerns: the first
// partition of an ADD_PARTITION_TO_TXN, the first subscription of an
// ADD_SUBSCRIPTION_TO_TXN.
func txnScope(cmd *pb.BaseCommand, s *commandScope) {
	var topic string
	switch {
	case cmd.AddPartitionToTxn != nil && len(cmd.AddPartitionToTxn.GetPartitions()) > 0:
		topic = cmd.AddPartitionToTxn.GetPartitions()[0]
	case cmd.AddSubscriptionToTxn != nil && len(cmd.AddSubscriptionToTxn.GetSubscription()) > 0:
		sub := cmd.AddSubscriptionToTxn.GetSubscription()[0]
		topic, s.subscription = sub.GetTopic(), sub.GetSubscription()
	default:
		return
	}
	if tn, err := ParseTopicName(topic); err == nil {
		s.setTopic(tn)
	}
}

// txnResponse is the response that carries an error for a transaction
// command, as Pulsar answers a failed one; nil for other commands.
func txnResponse(cmd *pb.BaseCommand, code pb.ServerError, msg string) *pb.BaseCommand {
	e, m := code.Enum(), proto.String(msg)
	switch {
	case cmd.TcClientConnectRequest != nil:
		return protocol.Base(pb.BaseCommand_TC_CLIENT_CONNECT_RESPONSE, &pb.CommandTcClientConnectResponse{
			RequestId: cmd.TcClientConnectRequest.RequestId, Error: e, Message: m})
	case cmd.NewTxn != nil:
		return protocol.Base(pb.BaseCommand_NEW_TXN_RESPONSE, &pb.CommandNewTxnResponse{
			RequestId: cmd.NewTxn.RequestId, TxnidMostBits: proto.Uint64(cmd.NewTxn.GetTcId()), Error: e, Message: m})
	case cmd.AddPartitionToTxn != nil:
		a := cmd.AddPartitionToTxn
		return protocol.Base(pb.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE, &pb.CommandAddPartitionToTxnResponse{
			RequestId: a.RequestId, TxnidMostBits: proto.Uint64(a.GetTxnidMostBits()),
			TxnidLeastBits: proto.Uint64(a.GetTxnidLeastBits()), Error: e, Message: m})
	case cmd.AddSubscriptionToTxn != nil:
		a := cmd.AddSubscriptionToTxn
		return protocol.Base(pb.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE, &pb.CommandAddSubscriptionToTxnResponse{
			RequestId: a.RequestId, TxnidMostBits: proto.Uint64(a.GetTxnidMostBits()),
			TxnidLeastBits: proto.Uint64(a.GetTxnidLeastBits()), Error: e, Message: m})
	case cmd.EndTxn != nil:
		a := cmd.EndTxn
		return protocol.Base(pb.BaseCommand_END_TXN_RESPONSE, &pb.CommandEndTxnResponse{
			RequestId: a.RequestId, TxnidMostBits: proto.Uint64(a.GetTxnidMostBits()),
			TxnidLeastBits: proto.Uint64(a.GetTxnidLeastBits()), Error: e, Message: m})
	}
	return nil
}
