package auth

import "slices"

// The actions a role can be granted on a namespace or a topic. Pulsar also
// stores functions, sources, sinks and packages; only produce and consume
// decide anything here.
const (
	ActionProduce = "produce"
	ActionConsume = "consume"
)

// Grants maps a role to the actions granted to it.
type Grants map[string][]string

// Has reports whether role was granted action.
func (g Grants) Has(role, action string) bool { return slices.Contains(g[role], action) }

// Operation is what a client asks to do with a topic.
type Operation int

// The topic operations the broker checks.
const (
	// OpLookup covers LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE
	// and reading a topic's metadata or stats: allowed to anyone who may
	// produce or consume.
	OpLookup Operation = iota
	OpProduce
	OpConsume
	// OpAdmin covers what only a tenant admin or a super-user may do.
	OpAdmin
)

// TopicPolicy is what decides a role's rights on one topic: its tenant's
// admin roles and the grants on its namespace and on the topic itself (for a
// partition, on its partitioned topic).
type TopicPolicy struct {
	TenantAdmins []string
	Namespace    Grants
	Topic        Grants
}

// Authorizer holds the broker-wide rules of Pulsar's default authorization
// provider.
type Authorizer struct {
	// SuperUsers (superUserRoles) may do anything.
	SuperUsers []string
}

// IsSuperUser reports whether role is a super-user.
func (a *Authorizer) IsSuperUser(role string) bool {
	return role != "" && slices.Contains(a.SuperUsers, role)
}

// IsTenantAdmin reports whether role administers a tenant with these admin
// roles; super-users administer every tenant.
func (a *Authorizer) IsTenantAdmin(role string, admins []string) bool {
	return a.IsSuperUser(role) || (role != "" && slices.Contains(admins, role))
}

// Allowed reports whether role may perform op on a topic governed by p.
// Super-users and the tenant's admins may do everything; others need a grant
// on the namespace or the topic.
func (a *Authorizer) Allowed(role string, p TopicPolicy, op Operation) bool {
	if a.IsTenantAdmin(role, p.TenantAdmins) {
		return true
	}
	has := func(action string) bool { return p.Namespace.Has(role, action) || p.Topic.Has(role, action) }
	switch op {
	case OpLookup:
		return has(ActionProduce) || has(ActionConsume)
	case OpProduce:
		return has(ActionProduce)
	case OpConsume:
		return has(ActionConsume)
	}
	return false
}
