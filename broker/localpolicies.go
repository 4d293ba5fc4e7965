package broker

// A namespace's local policies, as Pulsar keeps them apart from the
// namespace in the cluster's local metadata: its anti-affinity group. They
// live in the store, so every broker of a cluster answers the same.

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
}

// RemoveAntiAffinityGroup removes namespace ns's anti-affinity group.
func (b *Broker) RemoveAntiAffinityGroup(ns string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.data.AntiAffinityGroups, ns)
}
