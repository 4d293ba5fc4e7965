package admin

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Backlog quota endpoints: a namespace or a topic holds one quota per type,
// destination_storage (the default type) and message_age, set and removed
// one type at a time (POST and DELETE .../backlogQuota?backlogQuotaType=T)
// and read as a map by type (GET .../backlogQuotaMap). Answers as Pulsar
// 4.0.8 gives them.

// The quota types, as Pulsar names them.
const (
	quotaSize = "destination_storage"
	quotaAge  = "message_age"
)

func (s *Server) routeBacklogQuotas() {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/"
	s.mux.HandleFunc("GET "+ns+"backlogQuotaMap", s.namespaceBacklogQuotas)
	s.mux.HandleFunc("POST "+ns+"backlogQuota", s.setNamespaceBacklogQuota)
	s.mux.HandleFunc("DELETE "+ns+"backlogQuota", s.removeNamespaceBacklogQuota)
	s.mux.HandleFunc("GET "+topic+"backlogQuotaMap", s.topicBacklogQuotas)
	s.mux.HandleFunc("POST "+topic+"backlogQuota", s.setTopicBacklogQuota)
	s.mux.HandleFunc("DELETE "+topic+"backlogQuota", s.removeTopicBacklogQuota)
	s.mux.HandleFunc("GET "+backlogQuotaCheckPath, s.backlogQuotaCheck)
}

// backlogQuotaCheckPath triggers the broker's periodic backlog quota check
// at once (a super-user's operation).
const backlogQuotaCheckPath = "/admin/v2/brokers/backlog-quota-check"

func (s *Server) backlogQuotaCheck(w http.ResponseWriter, _ *http.Request) {
	s.b.RunBacklogQuotaCheck()
	w.WriteHeader(http.StatusNoContent)
}

// quotaField returns the field of the request's backlogQuotaType (default
// destination_storage); an unknown type is a 404, as Jersey answers a
// parameter it cannot convert.
func quotaField(r *http.Request) (func(*broker.Policies) **broker.BacklogQuota, string, error) {
	switch t := r.URL.Query().Get("backlogQuotaType"); t {
	case "", quotaSize:
		return func(p *broker.Policies) **broker.BacklogQuota { return &p.BacklogQuota }, quotaSize, nil
	case quotaAge:
		return func(p *broker.Policies) **broker.BacklogQuota { return &p.MessageAgeBacklogQuota }, quotaAge, nil
	}
	return nil, "", errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
}

// quotaMap is the map a GET answers: the quotas p sets, by type.
func quotaMap(p broker.Policies) map[string]backlogQuotaJSON {
	m := map[string]backlogQuotaJSON{}
	if q := p.BacklogQuota; q != nil {
		m[quotaSize] = backlogQuotaOut(*q)
	}
	if q := p.MessageAgeBacklogQuota; q != nil {
		m[quotaAge] = backlogQuotaOut(*q)
	}
	return m
}

// readQuota reads a quota body; nil when the body is empty.
func readQuota(r *http.Request) (*broker.BacklogQuota, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, errStatus(http.StatusBadRequest, err.Error())
	}
	if t := strings.TrimSpace(string(body)); t == "" || t == "null" {
		return nil, nil
	}
	q, err := decodeBacklogQuota(body)
	return &q, err
}

// validQuota refuses a quota without a policy Pulsar knows.
func validQuota(q *broker.BacklogQuota, ns string) error {
	if err := broker.ValidatePolicies(broker.Policies{BacklogQuota: q}); err != nil {
		return errStatus(http.StatusBadRequest, fmt.Sprintf("Set namespace[%s] backlog quota failed because the "+
			"data validation failed. %s", ns, err))
	}
	return nil
}

func (s *Server) namespaceBacklogQuotas(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, quotaMap(pol), nil)
}

// setNamespaceBacklogQuota sets one of a namespace's quotas. With a
// retention policy set, the size quota must stay under it (the age quota
// is checked as no quota, as Pulsar does).
func (s *Server) setNamespaceBacklogQuota(w http.ResponseWriter, r *http.Request) {
	field, typ, err := quotaField(r)
	var ns string
	if err == nil {
		ns, err = namespaceFromPath(r)
	}
	var q *broker.BacklogQuota
	if err == nil {
		q, err = readQuota(r)
	}
	if err == nil && q == nil {
		// Pulsar fails on a missing body with an unexpected exception.
		err = errStatus(http.StatusInternalServerError, "Cannot set a backlog quota without a body")
	}
	if err == nil {
		err = validQuota(q, ns)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	var refusal error
	err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) {
		refusal = nil
		checkedQuota := q
		if typ != quotaSize {
			checkedQuota = nil
		}
		if p.Retention != nil && !quotaWithinRetention(checkedQuota, p.Retention) {
			refusal = errStatus(http.StatusPreconditionFailed, "Backlog Quota exceeds configured retention quota "+
				"for namespace. Please increase retention quota and retry")
			return
		}
		*field(p) = q
	})
	if err == nil {
		err = refusal
	}
	// Pulsar's update of a missing namespace's quota fails without a reason.
	reply(w, nil, namespaceMissing(err, noReason))
}

func (s *Server) removeNamespaceBacklogQuota(w http.ResponseWriter, r *http.Request) {
	field, _, err := quotaField(r)
	var ns string
	if err == nil {
		ns, err = namespaceFromPath(r)
	}
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { *field(p) = nil })
	}
	reply(w, nil, namespaceMissing(err, noReason))
}

// topicBacklogQuotas answers a topic's own quotas; with ?applied, when it
// sets none, its namespace's, and when that sets none either, the broker's
// of both types (Pulsar falls back for the whole map, not type by type).
func (s *Server) topicBacklogQuotas(w http.ResponseWriter, r *http.Request) {
	topic, err := s.policyTopic(r)
	var own broker.Policies
	if err == nil {
		own, err = s.b.TopicPolicies(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	m := quotaMap(own)
	if len(m) == 0 && boolParam(r, "applied") {
		tn, _ := broker.ParseTopicName(topic)
		ns, err := s.b.NamespacePolicies(tn.NamespaceName())
		if err != nil {
			reply(w, nil, err)
			return
		}
		if m = quotaMap(ns); len(m) == 0 {
			m = quotaMap(s.b.BrokerPolicies())
		}
	}
	reply(w, m, nil)
}

// setTopicBacklogQuota sets one of a topic's quotas; a POST without a body
// removes it. The quota must stay under the retention in force at topic
// level (the topic's, else its namespace's).
func (s *Server) setTopicBacklogQuota(w http.ResponseWriter, r *http.Request) {
	field, _, err := quotaField(r)
	var q *broker.BacklogQuota
	if err == nil {
		q, err = readQuota(r)
	}
	var topic string
	if err == nil {
		topic, err = s.policyTopic(r)
	}
	var tn broker.TopicName
	if err == nil {
		tn, err = broker.ParseTopicName(topic)
	}
	if err == nil && q != nil {
		err = validQuota(q, tn.NamespaceName())
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	check := func(own, ns broker.Policies, _ bool) error {
		if q != nil && !quotaWithinRetention(q, or(own.Retention, ns.Retention)) {
			return errStatus(http.StatusPreconditionFailed, "Backlog Quota exceeds configured retention quota for "+
				"topic. Please increase retention quota and retry")
		}
		return nil
	}
	reply(w, nil, s.updateTopicPolicy(topic, func(p *broker.Policies) { *field(p) = q }, check))
}

func (s *Server) removeTopicBacklogQuota(w http.ResponseWriter, r *http.Request) {
	field, _, err := quotaField(r)
	var topic string
	if err == nil {
		topic, err = s.policyTopic(r)
	}
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { *field(p) = nil })
	}
	reply(w, nil, err)
}
