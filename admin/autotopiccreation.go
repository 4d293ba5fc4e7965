package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A namespace's autoTopicCreation policy (Pulsar's
// AutoTopicCreationOverride): GET, POST and DELETE
// /admin/v2/namespaces/{tenant}/{ns}/autoTopicCreation, and
// autoTopicCreationOverride in the namespace's policies document. As in
// Pulsar 4.0.8: an unset policy reads as an empty body; a POST without a
// body removes it; a policy validateOverride refuses is a 412 "Invalid
// configuration for autoTopicCreationOverride. the detail is <why>", a
// count over maxNumPartitionsPerPartitionedTopic a 406.

// autoTopicCreationJSON is the policy as JSON.
type autoTopicCreationJSON struct {
	AllowAutoTopicCreation bool    `json:"allowAutoTopicCreation"`
	TopicType              *string `json:"topicType"`
	DefaultNumPartitions   *int    `json:"defaultNumPartitions,omitempty"`
}

func (s *Server) routeAutoTopicCreation() {
	const path = "/admin/v2/namespaces/{tenant}/{ns}/autoTopicCreation"
	s.mux.HandleFunc("GET "+path, s.getAutoTopicCreation)
	s.mux.HandleFunc("POST "+path, s.setAutoTopicCreation)
	s.mux.HandleFunc("DELETE "+path, s.removeAutoTopicCreation)
}

// autoTopicCreationOut is the policy as JSON; Pulsar writes no topic type
// when none was given.
func autoTopicCreationOut(a broker.AutoTopicCreation) autoTopicCreationJSON {
	out := autoTopicCreationJSON{AllowAutoTopicCreation: a.Allow}
	if a.Type != "" {
		t := string(a.Type)
		out.TopicType = &t
	}
	if a.DefaultNumPartitions != 0 {
		out.DefaultNumPartitions = &a.DefaultNumPartitions
	}
	return out
}

// decodeAutoTopicCreation reads a policy and checks it as Pulsar does.
func (s *Server) decodeAutoTopicCreation(body []byte) (broker.AutoTopicCreation, error) {
	var j autoTopicCreationJSON
	if err := json.Unmarshal(body, &j); err != nil {
		return broker.AutoTopicCreation{}, badBody(body, err)
	}
	a := broker.AutoTopicCreation{Allow: j.AllowAutoTopicCreation}
	if j.TopicType != nil {
		a.Type = broker.TopicType(*j.TopicType)
	}
	checked := a
	if j.DefaultNumPartitions != nil {
		a.DefaultNumPartitions = *j.DefaultNumPartitions
		checked.DefaultNumPartitions = a.DefaultNumPartitions
		if checked.DefaultNumPartitions == 0 {
			// Given as 0: refused as "less than 1", not as missing.
			checked.DefaultNumPartitions = -1
		}
	}
	err := checked.Validate(s.b.MaxPartitionsPerTopic())
	if errors.Is(err, broker.ErrInvalidPolicy) {
		err = errStatus(http.StatusPreconditionFailed, "Invalid configuration for autoTopicCreationOverride. the detail is "+err.Error())
	}
	return a, err
}

func (s *Server) getAutoTopicCreation(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	if pol.AutoTopicCreation == nil {
		// Pulsar answers a null: 200 without a body.
		w.WriteHeader(http.StatusOK)
		return
	}
	reply(w, autoTopicCreationOut(*pol.AutoTopicCreation), nil)
}

func (s *Server) setAutoTopicCreation(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var body []byte
	if err == nil {
		body, err = readBody(r, 1<<16)
	}
	var set *broker.AutoTopicCreation
	if t := strings.TrimSpace(string(body)); err == nil && t != "" && t != "null" {
		var a broker.AutoTopicCreation
		a, err = s.decodeAutoTopicCreation(body)
		set = &a
	}
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.AutoTopicCreation = set })
	}
	reply(w, nil, err)
}

func (s *Server) removeAutoTopicCreation(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.AutoTopicCreation = nil })
	}
	reply(w, nil, err)
}

// creationAutoTopicCreationChange reads autoTopicCreationOverride of a
// namespace's creation body.
func (s *Server) creationAutoTopicCreationChange(value func(string) ([]byte, bool)) (func(*broker.Policies), error) {
	v, ok := value("autoTopicCreationOverride")
	if !ok {
		return nil, nil
	}
	a, err := s.decodeAutoTopicCreation(v)
	return func(p *broker.Policies) { p.AutoTopicCreation = &a }, err
}
