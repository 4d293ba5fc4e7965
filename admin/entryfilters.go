package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Entry filters and the deletion of a topic's policies, with Pulsar
// 4.0.8's answers. A standalone configures no entry filter
// (entryFiltersDirectory is empty), so a namespace or topic has none: a GET
// answers an empty body (with ?applied=true at topic level, the broker's
// empty list of names), setting one is refused with 400 "Entry filter 'X'
// not found", and removing them succeeds.

func (s *Server) routeEntryFilters() {
	m := s.mux
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/entryFilters"
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/entryFilters"
	m.HandleFunc("GET "+ns, s.namespaceEntryFilters)
	m.HandleFunc("POST "+ns, s.setNamespaceEntryFilters)
	m.HandleFunc("DELETE "+ns, s.namespaceEntryFilters)
	m.HandleFunc("GET "+topic, s.topicEntryFilters)
	m.HandleFunc("POST "+topic, s.setTopicEntryFilters)
	m.HandleFunc("DELETE "+topic, s.topicEntryFilters)
	m.HandleFunc("DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/policies", s.deleteTopicPolicies)
}

// entryFilterRefusal reads a body {"entryFilterNames": "a,b"} and refuses
// it: no filter is configured.
func entryFilterRefusal(r *http.Request) error {
	var body struct {
		Names string `json:"entryFilterNames"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	return errStatus(http.StatusBadRequest, "Entry filter '"+body.Names+"' not found")
}

// namespaceEntryFilters answers a GET or DELETE: nothing is set.
func (s *Server) namespaceEntryFilters(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.existingNamespace(w, r); !ok {
		return
	}
	status := http.StatusOK
	if r.Method == http.MethodDelete {
		status = http.StatusNoContent
	}
	w.WriteHeader(status)
}

func (s *Server) setNamespaceEntryFilters(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.existingNamespace(w, r); !ok {
		return
	}
	reply(w, nil, entryFilterRefusal(r))
}

// topicEntryFilters answers a GET or DELETE of a topic's entry filters.
func (s *Server) topicEntryFilters(w http.ResponseWriter, r *http.Request) {
	if _, err := s.policyTopic(r); err != nil {
		reply(w, nil, err)
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case boolParam(r, "applied"):
		reply(w, json.RawMessage(`{"entryFilterNames":""}`), nil)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) setTopicEntryFilters(w http.ResponseWriter, r *http.Request) {
	_, err := s.policyTopic(r)
	if err == nil {
		err = entryFilterRefusal(r)
	}
	reply(w, nil, err)
}

// deleteTopicPolicies removes every policy set on the topic (pulsar-admin
// topicPolicies delete); Pulsar answers 204 for a topic that does not
// exist too.
func (s *Server) deleteTopicPolicies(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { *p = broker.Policies{} })
	}
	if errors.Is(err, broker.ErrTopicNotFound) {
		err = nil
	}
	reply(w, nil, err)
}
