package store

import "github.com/pulsarsim/pulsarsim/auth"

// Security are the authorization state the admin API edits: tenant
// admin roles and permissions on namespaces and topics. Package broker guards
// it with a leaf lock of its own.
type Security struct {
	TenantAdmins    map[string][]string    // tenant -> roles
	NamespaceGrants map[string]auth.Grants // "tenant/ns" -> grants
	TopicGrants     map[string]auth.Grants // base topic name -> grants
}

// Init makes the maps of a zero Security.
func (p *Security) Init() {
	if p.TenantAdmins == nil {
		p.TenantAdmins = map[string][]string{}
		p.NamespaceGrants = map[string]auth.Grants{}
		p.TopicGrants = map[string]auth.Grants{}
	}
}
