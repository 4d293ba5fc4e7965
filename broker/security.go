package broker

import (
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/pulsarsim/pulsarsim/auth"
)

// WithAuthentication turns authentication on (authenticationEnabled) with the
// providers and anonymous role of a. Clients whose credentials fail get
// AuthenticationError and are disconnected, on the binary protocol and on the
// admin API alike.
func WithAuthentication(a *auth.Authenticator) Option { return func(c *config) { c.authn = a } }

// WithAuthorization turns authorization on (authorizationEnabled) with these
// super-user roles (superUserRoles). Other roles need a tenant admin role or
// a grant on the namespace or topic.
func WithAuthorization(superUsers ...string) Option {
	return func(c *config) { c.authz = &auth.Authorizer{SuperUsers: superUsers} }
}

// WithAuthRefreshInterval sets authenticationRefreshCheckSeconds: how often
// the broker looks for connections whose credentials have expired, challenges
// them, and drops those that did not answer the previous challenge. Default
// 60 s.
func WithAuthRefreshInterval(d time.Duration) Option { return func(c *config) { c.authRefresh = d } }

// AuthenticationEnabled reports whether clients must authenticate.
func (b *Broker) AuthenticationEnabled() bool { return b.cfg.authn != nil }

// AuthorizationEnabled reports whether permissions are enforced.
func (b *Broker) AuthorizationEnabled() bool { return b.cfg.authz != nil }

// AuthenticateHTTP returns the role of an admin API request: the provider it
// names or the first that accepts it, else the anonymous role. Without
// authentication every request has the empty role.
func (b *Broker) AuthenticateHTTP(r *http.Request) (auth.Identity, error) {
	if b.cfg.authn == nil {
		return auth.Identity{}, nil
	}
	req := auth.HTTPRequest{
		Authorization: r.Header.Get("Authorization"),
		Method:        r.Header.Get("X-Pulsar-Auth-Method-Name"),
	}
	if r.TLS != nil {
		req.PeerCertificates = r.TLS.PeerCertificates
	}
	return b.cfg.authn.HTTP(req, b.cfg.clock.Now())
}

// IsSuperUser reports whether role may do anything. Without authorization
// every role may.
func (b *Broker) IsSuperUser(role string) bool {
	return b.cfg.authz == nil || b.cfg.authz.IsSuperUser(role)
}

// IsTenantAdmin reports whether role administers tenant (super-users
// administer all). Without authorization every role does.
func (b *Broker) IsTenantAdmin(role, tenant string) bool {
	if b.cfg.authz == nil {
		return true
	}
	b.secmu.Lock()
	defer b.secmu.Unlock()
	return b.cfg.authz.IsTenantAdmin(role, b.data.Security.TenantAdmins[tenant])
}

// AllowedTopic reports whether role may perform op on topic (a partition
// counts as its partitioned topic). Without authorization everything is
// allowed.
func (b *Broker) AllowedTopic(role string, topic TopicName, op auth.Operation) bool {
	if b.cfg.authz == nil {
		return true
	}
	base := topic.Base()
	b.secmu.Lock()
	defer b.secmu.Unlock()
	return b.cfg.authz.Allowed(role, auth.TopicPolicy{
		TenantAdmins: b.data.Security.TenantAdmins[base.Tenant],
		Namespace:    b.data.Security.NamespaceGrants[base.NamespaceName()],
		Topic:        b.data.Security.TopicGrants[base.String()],
	}, op)
}

// AllowedNamespace reports whether role may list or look up topics of the
// namespace ns ("tenant/ns"): a tenant admin, or a role granted produce or
// consume on the namespace itself.
func (b *Broker) AllowedNamespace(role, ns string) bool {
	if b.cfg.authz == nil {
		return true
	}
	tenant, _, _ := cutNamespace(ns)
	b.secmu.Lock()
	defer b.secmu.Unlock()
	if b.cfg.authz.IsTenantAdmin(role, b.data.Security.TenantAdmins[tenant]) {
		return true
	}
	g := b.data.Security.NamespaceGrants[ns]
	return g.Has(role, auth.ActionProduce) || g.Has(role, auth.ActionConsume)
}

func cutNamespace(ns string) (tenant, name string, ok bool) {
	for i := 0; i < len(ns); i++ {
		if ns[i] == '/' {
			return ns[:i], ns[i+1:], true
		}
	}
	return ns, "", false
}

// SetTenantAdminRoles replaces the admin roles of tenant.
func (b *Broker) SetTenantAdminRoles(tenant string, roles []string) error {
	if !b.tenantExists(tenant) {
		return ErrTenantNotFound
	}
	b.secmu.Lock()
	defer b.secmu.Unlock()
	b.data.Security.Init()
	b.data.Security.TenantAdmins[tenant] = slices.Clone(roles)
	return nil
}

// TenantAdminRoles returns the admin roles of tenant.
func (b *Broker) TenantAdminRoles(tenant string) []string {
	b.secmu.Lock()
	defer b.secmu.Unlock()
	return slices.Clone(b.data.Security.TenantAdmins[tenant])
}

func (b *Broker) tenantExists(tenant string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.registryLocked().Tenants[tenant]
}

// GrantNamespacePermission grants role the actions ("produce", "consume",
// …) on namespace ns, replacing what it had there.
func (b *Broker) GrantNamespacePermission(ns, role string, actions []string) error {
	if !b.NamespaceExists(ns) {
		return ErrNamespaceNotFound
	}
	b.secmu.Lock()
	defer b.secmu.Unlock()
	b.data.Security.Init()
	grant(b.data.Security.NamespaceGrants, ns, role, actions)
	return nil
}

// RevokeNamespacePermission removes role's grant on namespace ns.
func (b *Broker) RevokeNamespacePermission(ns, role string) error {
	if !b.NamespaceExists(ns) {
		return ErrNamespaceNotFound
	}
	b.secmu.Lock()
	defer b.secmu.Unlock()
	delete(b.data.Security.NamespaceGrants[ns], role)
	return nil
}

// NamespacePermissions returns the grants on namespace ns.
func (b *Broker) NamespacePermissions(ns string) (map[string][]string, error) {
	if !b.NamespaceExists(ns) {
		return nil, ErrNamespaceNotFound
	}
	b.secmu.Lock()
	defer b.secmu.Unlock()
	return copyGrants(b.data.Security.NamespaceGrants[ns]), nil
}

// GrantTopicPermission grants role the actions on topic (for a partition,
// on its partitioned topic), replacing what it had there. The topic need not
// exist yet.
func (b *Broker) GrantTopicPermission(topic TopicName, role string, actions []string) {
	b.secmu.Lock()
	defer b.secmu.Unlock()
	b.data.Security.Init()
	grant(b.data.Security.TopicGrants, topic.Base().String(), role, actions)
}

// RevokeTopicPermission removes role's grant on topic.
func (b *Broker) RevokeTopicPermission(topic TopicName, role string) {
	b.secmu.Lock()
	defer b.secmu.Unlock()
	delete(b.data.Security.TopicGrants[topic.Base().String()], role)
}

// TopicPermissions returns the grants on topic itself, without those on its
// namespace.
func (b *Broker) TopicPermissions(topic TopicName) map[string][]string {
	b.secmu.Lock()
	defer b.secmu.Unlock()
	return copyGrants(b.data.Security.TopicGrants[topic.Base().String()])
}

func grant(m map[string]auth.Grants, key, role string, actions []string) {
	g := m[key]
	if g == nil {
		g = auth.Grants{}
		m[key] = g
	}
	g[role] = slices.Clone(actions)
}

func copyGrants(g auth.Grants) map[string][]string {
	out := make(map[string][]string, len(g))
	roles := make([]string, 0, len(g))
	for r := range g {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		out[r] = slices.Clone(g[r])
	}
	return out
}
