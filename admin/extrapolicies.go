package admin

import (
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// More policies a standalone stores and serves, as entries of
// policyEndpoints: the subscription types enabled, subscription expiration,
// automatic subscription creation, the topics a namespace may hold, the
// deduplication snapshot interval, a topic's largest message and the
// dispatcher's pause on ack-state persistence. pulsarsim keeps and serves
// them with Pulsar 4.0.8's answers but does not apply them yet.

func init() {
	policyEndpoints = append(policyEndpoints,
		subscriptionTypesEndpoint,
		subscriptionExpirationEndpoint,
		autoSubscriptionCreationEndpoint,
		maxTopicsPerNamespaceEndpoint,
		deduplicationSnapshotEndpoint,
		maxMessageSizeEndpoint,
		dispatcherPauseEndpoint,
	)
}

// errRequestFailed is the 500 Pulsar answers a body it fails on
// unexpectedly (its reason; Pulsar's body is Jetty's HTML page).
var errRequestFailed = errStatus(http.StatusInternalServerError, "Request failed.")

// subscriptionTypes are the names Pulsar's SubscriptionType has.
var subscriptionTypes = map[string]bool{"Exclusive": true, "Shared": true, "Failover": true, "Key_Shared": true}

var subscriptionTypesEndpoint = policyEndpoint{
	nsPath: "subscriptionTypesEnabled", topicPath: "subscriptionTypesEnabled", jsonName: "subscription_types_enabled",
	value: func(p broker.Policies) (any, bool) {
		if p.SubscriptionTypesEnabled == nil {
			return nil, false
		}
		return *p.SubscriptionTypesEnabled, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		var names []string
		if body == nil || decodeBody(body, &names) != nil {
			return nil, errRequestFailed
		}
		set := []string{}
		for _, n := range names {
			if !subscriptionTypes[n] {
				return nil, errRequestFailed
			}
			if !contains(set, n) {
				set = append(set, n)
			}
		}
		return func(p *broker.Policies) { p.SubscriptionTypesEnabled = &set }, nil
	},
	remove:  func(p *broker.Policies) { p.SubscriptionTypesEnabled = nil },
	nsEmpty: emptyDecoded, topicEmpty: emptyDecoded,
	unset:        func() any { return []string{} },
	docWhenUnset: true,
	nsMissing:    noPolicies,
	topicUnset:   http.StatusNoContent,
}

var subscriptionExpirationEndpoint = func() policyEndpoint {
	e := intPolicy(func(p *broker.Policies) **int { return &p.SubscriptionExpirationMinutes },
		"", "").with("subscriptionExpirationTime", "", "subscription_expiration_time_minutes")
	e.check = func(own, _ broker.Policies, _ bool) error {
		if v := own.SubscriptionExpirationMinutes; v != nil && *v < 0 {
			return errStatus(http.StatusPreconditionFailed, "Invalid value for subscription expiration time")
		}
		return nil
	}
	e.nsMissing = noPolicies
	return e
}()

var autoSubscriptionCreationEndpoint = policyEndpoint{
	nsPath: "autoSubscriptionCreation", topicPath: "autoSubscriptionCreation", jsonName: "autoSubscriptionCreationOverride",
	value: func(p broker.Policies) (any, bool) {
		if p.AutoSubscriptionCreation == nil {
			return nil, false
		}
		return map[string]bool{"allowAutoSubscriptionCreation": *p.AutoSubscriptionCreation}, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		var j struct {
			Allow bool `json:"allowAutoSubscriptionCreation"`
		}
		err := decodeBody(body, &j)
		return func(p *broker.Policies) { p.AutoSubscriptionCreation = &j.Allow }, err
	},
	remove:  func(p *broker.Policies) { p.AutoSubscriptionCreation = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyRemoves,
	nsMissing:  noPolicies,
	topicUnset: http.StatusOK, applied: true,
}

var maxTopicsPerNamespaceEndpoint = func() policyEndpoint {
	e := intPolicy(func(p *broker.Policies) **int { return &p.MaxTopicsPerNamespace },
		"maxTopicsPerNamespace", "").with("maxTopicsPerNamespace", "", "max_topics_per_namespace")
	e.unset = func() any { return 0 }
	e.nsMissing = noPolicies
	return e
}()

var deduplicationSnapshotEndpoint = func() policyEndpoint {
	e := intPolicy(func(p *broker.Policies) **int { return &p.DeduplicationSnapshotIntervalSeconds },
		"", "interval must be 0 or more").
		with("deduplicationSnapshotInterval", "deduplicationSnapshotInterval", "deduplicationSnapshotIntervalSeconds")
	topicCheck := e.check
	e.check = func(own, ns broker.Policies, topicLevel bool) error {
		if v := own.DeduplicationSnapshotIntervalSeconds; !topicLevel && v != nil && *v < 0 {
			return errStatus(http.StatusPreconditionFailed, "interval must be greater than or equal to 0")
		}
		return topicCheck(own, ns, topicLevel)
	}
	// Pulsar removes it with an empty POST; a DELETE there names a bundle.
	e.nsEmpty, e.topicEmpty, e.nsNoDelete = emptyRemoves, emptyRemoves, true
	e.applied = false
	e.nsMissing = noPolicies
	return e
}()

// maxMessageSizeEndpoint is a topic's maxMessageSize, which must stay
// within the broker's.
var maxMessageSizeEndpoint = func() policyEndpoint {
	e := optionalAtTopic(intPolicy(func(p *broker.Policies) **int { return &p.MaxMessageSize }, "", "")).
		with("", "maxMessageSize", "")
	e.check = nil
	e.limit = func(b *broker.Broker, own broker.Policies) error {
		if v := own.MaxMessageSize; v != nil && (*v < 0 || *v > b.MaxMessageSize()) {
			return errStatus(http.StatusPreconditionFailed, "topic-level maxMessageSize must be greater than or equal to 0 "+
				"and must be smaller than that in the broker-level")
		}
		return nil
	}
	return e
}()

var dispatcherPauseEndpoint = policyEndpoint{
	nsPath: "dispatcherPauseOnAckStatePersistent", topicPath: "dispatcherPauseOnAckStatePersistent",
	jsonName: "dispatcherPauseOnAckStatePersistentEnabled",
	value: func(p broker.Policies) (any, bool) {
		if p.DispatcherPauseOnAckStatePersistent == nil {
			return nil, false
		}
		return *p.DispatcherPauseOnAckStatePersistent, true
	},
	// Pulsar's POST has no body: it turns the pause on.
	decode:  func([]byte) (func(*broker.Policies), error) { return setDispatcherPause, nil },
	remove:  func(p *broker.Policies) { p.DispatcherPauseOnAckStatePersistent = nil },
	nsEmpty: emptyDecoded, topicEmpty: emptyDecoded,
	unset:           func() any { return false },
	topicUnsetValue: func() any { return false },
	nsMissing:       noPolicies,
	topicUnset:      http.StatusOK, applied: true,
}

func setDispatcherPause(p *broker.Policies) { p.DispatcherPauseOnAckStatePersistent = new(true) }
