package admin

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Handlers that read a topic's messages without consuming them: peek at a
// subscription's backlog, examine the topic from either end, its last
// message id, and the message id at a publish time.

// unexpected is Pulsar's answer to an exception its REST handler did not
// expect: 500, with the exception's message and its (here first) stack
// line.
func unexpected(message, exception string) error {
	return errStatus(http.StatusInternalServerError, "\n --- An unexpected error occurred in the server ---\n\n"+
		"Message: "+message+"\n\nStacktrace:\n\n"+exception+"\n")
}

// ledgerException is Pulsar's answer when its managed ledger throws at a
// read the REST handler did not expect to fail.
func ledgerException(message string) error {
	return unexpected(message, "org.apache.bookkeeper.mledger.ManagedLedgerException: "+message)
}

// badLedgerParameter is the managed ledger's message for a position before
// the first entry.
const badLedgerParameter = "Incorrect parameter input error code: -14"

// notFound is Jersey's 404 for a path parameter that does not convert.
func notFound(r *http.Request) error {
	return errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
}

// singleTopic returns the request's topic, refusing with 405 and reason a
// partitioned topic's name (Pulsar serves these on partitions only).
func (s *Server) singleTopic(r *http.Request, reason string) (string, error) {
	topic, err := topicFromPath(r)
	if err != nil {
		return "", err
	}
	if n, err := s.b.PartitionedMetadata(topic); err == nil && n > 0 {
		return "", errStatus(http.StatusMethodNotAllowed, reason)
	}
	return topic, nil
}

// peekMessage answers the messagePosition-th entry of a subscription's
// backlog (pulsar-admin topics peek-messages asks for 1, 2, … in turn).
func (s *Server) peekMessage(w http.ResponseWriter, r *http.Request) {
	topic, err := s.singleTopic(r, "Peek messages on a partitioned topic is not allowed")
	if err != nil {
		reply(w, nil, err)
		return
	}
	n, err := strconv.ParseInt(r.PathValue("position"), 10, 32)
	if err != nil {
		reply(w, nil, notFound(r))
		return
	}
	e, err := s.b.PeekEntry(topic, r.PathValue("sub"), int(n))
	if errors.Is(err, broker.ErrInvalidMessage) {
		// The managed cursor's argument check throws, unexpected to Pulsar.
		err = unexpected("null", "java.lang.IllegalArgumentException")
	} else if errors.Is(err, broker.ErrMessageNotFound) {
		err = errStatus(http.StatusNotFound, "Message not found")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	writeEntry(w, e)
}

// examineMessage answers the messagePosition-th entry counted from the
// topic's start (initialPosition=earliest) or, for any other value, back
// from its end; the position defaults to 1.
func (s *Server) examineMessage(w http.ResponseWriter, r *http.Request) {
	topic, err := s.singleTopic(r, "Examine messages on a partitioned topic is not allowed, "+
		"please try examine message on specific topic partition")
	if err != nil {
		reply(w, nil, err)
		return
	}
	n := int64(1)
	if v := r.URL.Query().Get("messagePosition"); v != "" {
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			reply(w, nil, notFound(r))
			return
		}
	}
	e, err := s.b.ExamineEntry(topic, r.URL.Query().Get("initialPosition") == "earliest", n)
	switch {
	case errors.Is(err, broker.ErrNoEntries):
		err = errStatus(http.StatusPreconditionFailed, err.Error())
	case errors.Is(err, broker.ErrBeyondEntries):
		err = ledgerException(badLedgerParameter)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	writeEntry(w, e)
}

// restMessageID is a message id as Pulsar's REST API writes one.
type restMessageID struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int32 `json:"partitionIndex"`
	BatchIndex     int32 `json:"batchIndex"`
	BatchSize      int32 `json:"batchSize"`
}

// restBatchMessageID is the id of a message of a batch: Pulsar's batch
// message id writes two more fields.
type restBatchMessageID struct {
	restMessageID
	OutstandingAcksInSameBatch int32 `json:"outstandingAcksInSameBatch"`
	OriginalBatchSize          int32 `json:"originalBatchSize"`
}

func restID(id broker.MessageID) restMessageID {
	return restMessageID{LedgerID: id.Ledger, EntryID: id.Entry, PartitionIndex: id.Partition, BatchIndex: -1}
}

// lastMessageID answers the id of the topic's last message.
func (s *Server) lastMessageID(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var id broker.MessageID
	if err == nil {
		id, err = s.b.LastMessageID(topic)
	}
	if err == nil && r.PathValue("domain") == "non-persistent" {
		// Found, then refused: a non-persistent topic keeps no ledger.
		err = errStatus(http.StatusMethodNotAllowed, "GetLastMessageId on a non-persistent topic is not allowed")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	if id.BatchIndex < 0 {
		reply(w, restID(id), nil)
		return
	}
	rid := restID(id)
	rid.BatchIndex = id.BatchIndex
	reply(w, restBatchMessageID{restMessageID: rid}, nil)
}

// messageIDByTime answers the id of the first entry published at or after
// the path's timestamp (milliseconds), or the position after the last.
func (s *Server) messageIDByTime(w http.ResponseWriter, r *http.Request) {
	topic, err := s.singleTopic(r, "Get message ID by timestamp on a partitioned topic is not allowed, "+
		"please try do it on specific topic partition")
	if err != nil {
		reply(w, nil, err)
		return
	}
	ms, err := strconv.ParseInt(r.PathValue("timestamp"), 10, 64)
	if err != nil {
		reply(w, nil, notFound(r))
		return
	}
	id, err := s.b.MessageIDAtTime(topic, ms)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, restID(id), nil)
}
