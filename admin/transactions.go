package admin

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Pulsar's transaction admin API (/admin/v3/transactions): a transaction's
// metadata while its coordinator holds it, and what it is on one topic or
// subscription. Without the coordinator every route answers 503.

func (s *Server) routeTransactions() {
	m := s.mux
	const base = "/admin/v3/transactions"
	m.HandleFunc("GET "+base+"/transactionMetadata/{most}/{least}", s.transactionMetadata)
	m.HandleFunc("GET "+base+"/transactionInBufferStats/{tenant}/{ns}/{topic}/{most}/{least}", s.transactionInBuffer)
	m.HandleFunc("GET "+base+"/transactionInPendingAckStats/{tenant}/{ns}/{topic}/{sub}/{most}/{least}",
		s.transactionInPendingAck)
}

// txnMetadata is Pulsar's TransactionMetadata JSON.
type txnMetadata struct {
	TxnID              string                                `json:"txnId"`
	Status             string                                `json:"status"`
	OpenTimestamp      int64                                 `json:"openTimestamp"`
	TimeoutAt          int64                                 `json:"timeoutAt"`
	Owner              string                                `json:"owner,omitempty"`
	ProducedPartitions map[string]txnInBuffer                `json:"producedPartitions"`
	AckedPartitions    map[string]map[string]txnInPendingAck `json:"ackedPartitions"`
}

// txnInBuffer is Pulsar's TransactionInBufferStats JSON.
type txnInBuffer struct {
	StartPosition string `json:"startPosition,omitempty"`
	Aborted       bool   `json:"aborted"`
}

// txnInPendingAck is Pulsar's TransactionInPendingAckStats JSON.
type txnInPendingAck struct {
	CumulativeAckPosition string `json:"cumulativeAckPosition,omitempty"`
}

// txnEnabled answers 503 as Pulsar does when the coordinator is off.
func (s *Server) txnEnabled(w http.ResponseWriter) bool {
	if !s.b.TransactionsEnabled() {
		httpError(w, http.StatusServiceUnavailable, "This Broker is not configured with transactionCoordinatorEnabled=true.")
		return false
	}
	return true
}

// txnIDOf reads the {most} and {least} path values.
func txnIDOf(r *http.Request) (broker.TxnID, error) {
	most, err := strconv.ParseUint(r.PathValue("most"), 10, 64)
	if err != nil {
		return broker.TxnID{}, errStatus(http.StatusBadRequest, "Invalid transaction id: "+r.PathValue("most"))
	}
	least, err := strconv.ParseUint(r.PathValue("least"), 10, 64)
	if err != nil {
		return broker.TxnID{}, errStatus(http.StatusBadRequest, "Invalid transaction id: "+r.PathValue("least"))
	}
	return broker.TxnID{Most: most, Least: least}, nil
}

func position(id *broker.MessageID) string {
	if id == nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", id.Ledger, id.Entry)
}

func (s *Server) transactionMetadata(w http.ResponseWriter, r *http.Request) {
	if !s.txnEnabled(w) {
		return
	}
	id, err := txnIDOf(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	t, err := s.b.OpenTransaction(id)
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	md := txnMetadata{TxnID: id.String(), Status: string(t.Status), OpenTimestamp: t.Opened.UnixMilli(),
		TimeoutAt: t.Timeout.Milliseconds(), Owner: t.Owner,
		ProducedPartitions: map[string]txnInBuffer{}, AckedPartitions: map[string]map[string]txnInPendingAck{}}
	for _, p := range t.Partitions {
		start, aborted, _ := s.b.TransactionOnTopic(p, id)
		md.ProducedPartitions[p] = txnInBuffer{StartPosition: position(start), Aborted: aborted}
	}
	for _, sub := range t.Subscriptions {
		cum, _ := s.b.TransactionOnSubscription(sub.Topic, sub.Subscription, id)
		if md.AckedPartitions[sub.Topic] == nil {
			md.AckedPartitions[sub.Topic] = map[string]txnInPendingAck{}
		}
		md.AckedPartitions[sub.Topic][sub.Subscription] = txnInPendingAck{CumulativeAckPosition: position(cum)}
	}
	reply(w, md, nil)
}

func (s *Server) transactionInBuffer(w http.ResponseWriter, r *http.Request) {
	if !s.txnEnabled(w) {
		return
	}
	id, err := txnIDOf(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	topic := "persistent://" + r.PathValue("tenant") + "/" + r.PathValue("ns") + "/" + r.PathValue("topic")
	start, aborted, err := s.b.TransactionOnTopic(topic, id)
	reply(w, txnInBuffer{StartPosition: position(start), Aborted: aborted}, err)
}

func (s *Server) transactionInPendingAck(w http.ResponseWriter, r *http.Request) {
	if !s.txnEnabled(w) {
		return
	}
	id, err := txnIDOf(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	topic := "persistent://" + r.PathValue("tenant") + "/" + r.PathValue("ns") + "/" + r.PathValue("topic")
	cum, err := s.b.TransactionOnSubscription(topic, r.PathValue("sub"), id)
	reply(w, txnInPendingAck{CumulativeAckPosition: position(cum)}, err)
}
