package broker

import (
	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// handleSeek resets the subscription's cursor to a message id or a publish
// time. As Pulsar does, it first disconnects the subscription's consumers
// (each gets CLOSE_CONSUMER and reconnects): all of them on Shared and
// Key_Shared, only the active one on Exclusive and Failover, whose standbys
// stay connected and idle until the next consumer joins. Then it moves the
// cursor and answers SUCCESS. Individually acknowledged entries after the
// target become unacknowledged again.
func (c *conn) handleSeek(sk *pb.CommandSeek) {
	reqID := sk.GetRequestId()
	cs := c.consumer(sk.GetConsumerId())
	switch {
	case sk.MessageId == nil && sk.MessagePublishTime == nil:
		c.send(protocol.ErrorCommand(reqID, pb.ServerError_MetadataError, "Message id and message publish time were not present"))
		return
	case cs == nil:
		c.send(protocol.ErrorCommand(reqID, pb.ServerError_MetadataError, "Consumer not found"))
		return
	}
	s := cs.sub
	t := s.topic
	t.mu.Lock()
	var target int64
	if id := sk.MessageId; id != nil {
		target = t.seekTargetLocked(id)
	} else {
		target = t.firstAtOrAfterLocked(sk.GetMessagePublishTime())
	}
	s.resetting = true
	if s.disp != nil && (s.typ == dispatch.Exclusive || s.typ == dispatch.Failover) {
		if id, ok := s.disp.Active(); ok && s.consumers[id] != nil {
			s.closeConsumersLocked(nil, s.consumers[id])
		}
	} else {
		s.closeConsumersLocked(nil, nil)
	}
	s.resetting = false
	if s.disp != nil {
		s.disp.ResetTo(target)
	} else {
		s.cur.ResetTo(target)
	}
	c.b.emit(Event{Kind: EventSubscriptionSeek, Topic: t.full, Subscription: s.name, ID: t.eventID(target)})
	t.mu.Unlock()
	c.send(protocol.SuccessCommand(reqID))
}

// seekTargetLocked returns the entry a seek to id makes the next to read.
func (t *Topic) seekTargetLocked(id *pb.MessageIdData) int64 {
	switch {
	case int64(id.GetLedgerId()) < 0 || id.GetLedgerId() < t.ledger:
		return t.log.base
	case id.GetLedgerId() > t.ledger || int64(id.GetEntryId()) < 0 || int64(id.GetEntryId()) > t.log.end():
		return t.log.end()
	}
	return max(int64(id.GetEntryId()), t.log.base)
}

// firstAtOrAfterLocked returns the first entry published at or after ms, or
// the end of the log.
func (t *Topic) firstAtOrAfterLocked(ms uint64) int64 {
	for n := t.log.base; n < t.log.end(); n++ {
		if t.log.get(n).publishTime >= ms {
			return n
		}
	}
	return t.log.end()
}
