package admin

import (
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// One subscription's dispatch rate: Pulsar's per-subscription topic policy
// at /admin/v2/{domain}/{tenant}/{ns}/{topic}/{subscription}/dispatchRate,
// kept in the topic's Policies.SubscriptionDispatchRates. The answers are
// those of Pulsar 4.0.8: an unset rate reads as an empty 200, and with
// ?applied=true as the topic's subscription dispatch rate in force; a POST
// without a body, or of a rate that limits neither messages nor bytes, is
// answered 204 and changes nothing; a body that does not parse is a 400,
// and the topic is checked as for the other topic policies (policyTopic).
// The subscription need not exist.
//
// Go's ServeMux cannot hold .../{topic}/{subscription}/dispatchRate beside
// the subscription routes .../{topic}/subscription/{sub}: each has a
// literal where the other has a wildcard, so neither is the more specific.
// One route takes every such path instead (subscriptionPolicy), and the
// subscription routes, more specific than it, keep theirs.

func (s *Server) routeSubscriptionPolicies() {
	const path = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/{sub}/{policy}"
	s.mux.HandleFunc("GET "+path, s.subscriptionPolicy(s.getSubscriptionDispatchRate))
	s.mux.HandleFunc("POST "+path, s.subscriptionPolicy(s.setSubscriptionDispatchRate))
	s.mux.HandleFunc("DELETE "+path, s.subscriptionPolicy(s.removeSubscriptionDispatchRate))
}

// subscriptionPolicy serves h for the paths that end in /dispatchRate, with
// the topic checked as policyTopic does. Other paths are not routes: a
// method the subscription routes do not take is a 405, as the mux would
// answer it, anything else a 404.
func (s *Server) subscriptionPolicy(h func(w http.ResponseWriter, r *http.Request, sub string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("policy") == "dispatchRate":
		case r.PathValue("sub") == "subscription":
			w.Header().Set("Allow", "PUT, DELETE")
			httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		default:
			httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
			return
		}
		h(w, r, r.PathValue("sub"))
	}
}

func (s *Server) getSubscriptionDispatchRate(w http.ResponseWriter, r *http.Request, sub string) {
	topic, err := s.policyTopic(r)
	var pol broker.Policies
	applied := boolParam(r, "applied")
	if err == nil {
		pol, err = s.policiesOf(topic, applied)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	rate, ok := pol.SubscriptionDispatchRates[sub]
	switch {
	case ok:
		reply(w, dispatchRateOut(rate), nil)
	case applied:
		reply(w, dispatchRateOut(*pol.SubscriptionDispatchRate), nil)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// setSubscriptionDispatchRate sets a subscription's rate. As for the other
// topic policies, a body that does not parse is reported before the topic.
func (s *Server) setSubscriptionDispatchRate(w http.ResponseWriter, r *http.Request, sub string) {
	body, err := readBody(r, 1<<20)
	var rate broker.DispatchRate
	empty := true
	if t := strings.TrimSpace(string(body)); err == nil && t != "" && t != "null" {
		rate, err = decodeDispatchRate(body)
		empty = false
	}
	var topic string
	if err == nil {
		topic, err = s.policyTopic(r)
	}
	if err == nil && !empty && (rate.Messages > 0 || rate.Bytes > 0) {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) {
			if p.SubscriptionDispatchRates == nil {
				p.SubscriptionDispatchRates = map[string]broker.DispatchRate{}
			}
			p.SubscriptionDispatchRates[sub] = rate
		})
	}
	reply(w, nil, err)
}

func (s *Server) removeSubscriptionDispatchRate(w http.ResponseWriter, r *http.Request, sub string) {
	topic, err := s.policyTopic(r)
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { delete(p.SubscriptionDispatchRates, sub) })
	}
	reply(w, nil, err)
}
