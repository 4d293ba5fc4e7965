package broker

import (
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// handleSeek resets the subscription's cursor to a message id or a publish
// time (resetCursorLocked: the consumers are disconnected first; on
// Exclusive and Failover only the active one, whose standbys stay connected
// and idle until the next consumer joins), then answers SUCCESS.
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
	t.resetCursorLocked(s, target)
	t.mu.Unlock()
	c.send(protocol.SuccessCommand(reqID))
}

// seekTargetLocked returns the entry a seek to id makes the next to read.
func (t *Topic) seekTargetLocked(id *pb.MessageIdData) int64 {
	switch {
	case int64(id.GetLedgerId()) < 0 || id.GetLedgerId() < t.ledger:
		return t.log.Base
	case id.GetLedgerId() > t.ledger || int64(id.GetEntryId()) < 0 || int64(id.GetEntryId()) > t.log.End():
		return t.log.End()
	}
	return max(int64(id.GetEntryId()), t.log.Base)
}

// firstAtOrAfterLocked returns the first entry published at or after ms, or
// the end of the log.
func (t *Topic) firstAtOrAfterLocked(ms uint64) int64 {
	for n := t.log.Base; n < t.log.End(); n++ {
		if t.log.Get(n).PublishTime >= ms {
			return n
		}
	}
	return t.log.End()
}
