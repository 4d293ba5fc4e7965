package admin

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The topic commands of pulsar-admin beyond stats and cursors: expiring up
// to a position, a backlog's size from a position and what it holds
// (analyze-backlog), truncating, trimming, terminating every partition, and
// creating a partitioned topic's missing partitions. The answers are
// Pulsar 4.0.8's (FIDELITY.md, "pulsar-admin: the commands compared").

func (s *Server) routeTopicMaintenance() {
	m := s.mux
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	m.HandleFunc("POST "+topic+"/subscription/{sub}/expireMessages", s.inNamespace(s.expireAtPosition))
	m.HandleFunc("PUT "+topic+"/backlogSize", s.inNamespace(s.backlogSizeFrom))
	m.HandleFunc("POST "+topic+"/subscription/{sub}/analyzeBacklog", s.inNamespace(s.analyzeBacklog))
	m.HandleFunc("DELETE "+topic+"/truncate", s.inNamespace(s.truncateTopic))
	m.HandleFunc("POST "+topic+"/trim", s.inNamespace(s.trimTopic))
	m.HandleFunc("POST "+topic+"/terminate/partitions", s.inNamespace(s.terminatePartitions))
	m.HandleFunc("POST "+topic+"/createMissedPartitions", s.inNamespace(s.createMissedPartitions))
}

// positionBody is Pulsar's ResetCursorData (and MessageIdImpl) as
// pulsar-admin sends it: {"ledgerId": L, "entryId": E, "excluded": B, ...}.
type positionBody struct {
	LedgerID *int64 `json:"ledgerId"`
	EntryID  *int64 `json:"entryId"`
	Excluded bool   `json:"excluded"`
}

// id returns the body's message id, or false when it names none.
func (p positionBody) id() (broker.MessageID, bool) {
	if p.LedgerID == nil || p.EntryID == nil {
		return broker.MessageID{}, false
	}
	return broker.MessageID{Ledger: *p.LedgerID, Entry: *p.EntryID}, true
}

// persistentOnly refuses a non-persistent topic's name where Pulsar serves
// only persistent topics: its route does not exist there.
func persistentOnly(r *http.Request) error {
	if r.PathValue("domain") != "persistent" {
		return notFound(r)
	}
	return nil
}

// expireAtPosition expires a subscription's messages up to the body's
// position; Pulsar refuses a partitioned topic's name.
func (s *Server) expireAtPosition(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = s.singleTopic(r, "Expire message at position is not supported for partitioned-topic")
	}
	var body positionBody
	if err == nil {
		err = decodeJSON(r, &body)
	}
	id, ok := body.id()
	if err == nil && !ok {
		err = errStatus(http.StatusBadRequest, "Invalid message id")
	}
	if err == nil {
		err = s.b.ExpireMessagesAtPosition(topic, r.PathValue("sub"), id, body.Excluded)
	}
	reply(w, nil, err)
}

// backlogSizeFrom answers the estimated size in bytes of the topic's
// entries after the body's message id (the CLI sends the earliest, -1:-1,
// by default).
func (s *Server) backlogSizeFrom(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = s.singleTopic(r, "calculate backlog size is not allowed for partitioned-topic")
	}
	var body positionBody
	if err == nil {
		err = decodeJSON(r, &body)
	}
	id, ok := body.id()
	if err == nil && !ok {
		id = broker.MessageID{Ledger: -1, Entry: -1}
	}
	var size int64
	if err == nil {
		size, err = s.b.BacklogSizeFrom(topic, id)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, size, nil)
}

// backlogAnalysis is Pulsar's AnalyzeSubscriptionBacklogResult. Without
// entry filters, every entry and message is accepted; the first and last
// message ids are left out when nothing was counted.
type backlogAnalysis struct {
	Entries                   int64  `json:"entries"`
	Messages                  int64  `json:"messages"`
	FilterRejectedEntries     int64  `json:"filterRejectedEntries"`
	FilterAcceptedEntries     int64  `json:"filterAcceptedEntries"`
	FilterRescheduledEntries  int64  `json:"filterRescheduledEntries"`
	FilterRejectedMessages    int64  `json:"filterRejectedMessages"`
	FilterAcceptedMessages    int64  `json:"filterAcceptedMessages"`
	FilterRescheduledMessages int64  `json:"filterRescheduledMessages"`
	Aborted                   bool   `json:"aborted"`
	FirstMessageID            string `json:"firstMessageId,omitempty"`
	LastMessageID             string `json:"lastMessageId,omitempty"`
}

// analyzeBacklog counts a subscription's backlog, from its first
// unacknowledged entry or from the body's position.
func (s *Server) analyzeBacklog(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = s.singleTopic(r, "Analyze backlog on a partitioned topic is not allowed, please try do it on specific topic partition")
	}
	var body positionBody
	if err == nil {
		err = decodeJSON(r, &body)
	}
	var from *broker.MessageID
	if id, ok := body.id(); ok {
		from = &id
	}
	var a broker.BacklogAnalysis
	if err == nil {
		a, err = s.b.AnalyzeBacklog(topic, r.PathValue("sub"), from)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	out := backlogAnalysis{Entries: a.Entries, Messages: a.Messages,
		FilterAcceptedEntries: a.Entries, FilterAcceptedMessages: a.Messages}
	if a.First != nil {
		out.FirstMessageID = strconv.FormatInt(a.First.Ledger, 10) + ":" + strconv.FormatInt(a.First.Entry, 10)
		out.LastMessageID = strconv.FormatInt(a.Last.Ledger, 10) + ":" + strconv.FormatInt(a.Last.Entry, 10)
	}
	reply(w, out, nil)
}

// truncateTopic moves every subscription's cursor to the end of the topic,
// on each partition of a partitioned topic. Pulsar also deletes the
// ledgers nothing reads any more; its current ledger stays, as pulsarsim's
// one ledger does, so the entries are still listed in the internal stats.
func (s *Server) truncateTopic(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = topicFromPath(r)
	}
	var subs []string
	if err == nil {
		subs, err = s.b.Subscriptions(topic)
	}
	for _, sub := range subs {
		if e := s.b.ClearBacklog(topic, sub); e != nil && !errors.Is(e, broker.ErrSubscriptionNotFound) {
			err = e
			break
		}
	}
	reply(w, nil, err)
}

// trimTopic deletes the ledgers outside the retention policy: Pulsar never
// deletes a topic's current ledger, and pulsarsim keeps each topic in one,
// so there is nothing to delete; a missing topic is a 404.
func (s *Server) trimTopic(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = topicFromPath(r)
	}
	if err == nil {
		_, err = s.b.Subscriptions(topic)
	}
	reply(w, nil, err)
}

// terminatePartitions terminates every partition of a partitioned topic and
// answers each one's last message id by partition index. Pulsar refuses a
// non-partitioned topic's name (and a missing one's) with 405.
func (s *Server) terminatePartitions(w http.ResponseWriter, r *http.Request) {
	err := persistentOnly(r)
	var topic string
	if err == nil {
		topic, err = topicFromPath(r)
	}
	var n int
	if err == nil {
		n, err = s.b.PartitionedMetadata(topic)
	}
	if err == nil && n == 0 {
		err = errStatus(http.StatusMethodNotAllowed,
			"Termination of a non-partitioned topic is not allowed using partitioned-terminate, please use terminate commands")
	}
	out := map[string]terminatedID{}
	for i := range n {
		if err != nil {
			break
		}
		var id broker.MessageID
		id, err = s.b.TerminateTopic(topic + "-partition-" + strconv.Itoa(i))
		// Pulsar writes each partition's id without its index.
		out[strconv.Itoa(i)] = terminatedID{LedgerID: id.Ledger, EntryID: id.Entry, PartitionIndex: -1, BatchIndex: -1}
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, out, nil)
}

// createMissedPartitions creates the partitions of a partitioned topic that
// do not exist; a topic without partitions is a 404.
func (s *Server) createMissedPartitions(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var n int
	if err == nil {
		n, err = s.b.PartitionedMetadata(topic)
	}
	if err == nil && n == 0 {
		err = errStatus(http.StatusNotFound, "Topic "+topic+" does not exist")
	}
	for i := range n {
		if err != nil {
			break
		}
		if e := s.b.CreateTopic(topic + "-partition-" + strconv.Itoa(i)); e != nil && !errors.Is(e, broker.ErrTopicExists) {
			err = e
		}
	}
	reply(w, nil, err)
}
