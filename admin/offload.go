package admin

import (
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A topic's offload (topics offload, offload-status) and its managed
// ledger's metadata (topics info-internal). A standalone without tiered
// storage has no offloader: as in Pulsar 4.0.8, an offload request is
// accepted, offloads nothing, and its status reads as the error of the
// null offloader from then on.

// offloadError is the status error of an offload without an offloader.
const offloadError = "org.apache.bookkeeper.mledger.ManagedLedgerException: [NullLedgerOffloader] does not support offload"

func (s *Server) routeTopicOffload() {
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	s.mux.HandleFunc("PUT "+topic+"/offload", s.offload)
	s.mux.HandleFunc("GET "+topic+"/offload", s.offloadStatus)
	s.mux.HandleFunc("GET "+topic+"/internal-info", s.internalInfo)
}

// offloadStatusJSON is OffloadProcessStatus.
type offloadStatusJSON struct {
	Status                  string        `json:"status"`
	LastError               string        `json:"lastError"`
	FirstUnoffloadedMessage messageIDJSON `json:"firstUnoffloadedMessage"`
}

// messageIDJSON is a MessageIdImpl as the admin API writes it.
type messageIDJSON struct {
	LedgerID       int64 `json:"ledgerId"`
	EntryID        int64 `json:"entryId"`
	PartitionIndex int   `json:"partitionIndex"`
	BatchSize      int   `json:"batchSize"`
	BatchIndex     int   `json:"batchIndex"`
}

// offload answers a request to offload the topic up to a message id: the
// id (the body) is required, then the topic must exist.
func (s *Server) offload(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var body []byte
	if err == nil {
		body, err = readBody(r, 1<<16)
	}
	if err == nil && strings.TrimSpace(string(body)) == "" {
		err = errStatus(http.StatusBadRequest, "messageId is null")
	}
	if err == nil {
		var id struct {
			LedgerID flexInt `json:"ledgerId"`
			EntryID  flexInt `json:"entryId"`
		}
		err = decodeBody(body, &id)
	}
	if err == nil {
		_, err = s.b.TopicInternalStats(topic)
	}
	if err == nil {
		s.localMu.Lock()
		if s.offloaded == nil {
			s.offloaded = map[string]bool{}
		}
		s.offloaded[topic] = true
		s.localMu.Unlock()
	}
	reply(w, nil, err)
}

func (s *Server) offloadStatus(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		_, err = s.b.TopicInternalStats(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	st := offloadStatusJSON{Status: "NOT_RUN",
		FirstUnoffloadedMessage: messageIDJSON{LedgerID: -1, EntryID: -1, PartitionIndex: -1, BatchIndex: -1}}
	s.localMu.Lock()
	if s.offloaded[topic] {
		st.Status, st.LastError = "ERROR", offloadError
	}
	s.localMu.Unlock()
	reply(w, st, nil)
}

// managedLedgerInfoJSON is ManagedLedgerInfo as the admin API writes it.
type managedLedgerInfoJSON struct {
	Version          int                       `json:"version"`
	CreationDate     string                    `json:"creationDate"`
	ModificationDate string                    `json:"modificationDate"`
	Ledgers          []ledgerInfoJSON          `json:"ledgers"`
	Cursors          map[string]cursorInfoJSON `json:"cursors"`
}

type ledgerInfoJSON struct {
	LedgerID    int64 `json:"ledgerId"`
	Timestamp   int64 `json:"timestamp"`
	IsOffloaded bool  `json:"isOffloaded"`
}

type cursorInfoJSON struct {
	Version          int          `json:"version"`
	CreationDate     string       `json:"creationDate"`
	ModificationDate string       `json:"modificationDate"`
	CursorsLedgerID  int64        `json:"cursorsLedgerId"`
	MarkDelete       positionJSON `json:"markDelete"`
}

type positionJSON struct {
	LedgerID int64 `json:"ledgerId"`
	EntryID  int64 `json:"entryId"`
}

// internalInfo answers a persistent topic's managed ledger metadata: its
// ledger and its cursors' mark-delete positions. Pulsar fails (500) for a
// topic that does not exist and for a non-persistent one.
func (s *Server) internalInfo(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var tn broker.TopicName
	if err == nil {
		tn, err = broker.ParseTopicName(topic)
	}
	if err == nil && !s.b.NamespaceExists(tn.NamespaceName()) {
		err = errStatus(http.StatusNotFound, "Namespace not found")
	}
	var st broker.TopicInternalStats
	if err == nil && r.PathValue("domain") != "persistent" {
		err = errStatus(http.StatusInternalServerError, "Request failed.")
	}
	if err == nil {
		st, err = s.b.TopicInternalStats(topic)
		if status(err) == http.StatusNotFound {
			err = errStatus(http.StatusInternalServerError, "Request failed.")
		}
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	created := javaTime(st.LedgerCreated)
	out := managedLedgerInfoJSON{Version: 1, CreationDate: created, ModificationDate: created,
		Ledgers: []ledgerInfoJSON{{LedgerID: st.Ledger, Timestamp: st.LedgerCreated.UnixMilli()}},
		Cursors: map[string]cursorInfoJSON{}}
	for name, c := range st.Cursors {
		if !c.Durable {
			continue
		}
		ledger := int64(-1)
		if c.Ledger > 0 {
			ledger = c.Ledger
		}
		at := javaTime(c.Created)
		out.Cursors[name] = cursorInfoJSON{Version: 1, CreationDate: at, ModificationDate: at, CursorsLedgerID: ledger,
			MarkDelete: positionJSON{st.Ledger, c.MarkDelete}}
	}
	reply(w, out, nil)
}
