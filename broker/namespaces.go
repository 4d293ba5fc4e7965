package broker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/model"
)

// registryLocked returns the registry, filling in a standalone's tenants and
// namespaces on first use.
func (b *Broker) registryLocked() *namespaceRegistry {
	r := &b.data.Registry
	if r.Tenants == nil {
		r.Tenants = map[string]bool{"public": true, "pulsar": true}
		r.Namespaces = map[string]bool{"public/default": true, "public/functions": true, "pulsar/system": true}
	}
	return r
}

// CreateTenant registers a tenant.
func (b *Broker) CreateTenant(tenant string) error {
	if !model.NamedEntity.MatchString(tenant) {
		return errorf(ErrInvalidName, "Invalid tenant name: %s", tenant)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.registryLocked()
	if r.Tenants[tenant] {
		return ErrTenantExists
	}
	r.Tenants[tenant] = true
	return nil
}

// Tenants returns the sorted tenant names.
func (b *Broker) Tenants() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.registryLocked()
	out := make([]string, 0, len(r.Tenants))
	for t := range r.Tenants {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// DeleteTenant removes a tenant that has no namespace left.
func (b *Broker) DeleteTenant(tenant string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.registryLocked()
	if !r.Tenants[tenant] {
		return ErrTenantNotFound
	}
	for ns := range r.Namespaces {
		if strings.HasPrefix(ns, tenant+"/") {
			return ErrTenantNotEmpty
		}
	}
	delete(r.Tenants, tenant)
	return nil
}

// ValidateNamespaceName checks that ns is a well-formed namespace name,
// "tenant/ns", and fails with ErrInvalidName otherwise.
func ValidateNamespaceName(ns string) error {
	tenant, name, ok := strings.Cut(ns, "/")
	if !ok || !model.NamedEntity.MatchString(tenant) || !model.NamedEntity.MatchString(name) {
		return errorf(ErrInvalidName, "Invalid namespace name: %s", ns)
	}
	return nil
}

// CreateNamespace registers the namespace "tenant/ns"; its tenant must
// exist.
func (b *Broker) CreateNamespace(ns string) error {
	if err := ValidateNamespaceName(ns); err != nil {
		return err
	}
	tenant, _, _ := strings.Cut(ns, "/")
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.registryLocked()
	switch {
	case !r.Tenants[tenant]:
		return ErrTenantNotFound
	case r.Namespaces[ns]:
		return ErrNamespaceExists
	}
	r.Namespaces[ns] = true
	if n := b.meta.dynamicBundles(); n > 0 {
		b.data.Owners.SetBoundaries(ns, bundles.Boundaries(n))
	}
	return nil
}

// DefaultNamespaceBundles returns the number of bundles a namespace created
// without a count gets: defaultNumberOfNamespaceBundles as set at run time,
// else DefaultBundles.
func (b *Broker) DefaultNamespaceBundles() int {
	if n := b.meta.dynamicBundles(); n > 0 {
		return n
	}
	return DefaultBundles
}

// namespaceExistsLocked reports whether ns is registered.
func (b *Broker) namespaceExistsLocked(ns string) bool {
	return b.registryLocked().Namespaces[ns]
}

// errNoNamespace is how the broker refuses a topic of a namespace that does
// not exist: ErrNamespaceNotFound in the words of Pulsar's refusals of
// topic operations.
var errNoNamespace = errorf(ErrNamespaceNotFound, "Namespace not found")

// WithAutoNamespaceCreation makes a topic's first use create its namespace
// (and the namespace's tenant) when they do not exist: a convenience of
// pulsarsim for tests that do not set up their namespaces. Default off: as
// on Pulsar, only public/default (and the standalone's system namespaces)
// exist at start, and a topic of any other namespace fails until the
// namespace is created.
func WithAutoNamespaceCreation(on bool) Option { return func(c *config) { c.autoNamespaces = on } }

// namespaceReadyLocked reports whether ns exists, creating it (and its
// tenant) first when WithAutoNamespaceCreation is on.
func (b *Broker) namespaceReadyLocked(ns string) bool {
	r := b.registryLocked()
	if r.Namespaces[ns] {
		return true
	}
	if !b.cfg.autoNamespaces || ValidateNamespaceName(ns) != nil {
		return false
	}
	tenant, _, _ := strings.Cut(ns, "/")
	r.Tenants[tenant] = true
	r.Namespaces[ns] = true
	return true
}

// namespaceReady is namespaceReadyLocked for a caller without the lock.
func (b *Broker) namespaceReady(ns string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.namespaceReadyLocked(ns)
}

// NamespaceExists reports whether the namespace "tenant/ns" exists.
func (b *Broker) NamespaceExists(ns string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.namespaceExistsLocked(ns)
}

// Namespaces returns the sorted namespaces of a tenant.
func (b *Broker) Namespaces(tenant string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.registryLocked()
	if !r.Tenants[tenant] {
		return nil, ErrTenantNotFound
	}
	out := []string{}
	for ns := range r.Namespaces {
		if strings.HasPrefix(ns, tenant+"/") {
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}

// DeleteNamespace removes a namespace. Without force it must hold no topic;
// with force its topics are deleted first.
func (b *Broker) DeleteNamespace(ns string, force bool) error {
	if err := ValidateNamespaceName(ns); err != nil {
		return err
	}
	if !b.NamespaceExists(ns) {
		return ErrNamespaceNotFound
	}
	topics := b.TopicsOfNamespace(ns, TopicsAll)
	if len(topics) > 0 && !force {
		return ErrNamespaceNotEmpty
	}
	for _, t := range topics {
		tn, err := ParseTopicName(t)
		if err != nil {
			return err
		}
		if err := b.deleteTopics(tn.Base(), true); err != nil {
			return fmt.Errorf("deleting topic %s of namespace %s: %w", tn.Base(), ns, err)
		}
	}
	b.mu.Lock()
	delete(b.registryLocked().Namespaces, ns)
	delete(b.data.NamespacePolicies, ns)
	delete(b.data.LocalPolicies, ns)
	// Its bundles go with it: created again, it gets fresh ones.
	b.data.Owners.Forget(ns)
	b.mu.Unlock()
	return nil
}

// ClusterName returns the name of the broker's cluster ("standalone" unless
// WithClusterName set another).
func (b *Broker) ClusterName() string { return b.cfg.clusterName }
