package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The policies a namespace is created with. Pulsar keeps the whole policies
// document of a PUT /admin/v2/namespaces/{tenant}/{ns} body; pulsarsim
// keeps every policy of it that it models, under the names its namespace
// document answers them with (getNamespacePolicies): the permissions of
// auth_policies, each policy endpoint's jsonName, the backlog quotas of
// backlog_quota_map, the rates written by cluster (topicDispatchRate,
// subscriptionDispatchRate, replicatorDispatchRate, publishMaxMessageRate:
// the entry of this broker's cluster), and the schema policies. Fields it
// does not model are read past.

// namespaceCreation is the part of a creation body read as itself: the
// permissions, and the policies document as raw values by name.
type namespaceCreation struct {
	AuthPolicies struct {
		NamespaceAuth   map[string][]string            `json:"namespace_auth"`
		DestinationAuth map[string]map[string][]string `json:"destination_auth"`
	} `json:"auth_policies"`
	policies map[string]json.RawMessage
}

// readNamespaceCreation reads a creation body (none is an empty document).
func readNamespaceCreation(r *http.Request) (namespaceCreation, error) {
	var body namespaceCreation
	raw, err := readBody(r, 1<<20)
	if err != nil || len(raw) == 0 || string(raw) == "null" {
		return body, err
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return body, badBody(raw, err)
	}
	if err := json.Unmarshal(raw, &body.policies); err != nil {
		return body, badBody(raw, err)
	}
	return body, nil
}

// creationChange returns the change that sets the body's policies (a 412
// with Pulsar's reason for a value out of its range).
func (s *Server) creationChange(body namespaceCreation) (func(*broker.Policies), error) {
	var changes []func(*broker.Policies)
	var errs []error
	add := func(change func(*broker.Policies), err error) {
		if err != nil {
			errs = append(errs, err)
		} else if change != nil {
			changes = append(changes, change)
		}
	}
	value := func(name string) ([]byte, bool) {
		v, ok := body.policies[name]
		return v, ok && string(v) != "null"
	}
	for _, e := range policyEndpoints {
		if v, ok := value(e.jsonName); ok && e.jsonName != "" {
			add(e.decode(v))
		}
	}
	byCluster := func(name string, e policyEndpoint) {
		v, ok := value(name)
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			add(nil, badBody(v, err))
			return
		}
		if rate, ok := m[s.b.ClusterName()]; ok && string(rate) != "null" {
			add(e.decode(rate))
		}
	}
	for _, e := range policyEndpoints {
		switch e.nsPath {
		case "dispatchRate":
			byCluster("topicDispatchRate", e)
		case "subscriptionDispatchRate", "replicatorDispatchRate":
			byCluster(e.nsPath, e)
		case "publishRate":
			byCluster("publishMaxMessageRate", e)
		}
	}
	if v, ok := value("backlog_quota_map"); ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			add(nil, badBody(v, err))
		}
		for kind, field := range map[string]func(*broker.Policies) **broker.BacklogQuota{
			quotaSize: func(p *broker.Policies) **broker.BacklogQuota { return &p.BacklogQuota },
			quotaAge:  func(p *broker.Policies) **broker.BacklogQuota { return &p.MessageAgeBacklogQuota },
		} {
			if q, ok := m[kind]; ok && string(q) != "null" {
				quota, err := decodeBacklogQuota(q)
				add(func(p *broker.Policies) { *field(p) = &quota }, err)
			}
		}
	}
	add(creationSchemaChange(value))
	add(s.creationAutoTopicCreationChange(value))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	change := func(p *broker.Policies) {
		for _, c := range changes {
			c(p)
		}
	}
	// Values out of their ranges are refused; the checks of one policy
	// against another (retention against the backlog quota) are the
	// endpoints', which a creation does not go through.
	var alone broker.Policies
	change(&alone)
	return change, validPolicies(alone)
}

// creationSchemaChange reads the schema policies of a creation body: the
// strategy (UNDEFINED sets none), and validation enforced and automatic
// updates, which a namespace document always carries (their defaults set
// nothing).
func creationSchemaChange(value func(string) ([]byte, bool)) (func(*broker.Policies), error) {
	var strategy *broker.SchemaCompatibility
	var enforced, autoUpdate *bool
	if v, ok := value("schema_compatibility_strategy"); ok {
		var name string
		if err := json.Unmarshal(v, &name); err != nil {
			return nil, badBody(v, err)
		}
		for _, c := range broker.SchemaCompatibilities {
			if string(c) == name {
				strategy = &c
			}
		}
	}
	for name, dst := range map[string]**bool{"schema_validation_enforced": &enforced, "is_allow_auto_update_schema": &autoUpdate} {
		if v, ok := value(name); ok {
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, badBody(v, err)
			}
			*dst = &b
		}
	}
	return func(p *broker.Policies) {
		if strategy != nil {
			p.SchemaCompatibilityStrategy = strategy
		}
		if enforced != nil && *enforced {
			p.SchemaValidationEnforced = enforced
		}
		if autoUpdate != nil && !*autoUpdate {
			p.AllowAutoUpdateSchema = autoUpdate
		}
	}, nil
}
