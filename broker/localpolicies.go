package broker

import (
	"errors"

	"github.com/pulsarsim/pulsarsim/store"
)

// A namespace's local policies, as Pulsar keeps them apart from the
// namespace in the cluster's local metadata: its anti-affinity group and
// its bookie affinity group. They live in the store, so every broker of a
// cluster answers the same.

// BookieAffinityGroup is a namespace's bookie affinity group.
type BookieAffinityGroup = store.BookieAffinityGroup

// ErrNoLocalPolicies is a namespace none of whose local policies was ever
// written, as Pulsar words it.
var ErrNoLocalPolicies = errors.New("Namespace local-policies does not exist")

// AntiAffinityGroup returns namespace ns's anti-affinity group, and whether
// one is set. The namespace need not exist, as in Pulsar.
func (b *Broker) AntiAffinityGroup(ns string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g, ok := b.data.AntiAffinityGroups[ns]
	return g, ok
}

// SetAntiAffinityGroup sets namespace ns's anti-affinity group.
func (b *Broker) SetAntiAffinityGroup(ns, group string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data.AntiAffinityGroups[ns] = group
	// The namespace now has local policies (an entry, empty if it had none).
	b.data.LocalPolicies[ns] = b.data.LocalPolicies[ns]
}

// BookieAffinity returns namespace ns's bookie affinity group, nil when
// none is set; ErrNamespaceNotFound when ns does not exist,
// ErrNoLocalPolicies when none of its local policies was ever written.
func (b *Broker) BookieAffinity(ns string) (*BookieAffinityGroup, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.registryLocked().Namespaces[ns] {
		return nil, ErrNamespaceNotFound
	}
	lp, ok := b.data.LocalPolicies[ns]
	if !ok {
		return nil, ErrNoLocalPolicies
	}
	if lp.BookieAffinity == nil {
		return nil, nil
	}
	g := *lp.BookieAffinity
	return &g, nil
}

// SetBookieAffinity sets namespace ns's bookie affinity group, or removes
// it when g is nil; ErrNamespaceNotFound when ns does not exist.
func (b *Broker) SetBookieAffinity(ns string, g *BookieAffinityGroup) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.registryLocked().Namespaces[ns] {
		return ErrNamespaceNotFound
	}
	lp := b.data.LocalPolicies[ns]
	lp.BookieAffinity = nil
	if g != nil {
		c := *g
		lp.BookieAffinity = &c
	}
	b.data.LocalPolicies[ns] = lp
	return nil
}

// RemoveAntiAffinityGroup removes namespace ns's anti-affinity group.
func (b *Broker) RemoveAntiAffinityGroup(ns string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.data.AntiAffinityGroups, ns)
}
