package broker

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Producer access modes, as Pulsar's topics apply them:
//   - Shared: refused with ProducerBusy while an exclusive producer holds the
//     topic or a WaitForExclusive producer waits for it;
//   - Exclusive: refused with ProducerFenced while any other producer is
//     attached or waits;
//   - ExclusiveWithFencing: fails the waiting producers (ProducerFenced,
//     "Fenced out") first, so that none is promoted, then closes every other
//     producer and takes the topic. Pulsar closes the fenced producers
//     without telling their clients (no CLOSE_PRODUCER): the next SEND of
//     one closes its connection, and the client, reconnecting, is refused;
//   - WaitForExclusive: queued until the topic is free. The client first gets
//     PRODUCER_SUCCESS with producer_ready false, then a second one with
//     producer_ready true when it holds the topic.
//
// Each time a producer takes the topic exclusively the topic epoch grows; it
// travels in PRODUCER_SUCCESS, and a producer that comes back with an older
// epoch than the topic's is fenced.

// waitingProducer is a WaitForExclusive producer in the queue, with the
// request its second PRODUCER_SUCCESS answers.
type waitingProducer struct {
	p     *Producer
	reqID uint64
}

// admitProducerLocked applies the access mode of a new producer. It returns
// false with the error to send when the producer is refused, and queued true
// when it waits for the topic. The producers it fences are closed from the
// broker side.
func (t *Topic) admitProducerLocked(prod *Producer, req *pb.CommandProducer) (ok, queued bool, refusal *pb.BaseCommand) {
	// Pulsar's message is its exception's, class name first: the exception
	// reaches the answer wrapped.
	refuse := func(code pb.ServerError, format string, args ...any) (bool, bool, *pb.BaseCommand) {
		class := "ProducerFencedException"
		if code == pb.ServerError_ProducerBusy {
			class = "ProducerBusyException"
		}
		msg := "org.apache.pulsar.broker.service.BrokerServiceException$" + class + ": " + fmt.Sprintf(format, args...)
		return false, false, protocol.ErrorCommand(req.GetRequestId(), code, msg)
	}
	// Pulsar names the exclusive producer, "null" when a waiting producer,
	// not a holder, is the reason.
	holder := "null"
	if t.exclusive != nil {
		holder = t.exclusive.Name
	}
	switch req.GetProducerAccessMode() {
	case pb.ProducerAccessMode_Shared:
		if t.exclusive != nil || len(t.waiting) > 0 {
			return refuse(pb.ServerError_ProducerBusy, "Topic has an existing exclusive producer: %s", holder)
		}
		return true, false, nil
	case pb.ProducerAccessMode_Exclusive:
		if t.exclusive != nil || len(t.waiting) > 0 {
			return refuse(pb.ServerError_ProducerFenced, "Topic has an existing exclusive producer: %s", holder)
		}
		if len(t.producers) > 0 {
			return refuse(pb.ServerError_ProducerFenced, "Topic has existing shared producers")
		}
	case pb.ProducerAccessMode_ExclusiveWithFencing:
		t.fenceOthersLocked()
	case pb.ProducerAccessMode_WaitForExclusive:
		if t.exclusive != nil || len(t.producers) > 0 {
			t.waiting = append(t.waiting, waitingProducer{prod, req.GetRequestId()})
			return false, true, nil
		}
	}
	if req.TopicEpoch != nil && t.hasEpoch && req.GetTopicEpoch() < t.topicEpoch {
		return refuse(pb.ServerError_ProducerFenced, "Topic epoch %d is older than the topic's %d", req.GetTopicEpoch(), t.topicEpoch)
	}
	t.takeExclusiveLocked(prod, req.TopicEpoch)
	return true, false, nil
}

// fenceOthersLocked clears the way for an ExclusiveWithFencing producer:
// the waiting producers fail first, so that closing the others promotes
// none of them, then every attached producer is closed without a word to
// its client.
func (t *Topic) fenceOthersLocked() {
	waiting := t.waiting
	t.waiting = nil
	for _, w := range waiting {
		w.p.conn.dropProducerID(w.p)
		w.p.conn.send(protocol.ErrorCommand(w.reqID, pb.ServerError_ProducerFenced,
			"org.apache.pulsar.broker.service.BrokerServiceException$ProducerFencedException: Fenced out"))
	}
	for p := range t.producers {
		t.b.emit(Event{Kind: EventProducerClosed, Topic: t.full, Producer: p.Name, Reason: "broker"})
		p.conn.dropProducerID(p)
		t.dropProducerLocked(p)
	}
}

// dropProducerID removes p from its connection's table without remembering
// it as closed by the broker: a SEND for it then closes the connection.
func (c *conn) dropProducerID(p *Producer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.producers[p.ID] == p {
		delete(c.producers, p.ID)
	}
}

// takeExclusiveLocked makes prod the topic's exclusive producer: a producer
// coming back with the topic's current epoch keeps it, any other gets the
// next one (the first is 0, as in Pulsar).
func (t *Topic) takeExclusiveLocked(prod *Producer, epoch *uint64) {
	next := uint64(0)
	if t.hasEpoch {
		next = t.topicEpoch + 1
	}
	if epoch != nil && (!t.hasEpoch || *epoch >= t.topicEpoch) {
		next = *epoch
	}
	t.topicEpoch, t.hasEpoch = next, true
	t.saveLedgerLocked()
	prod.exclusive = true
	prod.epoch = t.topicEpoch
	t.exclusive = prod
}

// dropProducerLocked detaches a producer (closed, disconnected or fenced)
// and, when the topic is now free, hands it to the first waiting producer.
func (t *Topic) dropProducerLocked(p *Producer) {
	if _, ok := t.producers[p]; ok {
		t.markActiveLocked()
		t.producerRemovedLocked(p.Name)
	}
	delete(t.producers, p)
	if t.exclusive == p {
		t.exclusive = nil
	}
	for i, w := range t.waiting {
		if w.p == p {
			t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
			break
		}
	}
	if t.exclusive != nil || len(t.producers) > 0 || len(t.waiting) == 0 {
		return
	}
	w := t.waiting[0]
	t.waiting = t.waiting[1:]
	t.takeExclusiveLocked(w.p, nil)
	t.producers[w.p] = struct{}{}
	t.producerAddedLocked(w.p.Name)
	t.b.emit(Event{Kind: EventProducerOpened, Topic: t.full, Producer: w.p.Name})
	w.p.conn.send(w.p.conn.producerSuccess(w.reqID, w.p, t.lastSequenceIDLocked(w.p.Name)))
}

// closeProducerLocked closes a producer from the broker side: the client gets
// CLOSE_PRODUCER. The producer leaves its connection's table first, so that
// the client's PRODUCER that follows creates it anew, not finds it alive; the
// connection remembers it for a while (closedproducer.go).
func (t *Topic) closeProducerLocked(p *Producer) {
	t.b.emit(Event{Kind: EventProducerClosed, Topic: t.full, Producer: p.Name, Reason: "broker"})
	p.conn.forgetClosedProducer(p)
	cp := &pb.CommandCloseProducer{ProducerId: proto.Uint64(p.ID), RequestId: proto.Uint64(minusOne)}
	if to := t.movingTo; to != nil {
		cp.AssignedBrokerServiceUrl, cp.AssignedBrokerServiceUrlTls = optionalURL(to.URL), optionalURL(to.TLSURL)
	}
	p.conn.send(protocol.Base(pb.BaseCommand_CLOSE_PRODUCER, cp))
	t.dropProducerLocked(p)
}
