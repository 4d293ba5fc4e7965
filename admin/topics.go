package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Handlers for topics, partitioned topics and subscriptions.

// deleteTopic deletes a non-partitioned topic or one partition; Pulsar
// refuses a partitioned topic's own name with 409.
func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if tn, perr := broker.ParseTopicName(topic); err == nil && perr == nil && tn.Partition < 0 {
		if n, _ := s.b.PartitionedMetadata(topic); n > 0 {
			err = errStatus(http.StatusConflict, topic+" is a partitioned topic, instead of calling delete topic, please call delete-partitioned-topic.")
		}
	}
	if err == nil {
		err = s.b.DeleteTopic(topic, boolParam(r, "force"))
	}
	reply(w, nil, err)
}

func (s *Server) createPartitionedTopic(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var n int
	var props map[string]string
	if err == nil {
		n, props, err = readPartitionedMetadata(r)
	}
	if err == nil {
		err = s.b.CreatePartitionedTopicWithProperties(topic, n, props)
	}
	reply(w, nil, err)
}

func (s *Server) updatePartitions(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var n int
	if err == nil {
		n, err = readInt(r)
	}
	if err == nil {
		err = s.b.UpdatePartitionedTopic(topic, n)
	}
	reply(w, nil, err)
}

// getPartitions answers the partitioned metadata: N for a partitioned topic,
// 0 for any other, as Pulsar answers when auto-creation is allowed.
func (s *Server) getPartitions(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var n int
	switch {
	case err != nil:
	case boolParam(r, "checkAllowAutoCreation"):
		// The client's lookup: creation on first use may answer for a
		// topic that does not exist yet.
		n, err = s.b.PartitionedMetadata(topic)
	default:
		// A topic that does not exist is a 404, as Pulsar answers it.
		n, err = s.b.ExistingPartitions(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, s.partitionedMetadataOf(topic, n), nil)
}

func (s *Server) deletePartitionedTopic(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.DeletePartitionedTopic(topic, boolParam(r, "force"))
	}
	reply(w, nil, err)
}

// topicsMode is the listing mode of the path's domain.
func topicsMode(r *http.Request) (broker.TopicsMode, error) {
	switch r.PathValue("domain") {
	case "persistent":
		return broker.TopicsPersistent, nil
	case "non-persistent":
		return broker.TopicsNonPersistent, nil
	}
	return 0, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
}

// listTopics lists the namespace's topics of the path's domain, each
// partition of a partitioned topic separately, as Pulsar's getList does.
func (s *Server) listTopics(w http.ResponseWriter, r *http.Request) {
	ns, ok := s.existingNamespace(w, r)
	if !ok {
		return
	}
	mode, err := topicsMode(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, s.b.TopicsOfNamespace(ns, mode), nil)
}

// listPartitionedTopics lists the namespace's partitioned topics by name.
func (s *Server) listPartitionedTopics(w http.ResponseWriter, r *http.Request) {
	ns, ok := s.existingNamespace(w, r)
	if !ok {
		return
	}
	mode, err := topicsMode(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, s.b.PartitionedTopics(ns, mode), nil)
}

func (s *Server) unloadTopic(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.UnloadTopic(topic)
	}
	reply(w, nil, err)
}

// terminatedID is the body of a terminate's answer: the last message id as
// Pulsar writes a MessageIdImpl.
type terminatedID struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int32 `json:"partitionIndex"`
	BatchSize      int   `json:"batchSize"`
	BatchIndex     int32 `json:"batchIndex"`
}

// terminateTopic answers POST …/terminate with the last message id. Only
// persistent topics can be terminated (406 otherwise, as Pulsar answers).
func (s *Server) terminateTopic(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("domain") == "non-persistent" {
		reply(w, nil, errStatus(http.StatusNotAcceptable, "Need to provide a persistent topic name"))
		return
	}
	topic, err := topicFromPath(r)
	var id broker.MessageID
	if n, perr := s.b.ExistingPartitions(topic); err == nil && perr == nil && n > 0 {
		err = errStatus(http.StatusMethodNotAllowed, "Termination of a partitioned topic is not allowed")
	}
	if err == nil {
		id, err = s.b.TerminateTopic(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, terminatedID{LedgerID: id.Ledger, EntryID: id.Entry, PartitionIndex: id.Partition, BatchIndex: -1}, nil)
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var subs []string
	if err == nil {
		subs, err = s.b.Subscriptions(topic)
	}
	reply(w, subs, err)
}

// createSubscription creates a durable subscription at the latest position,
// or at the message id of the body ({"ledgerId": -1, "entryId": -1} is the
// earliest, as pulsaradmin sends it), on every partition of a partitioned
// topic. A body that does not parse is a 400 and creates nothing.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var body struct {
		LedgerID   *int64            `json:"ledgerId"`
		EntryID    *int64            `json:"entryId"`
		Properties map[string]string `json:"properties"`
	}
	if err == nil {
		err = decodeJSON(r, &body)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	at := broker.Latest
	if body.LedgerID != nil && body.EntryID != nil {
		at = broker.AtMessage(broker.MessageID{Ledger: *body.LedgerID, Entry: *body.EntryID})
	}
	reply(w, nil, s.b.CreateSubscriptionWithProperties(topic, r.PathValue("sub"), at, body.Properties))
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.DeleteSubscription(topic, r.PathValue("sub"), boolParam(r, "force"))
	}
	reply(w, nil, err)
}

// messageByID answers one stored entry the way Pulsar's REST API does
// (writeEntry); Pulsar refuses a partitioned topic's name.
func (s *Server) messageByID(w http.ResponseWriter, r *http.Request) {
	topic, err := s.singleTopic(r, "GetMessageById is not allowed on partitioned-topic")
	if err != nil {
		reply(w, nil, err)
		return
	}
	ledger, err1 := strconv.ParseInt(r.PathValue("ledger"), 10, 64)
	entryID, err2 := strconv.ParseInt(r.PathValue("entry"), 10, 64)
	if err1 != nil || err2 != nil {
		// Jersey answers a path parameter it cannot convert with 404.
		reply(w, nil, notFound(r))
		return
	}
	e, err := s.b.Entry(topic, broker.MessageID{Ledger: ledger, Entry: entryID})
	if errors.Is(err, broker.ErrMessageNotFound) {
		err = beyondLedger(s.b, topic, ledger, entryID)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	writeEntry(w, e)
}

// beyondLedger is Pulsar's answer to a read of an entry that is not
// stored: the managed ledger's exception, unexpected to the REST handler,
// for a negative entry or one past the last of the topic's current ledger,
// else 404 "Message id not found".
func beyondLedger(b *broker.Broker, topic string, ledger, entry int64) error {
	last, err := b.LastMessageID(topic)
	switch {
	case err != nil || ledger != last.Ledger:
		return broker.ErrMessageNotFound
	case entry < 0:
		return ledgerException(badLedgerParameter)
	case entry > last.Entry:
		return ledgerException(fmt.Sprintf("LastConfirmedEntry is %d:%d when reading entry %d", last.Ledger, last.Entry, entry))
	}
	return broker.ErrMessageNotFound
}
