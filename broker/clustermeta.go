package broker

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
)

// The metadata a Pulsar cluster keeps in its configuration store beside
// tenants and namespaces: the clusters it knows (their URLs and peers),
// each cluster's failure domains and namespace isolation policies, the
// resource quotas of the load manager, and the broker settings changed at
// run time (dynamicconfig.go). The brokers of a cluster share it (one
// clusterMeta per Cluster, as they share the store); pulsarsim keeps and
// serves all of it, and applies only the dynamic settings it has
// (dynamicconfig.go): there is no other cluster to replicate to, and no
// load manager that places bundles by isolation policy, failure domain or
// quota.
//
// Its lock (clusterMeta.mu) is a leaf: nothing is taken under it. It may be
// taken under the store's lock (a topic created on first use reads the
// dynamic settings there).

// The errors of the cluster metadata API; the admin API answers each with
// Pulsar's status.
var (
	// ErrClusterNotFound: no cluster of that name.
	ErrClusterNotFound = errors.New("Cluster does not exist")
	// ErrClusterExists: a cluster of that name exists already.
	ErrClusterExists = errors.New("Cluster already exists")
	// ErrClusterNotEmpty: the cluster has namespace isolation policies.
	ErrClusterNotEmpty = errors.New("Cluster not empty")
	// ErrInvalidPeer: a peer cluster that is the cluster itself or does
	// not exist.
	ErrInvalidPeer = errors.New("invalid peer cluster")
	// ErrFailureDomainNotFound: the cluster has no failure domain of that
	// name.
	ErrFailureDomainNotFound = errors.New("failure domain does not exist")
	// ErrBrokerInOtherDomain: a broker of the domain is in another domain
	// of the cluster already.
	ErrBrokerInOtherDomain = errors.New("broker already in another domain")
	// ErrIsolationPoliciesNotFound: no namespace isolation policy was ever
	// set on (or deleted from) the cluster.
	ErrIsolationPoliciesNotFound = errors.New("namespace isolation policies do not exist")
	// ErrIsolationPolicyNotFound: the cluster has no namespace isolation
	// policy of that name.
	ErrIsolationPolicyNotFound = errors.New("namespace isolation policy does not exist")
)

// ClusterData is a cluster's metadata (Pulsar's ClusterData): Fields holds
// what was written, by Pulsar's JSON names (serviceUrl, brokerServiceUrl,
// proxyProtocol, the TLS client settings…), as strings and booleans, but
// the peers, which Peers holds in their order (nil: never set).
//
// Initial is set for the broker's own cluster while nobody has written it:
// its data are then the broker's own URLs, which the admin API knows.
type ClusterData struct {
	Fields  map[string]any
	Peers   []string
	Initial bool
}

func (d ClusterData) clone() ClusterData {
	d.Fields = maps.Clone(d.Fields)
	d.Peers = slices.Clone(d.Peers)
	return d
}

// FailureDomain is a failure domain of a cluster: the brokers in it (by
// id, host:port of their web service), nil when the domain was written
// without a list.
type FailureDomain struct {
	Brokers []string
}

// IsolationPolicy is a namespace isolation policy (Pulsar's
// NamespaceIsolationData): the namespaces it places (regular
// expressions), the primary and secondary brokers (regular expressions
// over broker ids), the auto-failover policy and the unload scope ("" when
// not given).
type IsolationPolicy struct {
	Namespaces, Primary, Secondary []string
	AutoFailover                   AutoFailoverPolicy
	UnloadScope                    string
}

// AutoFailoverPolicy is an isolation policy's auto-failover policy: its
// type (Pulsar knows min_available) and parameters, in the order given.
type AutoFailoverPolicy struct {
	Type       string
	Parameters [][2]string
}

func (p IsolationPolicy) clone() IsolationPolicy {
	p.Namespaces, p.Primary, p.Secondary = slices.Clone(p.Namespaces), slices.Clone(p.Primary), slices.Clone(p.Secondary)
	p.AutoFailover.Parameters = slices.Clone(p.AutoFailover.Parameters)
	return p
}

// ResourceQuota is a load manager's resource quota (Pulsar's
// ResourceQuota): the rates and memory a bundle is expected to use.
type ResourceQuota struct {
	MsgRateIn, MsgRateOut, BandwidthIn, BandwidthOut, Memory float64
	Dynamic                                                  bool
}

// DefaultResourceQuota is the quota of a bundle nobody set one for, until
// the default is changed: Pulsar's.
var DefaultResourceQuota = ResourceQuota{MsgRateIn: 40, MsgRateOut: 120, BandwidthIn: 100000,
	BandwidthOut: 300000, Memory: 80, Dynamic: true}

// clusterMeta is the cluster metadata of a configuration store.
type clusterMeta struct {
	// mu queues the metadata into the data directory as it is released
	// after a change (datadirmeta.go), as the broker lock queues the store's.
	mu storeLock
	// clusters are the clusters that exist, by name: the broker's own
	// (Initial until written, unless deleted) and those created.
	clusters map[string]ClusterData
	// domains are the failure domains by cluster, then by name (a
	// cluster present once a domain was written). They outlive their
	// cluster, as Pulsar's do, and keep its name in the list of clusters.
	domains map[string]map[string]FailureDomain
	// isolation are the namespace isolation policies by cluster (a nil
	// map: never written), then by name.
	isolation map[string]map[string]IsolationPolicy
	// quota is the default resource quota, quotas the quotas set on
	// bundles (by namespace/range).
	quota  ResourceQuota
	quotas map[string]ResourceQuota
	// dynamic are the broker settings set at run time, by name.
	dynamic map[string]string
	// policies are the clusters' policies, by cluster (migration.go).
	policies map[string]ClusterPolicies
}

func newClusterMeta(own string) *clusterMeta {
	return &clusterMeta{clusters: map[string]ClusterData{own: {Initial: true}}, domains: map[string]map[string]FailureDomain{},
		isolation: map[string]map[string]IsolationPolicy{}, quota: DefaultResourceQuota,
		quotas: map[string]ResourceQuota{}, dynamic: map[string]string{},
		policies: map[string]ClusterPolicies{}}
}

// existsLocked reports whether cluster exists. The caller holds m.mu.
func (m *clusterMeta) existsLocked(cluster string) bool {
	_, ok := m.clusters[cluster]
	return ok
}

// Clusters returns the names of the clusters the configuration store
// lists, sorted: the broker's own and those created since, and, as
// Pulsar's store lists them, those deleted after a failure domain was
// written for them and those that only have cluster policies.
func (b *Broker) Clusters() []string {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	names := slices.Collect(maps.Keys(m.clusters))
	for name := range m.domains {
		if !m.existsLocked(name) {
			names = append(names, name)
		}
	}
	// Cluster policies (a migration) are a child of the cluster's node in
	// Pulsar's metadata too: the name is listed though the cluster is not.
	for name := range m.policies {
		if !m.existsLocked(name) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Cluster returns a cluster's metadata, ok false when it does not exist.
func (b *Broker) Cluster(name string) (ClusterData, bool) {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.clusters[name]
	return d.clone(), ok
}

// CreateCluster writes a new cluster's metadata; ErrClusterExists when it
// exists.
func (b *Broker) CreateCluster(name string, d ClusterData) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.existsLocked(name) {
		return ErrClusterExists
	}
	m.putLocked(name, d)
	return nil
}

// UpdateCluster replaces a cluster's metadata, its peers with the rest;
// ErrClusterNotFound when it does not exist.
func (b *Broker) UpdateCluster(name string, d ClusterData) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(name) {
		return ErrClusterNotFound
	}
	m.putLocked(name, d)
	return nil
}

func (m *clusterMeta) putLocked(name string, d ClusterData) {
	d = d.clone()
	d.Initial = false
	m.clusters[name] = d
}

// DeleteCluster deletes a cluster's metadata and its isolation policies
// (its failure domains stay, as Pulsar leaves them). It fails with
// ErrClusterNotFound, or ErrClusterNotEmpty while an isolation policy is
// set on it. Like Pulsar, it does not look at the tenants that allow the
// cluster.
func (b *Broker) DeleteCluster(name string) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(name) {
		return ErrClusterNotFound
	}
	if len(m.isolation[name]) > 0 {
		return ErrClusterNotEmpty
	}
	delete(m.isolation, name)
	delete(m.clusters, name)
	return nil
}

// SetPeerClusters sets a cluster's peers (nil: none set), each once in the
// order given. A peer that is the cluster itself (in any case) or does not
// exist is an ErrInvalidPeer with Pulsar's reason, checked before the
// cluster is (ErrClusterNotFound).
func (b *Broker) SetPeerClusters(name string, peers []string) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	var unique []string
	for _, p := range peers {
		switch {
		case strings.EqualFold(p, name):
			return errorf(ErrInvalidPeer, "%s itself can't be part of peer-list", name)
		case !m.existsLocked(p):
			return errorf(ErrInvalidPeer, "Peer cluster %s does not exist", p)
		case !slices.Contains(unique, p):
			unique = append(unique, p)
		}
	}
	if peers != nil && unique == nil {
		unique = []string{}
	}
	if !m.existsLocked(name) {
		return ErrClusterNotFound
	}
	// The broker's own cluster stays Initial: its URLs are still the
	// broker's own.
	d := m.clusters[name].clone()
	d.Peers = unique
	m.clusters[name] = d
	return nil
}

// FailureDomains returns a cluster's failure domains by name (none for a
// cluster that does not exist).
func (b *Broker) FailureDomains(cluster string) map[string]FailureDomain {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]FailureDomain{}
	for name, fd := range m.domains[cluster] {
		out[name] = FailureDomain{Brokers: slices.Clone(fd.Brokers)}
	}
	return out
}

// FailureDomain returns one failure domain of a cluster:
// ErrClusterNotFound, or ErrFailureDomainNotFound.
func (b *Broker) FailureDomain(cluster, name string) (FailureDomain, error) {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return FailureDomain{}, ErrClusterNotFound
	}
	fd, ok := m.domains[cluster][name]
	if !ok {
		return FailureDomain{}, ErrFailureDomainNotFound
	}
	return FailureDomain{Brokers: slices.Clone(fd.Brokers)}, nil
}

// SetFailureDomain writes a failure domain of a cluster, its brokers each
// once. It fails with ErrClusterNotFound, or ErrBrokerInOtherDomain (with
// Pulsar's reason) when another domain of the cluster has one of its
// brokers.
func (b *Broker) SetFailureDomain(cluster, name string, fd FailureDomain) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return ErrClusterNotFound
	}
	others := slices.Sorted(maps.Keys(m.domains[cluster]))
	for _, other := range others {
		if other == name {
			continue
		}
		var dup []string
		for _, br := range m.domains[cluster][other].Brokers {
			if slices.Contains(fd.Brokers, br) {
				dup = append(dup, br)
			}
		}
		if len(dup) > 0 {
			return errorf(ErrBrokerInOtherDomain, "[%s] already exists in %s", strings.Join(dup, ", "), other)
		}
	}
	var brokers []string
	if fd.Brokers != nil {
		brokers = []string{}
		for _, br := range fd.Brokers {
			if !slices.Contains(brokers, br) {
				brokers = append(brokers, br)
			}
		}
		sort.Strings(brokers)
	}
	if m.domains[cluster] == nil {
		m.domains[cluster] = map[string]FailureDomain{}
	}
	m.domains[cluster][name] = FailureDomain{Brokers: brokers}
	return nil
}

// DeleteFailureDomain deletes a failure domain of a cluster:
// ErrClusterNotFound, or ErrFailureDomainNotFound.
func (b *Broker) DeleteFailureDomain(cluster, name string) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return ErrClusterNotFound
	}
	if _, ok := m.domains[cluster][name]; !ok {
		return ErrFailureDomainNotFound
	}
	delete(m.domains[cluster], name)
	return nil
}

// IsolationPolicies returns a cluster's namespace isolation policies by
// name: ErrClusterNotFound, or ErrIsolationPoliciesNotFound when none was
// ever written.
func (b *Broker) IsolationPolicies(cluster string) (map[string]IsolationPolicy, error) {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return nil, ErrClusterNotFound
	}
	ps, ok := m.isolation[cluster]
	if !ok {
		return nil, ErrIsolationPoliciesNotFound
	}
	out := map[string]IsolationPolicy{}
	for name, p := range ps {
		out[name] = p.clone()
	}
	return out, nil
}

// SetIsolationPolicy writes a namespace isolation policy of a cluster
// (ErrClusterNotFound). The admin API validates it first.
func (b *Broker) SetIsolationPolicy(cluster, name string, p IsolationPolicy) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return ErrClusterNotFound
	}
	if m.isolation[cluster] == nil {
		m.isolation[cluster] = map[string]IsolationPolicy{}
	}
	m.isolation[cluster][name] = p.clone()
	return nil
}

// DeleteIsolationPolicy deletes a namespace isolation policy of a cluster,
// if it has it (ErrClusterNotFound); the cluster then has isolation
// policies, maybe none.
func (b *Broker) DeleteIsolationPolicy(cluster, name string) error {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.existsLocked(cluster) {
		return ErrClusterNotFound
	}
	if m.isolation[cluster] == nil {
		m.isolation[cluster] = map[string]IsolationPolicy{}
	}
	delete(m.isolation[cluster], name)
	return nil
}

// ResourceQuota returns the resource quota of a bundle (namespace/range),
// the default quota when none was set on it; with bundle "", the default.
func (b *Broker) ResourceQuota(bundle string) ResourceQuota {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.quotas[bundle]; ok && bundle != "" {
		return q
	}
	return m.quota
}

// SetResourceQuota sets the resource quota of a bundle (namespace/range),
// or with bundle "" the default; nil removes the bundle's (the default
// goes back to DefaultResourceQuota).
func (b *Broker) SetResourceQuota(bundle string, q *ResourceQuota) {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case bundle == "" && q == nil:
		m.quota = DefaultResourceQuota
	case bundle == "":
		m.quota = *q
	case q == nil:
		delete(m.quotas, bundle)
	default:
		m.quotas[bundle] = *q
	}
}
