package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// findConsumer returns the consumer with this name on a subscription, or nil.
func (b *Broker) findConsumer(topic, sub, name string) *Consumer {
	t := b.topicByName(topic)
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[sub]
	if s == nil {
		return nil
	}
	for _, c := range s.consumers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// DropConsumerConnection closes the TCP connection that carries the named
// consumer, as a crash of that client would. Everything else on the
// connection goes too. It reports whether such a consumer was found.
func (b *Broker) DropConsumerConnection(topic, sub, consumer string) bool {
	c := b.findConsumer(topic, sub, consumer)
	if c == nil {
		return false
	}
	c.conn.close()
	return true
}

// CloseConsumer closes the named consumer from the broker side: the client
// gets CLOSE_CONSUMER and subscribes again, as after a topic unload. It
// reports whether such a consumer was found.
func (b *Broker) CloseConsumer(topic, sub, consumer string) bool {
	c := b.findConsumer(topic, sub, consumer)
	if c == nil {
		return false
	}
	t := c.sub.topic
	t.mu.Lock()
	closed := c.sub.closeConsumersLocked(nil, c)
	t.mu.Unlock()
	for _, o := range closed {
		o.conn.forget(o)
	}
	return len(closed) > 0
}

// CloseProducer closes the named producer of a topic from the broker side:
// the client gets CLOSE_PRODUCER and reconnects. It reports whether such a
// producer was found.
func (b *Broker) CloseProducer(topic, producer string) bool {
	t := b.topicByName(topic)
	if t == nil {
		return false
	}
	t.mu.Lock()
	var p *Producer
	for q := range t.producers {
		if q.Name == producer {
			p = q
		}
	}
	if p != nil {
		t.closeProducerLocked(p)
	}
	t.mu.Unlock()
	if p == nil {
		return false
	}
	p.conn.forgetProducer(p)
	return true
}

// faults holds the injected failures and delays, by command type.
type faults struct {
	mu    sync.Mutex
	any   atomic.Bool
	rules map[pb.BaseCommand_Type]*faultRule
}

type faultRule struct {
	failLeft int
	code     pb.ServerError
	message  string
	delay    time.Duration
}

// commandType resolves a command name such as "SUBSCRIBE" or "LOOKUP".
func commandType(kind string) (pb.BaseCommand_Type, error) {
	v, ok := pb.BaseCommand_Type_value[kind]
	if !ok {
		return 0, fmt.Errorf("unknown command %q (use the protocol's names: SUBSCRIBE, PRODUCER, SEND, LOOKUP…)", kind)
	}
	return pb.BaseCommand_Type(v), nil
}

// FailNext makes the next n commands of a kind (by its protocol name:
// "SUBSCRIBE", "PRODUCER", "SEND", "LOOKUP", "PARTITIONED_METADATA", "ACK"…)
// fail with the given Pulsar error code, from any connection. Each failure is
// answered the way Pulsar answers that command: ERROR for most requests,
// SEND_ERROR for SEND, the error inside the response for LOOKUP,
// PARTITIONED_METADATA, GET_SCHEMA and ACK with a request id. A command that
// has no answer (FLOW, an ACK without request id…) is dropped instead.
func (b *Broker) FailNext(kind string, n int, code pb.ServerError) error {
	t, err := commandType(kind)
	if err != nil {
		return err
	}
	b.faults.update(t, func(r *faultRule) {
		r.failLeft = n
		r.code = code
		r.message = fmt.Sprintf("pulsarsim: injected %s for %s", code, kind)
	})
	return nil
}

// DelayReplies makes the broker wait d before it handles each command of a
// kind, so its reply comes d later; 0 removes the delay. The connection's
// later commands wait behind it, as behind a slow broker.
func (b *Broker) DelayReplies(kind string, d time.Duration) error {
	t, err := commandType(kind)
	if err != nil {
		return err
	}
	b.faults.update(t, func(r *faultRule) { r.delay = d })
	return nil
}

func (f *faults) update(t pb.BaseCommand_Type, change func(*faultRule)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rules == nil {
		f.rules = map[pb.BaseCommand_Type]*faultRule{}
	}
	r := f.rules[t]
	if r == nil {
		r = &faultRule{}
		f.rules[t] = r
	}
	change(r)
	if r.failLeft <= 0 && r.delay <= 0 {
		delete(f.rules, t)
	}
	f.any.Store(len(f.rules) > 0)
}

// take returns the delay to apply to a command of type t and whether it must
// fail (consuming one failure), with the code and message.
func (f *faults) take(t pb.BaseCommand_Type) (delay time.Duration, fail bool, code pb.ServerError, msg string) {
	if !f.any.Load() {
		return 0, false, 0, ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rules[t]
	if r == nil {
		return 0, false, 0, ""
	}
	delay = r.delay
	if r.failLeft > 0 {
		r.failLeft--
		fail, code, msg = true, r.code, r.message
		if r.failLeft == 0 && r.delay <= 0 {
			delete(f.rules, t)
			f.any.Store(len(f.rules) > 0)
		}
	}
	return delay, fail, code, msg
}

// injectFault applies the injected delay and failure for cmd. It returns true
// when the command was answered with a failure (or dropped) and must not run.
func (c *conn) injectFault(cmd *pb.BaseCommand) bool {
	delay, fail, code, msg := c.b.faults.take(cmd.GetType())
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-c.done:
			return true
		}
	}
	if !fail {
		return false
	}
	c.log.Info("injected failure", "type", cmd.GetType().String(), "code", code.String())
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
	case cmd.Ack != nil:
		if cmd.Ack.RequestId != nil {
			c.send(ackResponse(cmd.Ack, code, msg))
		}
	default:
		if id, ok := requestID(cmd); ok {
			c.send(protocol.ErrorCommand(id, code, msg))
		}
	}
	return true
}

// requestID returns the request_id of a command's sub-command, if it has one.
func requestID(cmd *pb.BaseCommand) (uint64, bool) {
	m := cmd.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(protocol.SubCommandField(cmd.GetType()))
	if fd == nil || fd.Message() == nil || !m.Has(fd) {
		return 0, false
	}
	sub := m.Get(fd).Message()
	rf := sub.Descriptor().Fields().ByName("request_id")
	if rf == nil || !sub.Has(rf) {
		return 0, false
	}
	return sub.Get(rf).Uint(), true
}
