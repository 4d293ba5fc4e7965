package admin

import (
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Policy endpoints. Each policy of broker.Policies that the REST API serves
// is one policyEndpoint: GET, POST and DELETE at namespace level
// (/admin/v2/namespaces/{tenant}/{ns}/<path>) and at topic level
// (/admin/v2/{domain}/{tenant}/{ns}/{topic}/<path>, where GET takes
// ?applied=true for the value in force). Serving a new policy is adding an
// entry to policyEndpoints.

// policyEndpoint is one policy's REST endpoints.
type policyEndpoint struct {
	// path is the endpoint's last path segment, e.g. "messageTTL".
	path string
	// jsonName is the policy's name in a namespace's policies document.
	jsonName string
	// value returns the policy's value in p and whether it is set there.
	value func(p broker.Policies) (v any, set bool)
	// unset is what a GET answers when the policy is unset.
	unset any
	// read reads a POST's value at namespace or topic level and returns
	// the change that sets it; a value out of range is an error here, with
	// the status and reason Pulsar gives at that level.
	read func(r *http.Request, topicLevel bool) (func(*broker.Policies), error)
	// remove unsets the policy.
	remove func(*broker.Policies)
}

// policyEndpoints are the policies the REST API serves.
var policyEndpoints = []policyEndpoint{
	{
		path: "messageTTL", jsonName: "message_ttl_in_seconds", unset: 0,
		value: func(p broker.Policies) (any, bool) {
			if p.MessageTTLSeconds == nil {
				return nil, false
			}
			return *p.MessageTTLSeconds, true
		},
		read:   readMessageTTL,
		remove: func(p *broker.Policies) { p.MessageTTLSeconds = nil },
	},
}

// readMessageTTL reads a message TTL in seconds: the body of a namespace
// POST, the messageTTL parameter of a topic POST.
func readMessageTTL(r *http.Request, topicLevel bool) (func(*broker.Policies), error) {
	var secs int
	if topicLevel {
		q := r.URL.Query()
		if !q.Has("messageTTL") {
			// Pulsar takes a POST without a value as removing the policy.
			return func(p *broker.Policies) { p.MessageTTLSeconds = nil }, nil
		}
		n, err := strconv.Atoi(q.Get("messageTTL"))
		if err != nil {
			// Jersey answers a parameter it cannot convert with 404.
			return nil, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
		}
		if n < 0 {
			return nil, errStatus(http.StatusPreconditionFailed, "Invalid value for message TTL")
		}
		secs = n
	} else {
		n, err := readInt(r)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, errStatus(http.StatusPreconditionFailed, "Invalid value for message TTL, message TTL must >= 0")
		}
		secs = n
	}
	return func(p *broker.Policies) {
		p.MessageTTLSeconds = &secs
		if secs == 0 {
			// pulsarsim, unlike Pulsar, takes a TTL of 0 as removing the
			// policy (Pulsar keeps an explicit 0, which overrides the
			// namespace's TTL).
			p.MessageTTLSeconds = nil
		}
	}, nil
}

func (s *Server) routePolicies() {
	for _, p := range policyEndpoints {
		ns := "/admin/v2/namespaces/{tenant}/{ns}/" + p.path
		topic := "/admin/v2/{domain}/{tenant}/{ns}/{topic}/" + p.path
		s.mux.HandleFunc("GET "+ns, s.getNamespacePolicy(p))
		s.mux.HandleFunc("POST "+ns, s.setNamespacePolicy(p))
		s.mux.HandleFunc("DELETE "+ns, s.removeNamespacePolicy(p))
		s.mux.HandleFunc("GET "+topic, s.getTopicPolicy(p))
		s.mux.HandleFunc("POST "+topic, s.setTopicPolicy(p))
		s.mux.HandleFunc("DELETE "+topic, s.removeTopicPolicy(p))
	}
}

// answerPolicy answers p's value in pol, or its unset value.
func answerPolicy(w http.ResponseWriter, p policyEndpoint, pol broker.Policies) {
	v, set := p.value(pol)
	if !set {
		v = p.unset
	}
	reply(w, v, nil)
}

func (s *Server) getNamespacePolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		var pol broker.Policies
		if err == nil {
			pol, err = s.b.NamespacePolicies(ns)
		}
		if err != nil {
			reply(w, nil, err)
			return
		}
		answerPolicy(w, p, pol)
	}
}

func (s *Server) setNamespacePolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		var change func(*broker.Policies)
		if err == nil {
			change, err = p.read(r, false)
		}
		if err == nil {
			err = s.b.UpdateNamespacePolicies(ns, change)
		}
		reply(w, nil, err)
	}
}

func (s *Server) removeNamespacePolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		if err == nil {
			err = s.b.UpdateNamespacePolicies(ns, p.remove)
		}
		reply(w, nil, err)
	}
}

func (s *Server) getTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic, err := topicFromPath(r)
		var pol broker.Policies
		if err == nil && boolParam(r, "applied") {
			pol, err = s.b.AppliedPolicies(topic)
		} else if err == nil {
			pol, err = s.b.TopicPolicies(topic)
		}
		if err != nil {
			reply(w, nil, err)
			return
		}
		answerPolicy(w, p, pol)
	}
}

// setTopicPolicy sets a topic's policy. As in Pulsar, a missing topic is
// reported before a bad value.
func (s *Server) setTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic, err := topicFromPath(r)
		if err == nil {
			_, err = s.b.TopicPolicies(topic)
		}
		var change func(*broker.Policies)
		if err == nil {
			change, err = p.read(r, true)
		}
		if err == nil {
			err = s.b.UpdateTopicPolicies(topic, change)
		}
		reply(w, nil, err)
	}
}

func (s *Server) removeTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic, err := topicFromPath(r)
		if err == nil {
			err = s.b.UpdateTopicPolicies(topic, p.remove)
		}
		reply(w, nil, err)
	}
}
