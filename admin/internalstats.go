package admin

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A topic's internal stats (pulsar-admin topics stats-internal): its
// managed ledger and the cursors of its subscriptions, in the JSON shape of
// Pulsar 4.0's PersistentTopicInternalStats.

// ledgerJSON is one ledger of the list, and the compacted ledger.
type ledgerJSON struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Offloaded bool  `json:"offloaded"`
	// Metadata is BookKeeper's description of the ledger, asked for with
	// metadata=true.
	Metadata        string `json:"metadata,omitempty"`
	UnderReplicated bool   `json:"underReplicated"`
}

type cursorJSON struct {
	MarkDeletePosition                       string            `json:"markDeletePosition"`
	ReadPosition                             string            `json:"readPosition"`
	WaitingReadOp                            bool              `json:"waitingReadOp"`
	PendingReadOps                           int               `json:"pendingReadOps"`
	MessagesConsumedCounter                  int64             `json:"messagesConsumedCounter"`
	CursorLedger                             int64             `json:"cursorLedger"`
	CursorLedgerLastEntry                    int64             `json:"cursorLedgerLastEntry"`
	IndividuallyDeletedMessages              string            `json:"individuallyDeletedMessages"`
	LastLedgerSwitchTimestamp                string            `json:"lastLedgerSwitchTimestamp"`
	State                                    string            `json:"state"`
	Active                                   bool              `json:"active"`
	NumberOfEntriesSinceFirstNotAckedMessage int64             `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int               `json:"totalNonContiguousDeletedMessagesRange"`
	SubscriptionHavePendingRead              bool              `json:"subscriptionHavePendingRead"`
	SubscriptionHavePendingReplayRead        bool              `json:"subscriptionHavePendingReplayRead"`
	Properties                               map[string]string `json:"properties"`
}

type internalStatsJSON struct {
	EntriesAddedCounter        int64                 `json:"entriesAddedCounter"`
	NumberOfEntries            int64                 `json:"numberOfEntries"`
	TotalSize                  int64                 `json:"totalSize"`
	CurrentLedgerEntries       int64                 `json:"currentLedgerEntries"`
	CurrentLedgerSize          int64                 `json:"currentLedgerSize"`
	LastLedgerCreatedTimestamp string                `json:"lastLedgerCreatedTimestamp"`
	WaitingCursorsCount        int                   `json:"waitingCursorsCount"`
	PendingAddEntriesCount     int                   `json:"pendingAddEntriesCount"`
	LastConfirmedEntry         string                `json:"lastConfirmedEntry"`
	State                      string                `json:"state"`
	Ledgers                    []ledgerJSON          `json:"ledgers"`
	Cursors                    map[string]cursorJSON `json:"cursors"`
	SchemaLedgers              []ledgerJSON          `json:"schemaLedgers"`
	CompactedLedger            ledgerJSON            `json:"compactedLedger"`
}

// nonPersistentCursorJSON is a subscription of a non-persistent topic:
// Pulsar lists an empty cursor for it, its unset fields left out.
type nonPersistentCursorJSON struct {
	WaitingReadOp                            bool  `json:"waitingReadOp"`
	PendingReadOps                           int   `json:"pendingReadOps"`
	MessagesConsumedCounter                  int64 `json:"messagesConsumedCounter"`
	CursorLedger                             int64 `json:"cursorLedger"`
	CursorLedgerLastEntry                    int64 `json:"cursorLedgerLastEntry"`
	Active                                   bool  `json:"active"`
	NumberOfEntriesSinceFirstNotAckedMessage int64 `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int   `json:"totalNonContiguousDeletedMessagesRange"`
	SubscriptionHavePendingRead              bool  `json:"subscriptionHavePendingRead"`
	SubscriptionHavePendingReplayRead        bool  `json:"subscriptionHavePendingReplayRead"`
}

// nonPersistentStatsJSON is a non-persistent topic's internal stats: it has
// no ledger, so only the counters and its subscriptions.
type nonPersistentStatsJSON struct {
	EntriesAddedCounter    int64                              `json:"entriesAddedCounter"`
	NumberOfEntries        int64                              `json:"numberOfEntries"`
	TotalSize              int64                              `json:"totalSize"`
	CurrentLedgerEntries   int64                              `json:"currentLedgerEntries"`
	CurrentLedgerSize      int64                              `json:"currentLedgerSize"`
	WaitingCursorsCount    int                                `json:"waitingCursorsCount"`
	PendingAddEntriesCount int                                `json:"pendingAddEntriesCount"`
	Cursors                map[string]nonPersistentCursorJSON `json:"cursors"`
}

type partitionedInternalStatsJSON struct {
	Metadata   partitionsMetadataJSON `json:"metadata"`
	Partitions map[string]any         `json:"partitions"`
}

type partitionsMetadataJSON struct {
	Partitions int  `json:"partitions"`
	Deleted    bool `json:"deleted"`
}

// javaTime writes a time as Pulsar's internal stats do: UTC, to the
// millisecond, without trailing zeros.
func javaTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.999Z07:00")
}

// ledgerPos writes a ledger position as L:E.
func ledgerPos(ledger, entry int64) string { return fmt.Sprintf("%d:%d", ledger, entry) }

// deletedRanges writes individually acknowledged ranges as Pulsar's cursor
// does: [(L:a..L:b],(L:c..L:d]].
func deletedRanges(ledger int64, rs []broker.EntryRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "(" + ledgerPos(ledger, r.From) + ".." + ledgerPos(ledger, r.To) + "]"
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// ledgerMetadata describes the topic's ledger as BookKeeper does, for
// metadata=true. pulsarsim has no bookie: the ensemble names the address
// of a standalone's own bookie.
func ledgerMetadata(topic string, closed bool) string {
	tn, _ := broker.ParseTopicName(topic)
	ns := tn.NamespaceName()
	local := strings.TrimPrefix(topic, "persistent://"+ns+"/")
	b64 := func(s string) string { return "base64:" + base64.StdEncoding.EncodeToString([]byte(s)) }
	state := "OPEN"
	if closed {
		state = "CLOSED"
	}
	return "LedgerMetadata{formatVersion=3, ensembleSize=1, writeQuorumSize=1, ackQuorumSize=1, state=" + state +
		", digestType=CRC32C, password=OMITTED, ensembles={0=[127.0.0.1:3181]}, customMetadata={component=" +
		b64("managed-ledger") + ", pulsar/managed-ledger=" + b64(ns+"/persistent/"+local) +
		", application=" + b64("pulsar") + "}}"
}

// internalStatsDoc renders a topic's internal stats as Pulsar's JSON.
func internalStatsDoc(topic string, st broker.TopicInternalStats, withMetadata bool) internalStatsJSON {
	state := "LedgerOpened"
	if st.Terminated {
		state = "Terminated"
	}
	current := ledgerJSON{LedgerID: st.Ledger}
	if withMetadata {
		// Pulsar reports the open ledger under-replicated when it reads
		// its metadata.
		current.Metadata, current.UnderReplicated = ledgerMetadata(topic, st.Terminated), true
	}
	out := internalStatsJSON{
		EntriesAddedCounter: st.EntriesAdded, NumberOfEntries: st.Entries, TotalSize: st.Size,
		CurrentLedgerEntries: st.Entries, CurrentLedgerSize: st.Size,
		LastLedgerCreatedTimestamp: javaTime(st.LedgerCreated),
		LastConfirmedEntry:         ledgerPos(st.Ledger, st.LastEntry), State: state,
		Ledgers: []ledgerJSON{current}, Cursors: map[string]cursorJSON{}, SchemaLedgers: []ledgerJSON{},
		CompactedLedger: ledgerJSON{LedgerID: -1, Entries: -1, Size: -1},
	}
	for name, c := range st.Cursors {
		cj := cursorJSON{
			MarkDeletePosition: ledgerPos(st.Ledger, c.MarkDelete), ReadPosition: ledgerPos(st.Ledger, c.ReadPosition),
			WaitingReadOp: c.WaitingRead, MessagesConsumedCounter: c.Consumed,
			CursorLedger: -1, CursorLedgerLastEntry: -1,
			IndividuallyDeletedMessages: deletedRanges(st.Ledger, c.Acked),
			LastLedgerSwitchTimestamp:   javaTime(c.Created),
			// A durable cursor has no ledger until its first
			// acknowledgement; a non-durable one is open without one.
			State: "NoLedger", Active: c.Active,
			NumberOfEntriesSinceFirstNotAckedMessage: c.ReadPosition - c.MarkDelete,
			TotalNonContiguousDeletedMessagesRange:   len(c.Acked),
			SubscriptionHavePendingRead:              c.WaitingRead, Properties: map[string]string{},
		}
		if c.Ledger > 0 {
			// pulsarsim keeps no cursor ledger; Pulsar's holds the cursor's
			// first position and then its first mark-delete.
			cj.CursorLedger, cj.CursorLedgerLastEntry = c.Ledger, 1
		}
		if c.Ledger > 0 || !c.Durable {
			cj.State = "Open"
		}
		if c.WaitingRead {
			out.WaitingCursorsCount++
		}
		out.Cursors[name] = cj
	}
	return out
}

// nonPersistentStatsDoc renders a non-persistent topic's internal stats.
func nonPersistentStatsDoc(st broker.TopicInternalStats) nonPersistentStatsJSON {
	out := nonPersistentStatsJSON{EntriesAddedCounter: st.EntriesAdded, Cursors: map[string]nonPersistentCursorJSON{}}
	for name := range st.Cursors {
		out.Cursors[name] = nonPersistentCursorJSON{}
	}
	return out
}

// topicInternalStats answers a topic's (or a partition's) internal stats;
// metadata=true adds the ledger's BookKeeper metadata.
func (s *Server) topicInternalStats(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if status(err) == http.StatusPreconditionFailed {
		err = errStatus(http.StatusPreconditionFailed, "Topic name is not valid")
	}
	var st broker.TopicInternalStats
	if err == nil {
		st, err = s.b.TopicInternalStats(topic)
	}
	if err != nil {
		reply(w, nil, s.internalStatsError(r, topic, err))
		return
	}
	if r.PathValue("domain") == "non-persistent" {
		reply(w, nonPersistentStatsDoc(st), nil)
		return
	}
	reply(w, internalStatsDoc(topic, st, trueParam(r, "metadata")), nil)
}

// internalStatsError is Pulsar's answer when a topic's internal stats fail
// with err: a non-persistent topic that does not exist is not named, and a
// partition of a topic without partitions is refused as such.
func (s *Server) internalStatsError(r *http.Request, topic string, err error) error {
	if status(err) != http.StatusNotFound || topic == "" {
		return err
	}
	if r.PathValue("domain") == "non-persistent" {
		return errStatus(http.StatusNotFound, "Topic not found")
	}
	tn, _ := broker.ParseTopicName(topic)
	if tn.Partition < 0 {
		return err
	}
	if n, perr := s.b.PartitionedMetadata(tn.Base().String()); perr != nil || n == 0 {
		return errStatus(http.StatusNotFound, "Partitioned Topic not found: "+topic+" has zero partitions")
	}
	return err
}

// partitionedInternalStats answers the internal stats of each partition of
// a partitioned topic.
func (s *Server) partitionedInternalStats(w http.ResponseWriter, r *http.Request) {
	_, tn, n, err := s.partitionedTopic(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	out := partitionedInternalStatsJSON{Metadata: partitionsMetadataJSON{Partitions: n}, Partitions: map[string]any{}}
	for i := 0; i < n; i++ {
		pn := tn.PartitionName(i).String()
		st, err := s.b.TopicInternalStats(pn)
		switch {
		case err != nil:
			continue
		case tn.Persistent:
			out.Partitions[pn] = internalStatsDoc(pn, st, trueParam(r, "metadata"))
		default:
			out.Partitions[pn] = nonPersistentStatsDoc(st)
		}
	}
	reply(w, out, nil)
}

// trueParam reads a boolean query parameter as Java's Boolean.valueOf: set
// by "true" in any case, and by nothing else.
func trueParam(r *http.Request, name string) bool {
	return strings.EqualFold(r.URL.Query().Get(name), "true")
}
