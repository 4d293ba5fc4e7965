package admin

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Policy endpoints. Each policy of broker.Policies that the REST API serves
// is one policyEndpoint: GET, POST and DELETE at namespace level
// (/admin/v2/namespaces/{tenant}/{ns}/<nsPath>) and at topic level
// (/admin/v2/{domain}/{tenant}/{ns}/{topic}/<topicPath>, where GET takes
// ?applied=true for the value in force where Pulsar offers it). Serving a
// new policy is adding an entry to policyEndpoints.
//
// The answers are those of Pulsar 4.0.8, checked against it: an unset policy
// reads as an empty body (status 200, or 204 for the topic policies Pulsar
// keeps as optional values); a POST without a body removes the policy,
// changes nothing, or is refused, as Pulsar does for that policy and level;
// a body that does not parse is a 400, a value out of range a 412 (a 400 for
// retention and backlog quotas), with Pulsar's reason. At topic level a
// missing topic (404) or a partition's name (412) is reported before a bad
// value, at namespace level after it.

// emptyBody is what a POST without a body does.
type emptyBody int

const (
	emptyRefused emptyBody = iota // 400 "The request entity cannot be empty."
	emptyRemoves                  // removes the policy
	emptyIgnored                  // changes nothing
	emptyDecoded                  // goes to decode, which answers it
)

// lateRefusal is a refusal of a body that Pulsar reports after it found
// the topic (at namespace level, at once): decode returns it.
type lateRefusal struct{ err error }

func (l *lateRefusal) Error() string { return l.err.Error() }

// late marks err as a lateRefusal.
func late(err error) error { return &lateRefusal{err} }

// policyCheck checks a policy set at namespace level (topicLevel false) or
// topic level: own are the policies of that level after the change, ns the
// namespace's own (the same as own at namespace level). It returns the
// refusal, or nil.
type policyCheck func(own, ns broker.Policies, topicLevel bool) error

// policyEndpoint is one policy's REST endpoints.
type policyEndpoint struct {
	// nsPath and topicPath are the endpoints' last path segments.
	nsPath, topicPath string
	// jsonName is the policy's name in a namespace's policies document.
	jsonName string
	// value returns the policy's value in p, as JSON, and whether it is set.
	value func(p broker.Policies) (v any, set bool)
	// decode reads a POST's (non-empty) body and returns the change that
	// sets the value.
	decode func(body []byte) (func(*broker.Policies), error)
	// topicParam, when set, reads a topic-level POST's value from this
	// query parameter instead of the body.
	topicParam string
	// check refuses values out of range, with Pulsar's status and reason.
	check policyCheck
	// remove unsets the policy.
	remove func(*broker.Policies)
	// nsEmpty and topicEmpty are what a POST without a body does.
	nsEmpty, topicEmpty emptyBody
	// topicUnset is the status of a topic-level GET of an unset policy;
	// applied is whether such a GET takes ?applied.
	topicUnset int
	applied    bool
	// nsMethod is the method that sets the namespace-level policy: POST
	// when empty (Pulsar sets a few with PUT).
	nsMethod string
	// nsSetStatus is the status of a namespace-level set that succeeds
	// (0: 204, no body).
	nsSetStatus int
	// nsNoDelete marks a policy Pulsar does not remove at namespace level
	// (there, DELETE names a bundle).
	nsNoDelete bool
	// unset, when set, is what a GET of an unset policy answers at
	// namespace level instead of an empty body (Pulsar's own default);
	// nsUnset is the status of that empty body (0: 200).
	unset   func() any
	nsUnset int
	// nsMissing, when set, is the reason of the 404 that setting or
	// removing the policy of a missing namespace answers, where Pulsar's
	// words are not "Namespace does not exist" (namespaceMissing).
	nsMissing *string
	// topicUnsetValue, when set, is what a topic-level GET of an unset
	// policy answers instead of an empty body.
	topicUnsetValue func() any
	// docWhenUnset puts unset's value in a namespace's policies document
	// when the policy is unset there, as Pulsar writes its default.
	docWhenUnset bool
	// limit, when set, refuses a topic-level value beyond what the broker
	// allows (checked after check).
	limit func(b *broker.Broker, own broker.Policies) error
}

// Pulsar's reasons for a missing namespace where a policy's update reads
// the namespace's policies document rather than checking the namespace
// first: "Namespace policies does not exist", or none at all.
var (
	noPolicies = new("Namespace policies does not exist")
	noReason   = new("")
)

// missingNamespace rewords err, when it reports a missing namespace, with
// p's reason for it.
func (p policyEndpoint) missingNamespace(err error) error { return namespaceMissing(err, p.nsMissing) }

// namespaceMissing words a missing namespace as Pulsar does for a policy
// whose missing-namespace reason is reason (nil: the broker's own).
func namespaceMissing(err error, reason *string) error {
	if reason != nil && errors.Is(err, broker.ErrNamespaceNotFound) {
		return errStatus(http.StatusNotFound, *reason)
	}
	return err
}

// intPolicy is a policy held in an int field: nsName and topicReason name
// it in the refusals of negative values at each level.
func intPolicy(field func(*broker.Policies) **int, nsName, topicReason string) policyEndpoint {
	return policyEndpoint{
		value: func(p broker.Policies) (any, bool) {
			v := *field(&p)
			if v == nil {
				return nil, false
			}
			return *v, true
		},
		decode: func(body []byte) (func(*broker.Policies), error) {
			n, err := decodeIntBody(body)
			return func(p *broker.Policies) { *field(p) = &n }, err
		},
		check: func(own, _ broker.Policies, topicLevel bool) error {
			if v := *field(&own); v != nil && *v < 0 {
				if topicLevel {
					return errStatus(http.StatusPreconditionFailed, topicReason)
				}
				return errStatus(http.StatusPreconditionFailed, nsName+" must be 0 or more")
			}
			return nil
		},
		remove:     func(p *broker.Policies) { *field(p) = nil },
		topicUnset: http.StatusOK,
		applied:    true,
	}
}

// with returns e with its paths and JSON name.
func (e policyEndpoint) with(nsPath, topicPath, jsonName string) policyEndpoint {
	e.nsPath, e.topicPath, e.jsonName = nsPath, topicPath, jsonName
	return e
}

// policyEndpoints are the policies the REST API serves (backlog quotas have
// endpoints of their own: backlogquota.go).
var policyEndpoints = []policyEndpoint{
	messageTTLEndpoint,
	retentionEndpoint,
	intPolicy(func(p *broker.Policies) **int { return &p.MaxProducersPerTopic },
		"maxProducersPerTopic", "maxProducers must be 0 or more").
		with("maxProducersPerTopic", "maxProducers", "max_producers_per_topic"),
	intPolicy(func(p *broker.Policies) **int { return &p.MaxConsumersPerTopic },
		"maxConsumersPerTopic", "maxConsumers must be 0 or more").
		with("maxConsumersPerTopic", "maxConsumers", "max_consumers_per_topic"),
	optionalAtTopic(intPolicy(func(p *broker.Policies) **int { return &p.MaxConsumersPerSubscription },
		"maxConsumersPerSubscription", "Invalid value for maxConsumersPerSubscription").
		with("maxConsumersPerSubscription", "maxConsumersPerSubscription", "max_consumers_per_subscription")),
	missingAsNoPolicies(optionalAtTopic(intPolicy(func(p *broker.Policies) **int { return &p.MaxSubscriptionsPerTopic },
		"maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic must be 0 or more").
		with("maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic", "max_subscriptions_per_topic"))),
	removedWhenEmptyAtTopic(intPolicy(func(p *broker.Policies) **int { return &p.MaxUnackedMessagesPerConsumer },
		"maxUnackedMessagesPerConsumer", "maxUnackedNum must be 0 or more").
		with("maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer", "max_unacked_messages_per_consumer")),
	removedWhenEmptyAtTopic(intPolicy(func(p *broker.Policies) **int { return &p.MaxUnackedMessagesPerSubscription },
		"maxUnackedMessagesPerSubscription", "maxUnackedNum must be 0 or more").
		with("maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription", "max_unacked_messages_per_subscription")),
	dispatchRateEndpoint(func(p *broker.Policies) **broker.DispatchRate { return &p.DispatchRate }).
		with("dispatchRate", "dispatchRate", ""),
	dispatchRateEndpoint(func(p *broker.Policies) **broker.DispatchRate { return &p.SubscriptionDispatchRate }).
		with("subscriptionDispatchRate", "subscriptionDispatchRate", ""),
	replicatorDispatchRateEndpoint,
	publishRateEndpoint,
	deduplicationEndpoint,
	delayedDeliveryEndpoint,
	compactionThresholdEndpoint,
}

// optionalAtTopic marks a policy Pulsar reads at topic level as an optional
// value: unset is a 204, and there is no ?applied.
func optionalAtTopic(e policyEndpoint) policyEndpoint {
	e.topicUnset, e.applied = http.StatusNoContent, false
	return e
}

// missingAsNoPolicies marks a policy whose update on a missing namespace
// answers "Namespace policies does not exist".
func missingAsNoPolicies(e policyEndpoint) policyEndpoint {
	e.nsMissing = noPolicies
	return e
}

// removedWhenEmptyAtTopic marks a policy whose topic-level POST without a
// body removes it.
func removedWhenEmptyAtTopic(e policyEndpoint) policyEndpoint {
	e.topicEmpty = emptyRemoves
	return e
}

var messageTTLEndpoint = func() policyEndpoint {
	e := intPolicy(func(p *broker.Policies) **int { return &p.MessageTTLSeconds }, "", "Invalid value for message TTL").
		with("messageTTL", "messageTTL", "message_ttl_in_seconds")
	e.topicParam = "messageTTL"
	e.topicEmpty = emptyRemoves
	nsCheck := e.check
	e.check = func(own, ns broker.Policies, topicLevel bool) error {
		if v := own.MessageTTLSeconds; !topicLevel && v != nil && *v < 0 {
			return errStatus(http.StatusPreconditionFailed, "Invalid value for message TTL, message TTL must >= 0")
		}
		return nsCheck(own, ns, topicLevel)
	}
	return e
}()

var retentionEndpoint = policyEndpoint{
	nsPath: "retention", topicPath: "retention", jsonName: "retention_policies", nsMissing: noPolicies,
	value: func(p broker.Policies) (any, bool) {
		if p.Retention == nil {
			return nil, false
		}
		return retentionOut(*p.Retention), true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		var j retentionJSON
		err := decodeBody(body, &j)
		r := broker.Retention{Minutes: int(j.Minutes), SizeMB: int64(j.SizeMB)}
		return func(p *broker.Policies) { p.Retention = &r }, err
	},
	check:   checkRetention,
	remove:  func(p *broker.Policies) { p.Retention = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyIgnored,
	topicUnset: http.StatusOK, applied: true,
}

// dispatchRateValue is a dispatch rate as JSON, and whether it is set.
func dispatchRateValue(d *broker.DispatchRate) (any, bool) {
	if d == nil {
		return nil, false
	}
	return dispatchRateOut(*d), true
}

// decodeDispatchRate reads a dispatch rate's body.
func decodeDispatchRate(body []byte) (broker.DispatchRate, error) {
	var j dispatchRateJSON
	err := decodeBody(body, &j)
	return broker.DispatchRate{Messages: int(j.Messages), Bytes: int64(j.Bytes),
		PeriodSeconds: int(j.PeriodSeconds), RelativeToPublishRate: j.RelativeToPublishRate}, err
}

func dispatchRateEndpoint(field func(*broker.Policies) **broker.DispatchRate) policyEndpoint {
	return policyEndpoint{
		value: func(p broker.Policies) (any, bool) { return dispatchRateValue(*field(&p)) },
		decode: func(body []byte) (func(*broker.Policies), error) {
			d, err := decodeDispatchRate(body)
			return func(p *broker.Policies) { *field(p) = &d }, err
		},
		remove:  func(p *broker.Policies) { *field(p) = nil },
		nsEmpty: emptyRemoves, topicEmpty: emptyIgnored,
		topicUnset: http.StatusOK, applied: true,
	}
}

// replicatorDispatchRateEndpoint serves replicatorDispatchRate, which
// Pulsar 4.0.8 takes as it comes (no range check) and removes on a POST
// without a body at either level.
var replicatorDispatchRateEndpoint = func() policyEndpoint {
	e := dispatchRateEndpoint(func(p *broker.Policies) **broker.DispatchRate { return &p.ReplicatorDispatchRate }).
		with("replicatorDispatchRate", "replicatorDispatchRate", "")
	e.topicEmpty = emptyRemoves
	e.nsMissing = noReason
	return e
}()

var publishRateEndpoint = policyEndpoint{
	nsPath: "publishRate", topicPath: "publishRate",
	value: func(p broker.Policies) (any, bool) {
		if p.PublishRate == nil {
			return nil, false
		}
		return publishRateJSON{flexInt(p.PublishRate.Messages), flexInt(p.PublishRate.Bytes)}, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		j := publishRateJSON{-1, -1}
		err := decodeBody(body, &j)
		r := broker.PublishRate{Messages: int(j.Messages), Bytes: int64(j.Bytes)}
		return func(p *broker.Policies) { p.PublishRate = &r }, err
	},
	remove:  func(p *broker.Policies) { p.PublishRate = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyIgnored,
	topicUnset: http.StatusNoContent,
}

var deduplicationEndpoint = policyEndpoint{
	nsPath: "deduplication", topicPath: "deduplicationEnabled", jsonName: "deduplicationEnabled",
	value: func(p broker.Policies) (any, bool) {
		if p.DeduplicationEnabled == nil {
			return nil, false
		}
		return *p.DeduplicationEnabled, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		on, err := decodeBoolBody(body)
		return func(p *broker.Policies) { p.DeduplicationEnabled = &on }, err
	},
	remove:     func(p *broker.Policies) { p.DeduplicationEnabled = nil },
	topicEmpty: emptyRemoves,
	topicUnset: http.StatusOK, applied: true,
}

var delayedDeliveryEndpoint = policyEndpoint{
	nsPath: "delayedDelivery", topicPath: "delayedDelivery", jsonName: "delayed_delivery_policies", nsMissing: noPolicies,
	value: func(p broker.Policies) (any, bool) {
		if p.DelayedDelivery == nil {
			return nil, false
		}
		return delayedDeliveryOut(*p.DelayedDelivery), true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		var j delayedDeliveryJSON
		err := decodeBody(body, &j)
		d := broker.DelayedDelivery{Active: j.Active, TickMillis: int64(j.TickTime), MaxDelayMillis: int64(j.MaxDelayMillis)}
		return func(p *broker.Policies) { p.DelayedDelivery = &d }, err
	},
	remove:  func(p *broker.Policies) { p.DelayedDelivery = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyRemoves,
	topicUnset: http.StatusOK, applied: true,
}

// checkRetention validates a retention policy as Pulsar does (400), then
// against the backlog quota in force at that level (412): the size quota
// may not reach the retained size, nor the age quota the retained time.
func checkRetention(own, ns broker.Policies, topicLevel bool) error {
	r := own.Retention
	if r == nil {
		return nil
	}
	if err := validPolicies(broker.Policies{Retention: r}); err != nil {
		return err
	}
	if topicLevel {
		for _, q := range []*broker.BacklogQuota{
			or(own.BacklogQuota, ns.BacklogQuota), or(own.MessageAgeBacklogQuota, ns.MessageAgeBacklogQuota),
		} {
			if !quotaWithinRetention(q, r) {
				return errStatus(http.StatusPreconditionFailed, "Retention Quota must exceed configured backlog quota "+
					"for topic. Please increase retention quota and retry")
			}
		}
		return nil
	}
	if (own.BacklogQuota != nil || own.MessageAgeBacklogQuota != nil) && !quotaWithinRetention(own.BacklogQuota, r) {
		return errStatus(http.StatusPreconditionFailed, "Retention Quota must exceed configured backlog quota for namespace.")
	}
	return nil
}

// quotaWithinRetention is Pulsar's checkBacklogQuota: a quota (nil: the
// default, no limit) must stay under an active retention policy.
func quotaWithinRetention(q *broker.BacklogQuota, r *broker.Retention) bool {
	if r == nil || (r.SizeMB <= 0 && r.Minutes <= 0) || q == nil {
		return true
	}
	if r.SizeMB > 0 && q.LimitBytes >= r.SizeMB*1024*1024 {
		return false
	}
	return !(r.Minutes > 0 && int64(q.LimitSeconds) >= int64(r.Minutes)*60)
}

// or returns a unless it is nil, else b.
func or[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// validPolicies checks p's ranges with the broker's rules, as a 400 with
// Pulsar's reason.
func validPolicies(p broker.Policies) error {
	if err := broker.ValidatePolicies(p); err != nil {
		return errStatus(http.StatusBadRequest, err.Error())
	}
	return nil
}

func (s *Server) routePolicies() {
	for _, p := range policyEndpoints {
		ns := "/admin/v2/namespaces/{tenant}/{ns}/" + p.nsPath
		topic := "/admin/v2/{domain}/{tenant}/{ns}/{topic}/" + p.topicPath
		method := p.nsMethod
		if method == "" {
			method = "POST"
		}
		if p.nsPath != "" { // else a topic policy only
			s.mux.HandleFunc("GET "+ns, s.getNamespacePolicy(p))
			s.mux.HandleFunc(method+" "+ns, s.setNamespacePolicy(p))
			if !p.nsNoDelete {
				s.mux.HandleFunc("DELETE "+ns, s.removeNamespacePolicy(p))
			}
		}
		if p.topicPath == "" {
			continue // a namespace policy only
		}
		s.mux.HandleFunc("GET "+topic, s.getTopicPolicy(p))
		s.mux.HandleFunc("POST "+topic, s.setTopicPolicy(p))
		s.mux.HandleFunc("DELETE "+topic, s.removeTopicPolicy(p))
	}
	s.routeBacklogQuotas()
	s.routeSubscriptionPolicies()
}

// answerPolicy answers p's value in pol, or unset (an empty body).
func answerPolicy(w http.ResponseWriter, p policyEndpoint, pol broker.Policies, unset int) {
	v, set := p.value(pol)
	if !set {
		w.WriteHeader(unset)
		return
	}
	reply(w, v, nil)
}

// readChange reads a POST's change: from the topic-level query parameter,
// or from the body, which may be empty (then the change is what empty
// says: nil for none).
func readChange(r *http.Request, p policyEndpoint, empty emptyBody, topicLevel bool) (func(*broker.Policies), error) {
	if topicLevel && p.topicParam != "" {
		q := r.URL.Query()
		if !q.Has(p.topicParam) {
			return p.remove, nil
		}
		n, err := strconv.Atoi(q.Get(p.topicParam))
		if err != nil {
			// Jersey answers a parameter it cannot convert with 404.
			return nil, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
		}
		return p.decode([]byte(strconv.Itoa(n)))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, errStatus(http.StatusBadRequest, err.Error())
	}
	if t := strings.TrimSpace(string(body)); t == "" || t == "null" {
		switch empty {
		case emptyRemoves:
			return p.remove, nil
		case emptyIgnored:
			return nil, nil
		case emptyDecoded:
			return p.decode(nil)
		}
		return nil, errStatus(http.StatusBadRequest, "The request entity cannot be empty.")
	}
	return p.decode(body)
}

// checked wraps change with p's check: the change applies only when the
// policies it leaves pass, and *refusal says why it did not.
func checked(change func(*broker.Policies), check policyCheck, ns func(broker.Policies) broker.Policies,
	topicLevel bool, refusal *error) func(*broker.Policies) {
	return func(p *broker.Policies) {
		next := *p
		change(&next)
		*refusal = nil
		if check != nil {
			*refusal = check(next, ns(next), topicLevel)
		}
		if *refusal == nil {
			*p = next
		}
	}
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
		if _, set := p.value(pol); !set && p.unset != nil {
			reply(w, p.unset(), nil)
			return
		}
		unset := http.StatusOK
		if p.nsUnset != 0 {
			unset = p.nsUnset
		}
		answerPolicy(w, p, pol, unset)
	}
}

// setNamespacePolicy sets a namespace's policy. As in Pulsar, a body that
// does not parse and a bad value are reported before a missing namespace.
func (s *Server) setNamespacePolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		var change func(*broker.Policies)
		if err == nil {
			change, err = readChange(r, p, p.nsEmpty, false)
		}
		var lr *lateRefusal
		if errors.As(err, &lr) {
			err = lr.err
		}
		if err == nil && change != nil && p.check != nil {
			// Values alone first: refused before the namespace is looked up.
			var alone broker.Policies
			change(&alone)
			err = p.check(alone, alone, false)
		}
		if err == nil && change == nil {
			_, err = s.b.NamespacePolicies(ns)
		} else if err == nil {
			var refusal error
			self := func(own broker.Policies) broker.Policies { return own }
			err = s.b.UpdateNamespacePolicies(ns, checked(change, p.check, self, false, &refusal))
			if err == nil {
				err = refusal
			}
		}
		if err == nil && p.nsSetStatus != 0 {
			w.WriteHeader(p.nsSetStatus)
			return
		}
		reply(w, nil, p.missingNamespace(err))
	}
}

func (s *Server) removeNamespacePolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		if err == nil {
			err = s.b.UpdateNamespacePolicies(ns, p.remove)
		}
		reply(w, nil, p.missingNamespace(err))
	}
}

// policyTopic reads the topic of a topic-level policy request and checks
// it may have policies: not a partition (412), in a namespace that exists
// and existing itself (404).
func (s *Server) policyTopic(r *http.Request) (string, error) {
	topic, err := topicFromPath(r)
	if err != nil {
		return "", err
	}
	tn, err := broker.ParseTopicName(topic)
	switch {
	case err != nil:
		return "", err
	case tn.Partition >= 0:
		return "", errStatus(http.StatusPreconditionFailed, "Not allowed to set/get topic policy for a partition")
	case !s.b.NamespaceExists(tn.NamespaceName()):
		return "", errStatus(http.StatusNotFound, "Namespace not found")
	}
	_, err = s.b.TopicPolicies(topic)
	return topic, err
}

func (s *Server) getTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic, err := s.policyTopic(r)
		var pol broker.Policies
		if err == nil {
			pol, err = s.policiesOf(topic, p.applied && boolParam(r, "applied"))
		}
		if err != nil {
			reply(w, nil, err)
			return
		}
		if _, set := p.value(pol); !set && p.topicUnsetValue != nil {
			reply(w, p.topicUnsetValue(), nil)
			return
		}
		answerPolicy(w, p, pol, p.topicUnset)
	}
}

// policiesOf returns a topic's own policies, or with applied those in force
// for it.
func (s *Server) policiesOf(topic string, applied bool) (broker.Policies, error) {
	if applied {
		return s.b.AppliedPolicies(topic)
	}
	return s.b.TopicPolicies(topic)
}

// setTopicPolicy sets a topic's policy. As in Pulsar, a body that does not
// parse is reported first, then a missing topic, then a bad value (a query
// parameter is read after the topic is found).
func (s *Server) setTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var change func(*broker.Policies)
		var err error
		if p.topicParam == "" {
			change, err = readChange(r, p, p.topicEmpty, true)
		}
		var lr *lateRefusal
		var refused error
		if errors.As(err, &lr) {
			err, refused = nil, lr.err
		}
		var topic string
		if err == nil {
			topic, err = s.policyTopic(r)
		}
		if err == nil && refused != nil {
			err = refused
		}
		if err == nil && p.topicParam != "" {
			change, err = readChange(r, p, p.topicEmpty, true)
		}
		if err == nil && change != nil {
			check := p.check
			if p.limit != nil {
				check = func(own, ns broker.Policies, topicLevel bool) error {
					if p.check != nil {
						if err := p.check(own, ns, topicLevel); err != nil {
							return err
						}
					}
					return p.limit(s.b, own)
				}
			}
			err = s.updateTopicPolicy(topic, change, check)
		}
		reply(w, nil, err)
	}
}

// updateTopicPolicy applies change to the topic's own policies if check
// passes, with the namespace's policies as the fallback it sees.
func (s *Server) updateTopicPolicy(topic string, change func(*broker.Policies), check policyCheck) error {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return err
	}
	nsPol, err := s.b.NamespacePolicies(tn.NamespaceName())
	if err != nil {
		return err
	}
	var refusal error
	nsOf := func(broker.Policies) broker.Policies { return nsPol }
	if err := s.b.UpdateTopicPolicies(topic, checked(change, check, nsOf, true, &refusal)); err != nil {
		return err
	}
	return refusal
}

func (s *Server) removeTopicPolicy(p policyEndpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		topic, err := s.policyTopic(r)
		if err == nil {
			err = s.b.UpdateTopicPolicies(topic, p.remove)
		}
		reply(w, nil, err)
	}
}
