package broker

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/store"
)

// Several clusters in one process, as Pulsar's geo-replication runs them:
// each cluster has its brokers and its store (ledgers, bundle ownership,
// schemas, topic policies, local policies), and they share one
// configuration store (ConfigStore) holding what Pulsar keeps in its
// global configuration store (PulsarResources' configuration-store
// resources): tenants with their allowed clusters, namespaces with their
// policies (replication clusters among them), partitioned-topic metadata,
// permissions, and the cluster metadata with its peers, failure domains
// and isolation policies (clustermeta.go). A cluster is made over one by
// WithConfigStore, its name given by WithClusterName.
//
// The clusters of one configuration store take one broker lock and one
// security lock, the configuration store's, as they share what these
// guard; everything of the lock order (doc.go) is otherwise unchanged, and
// no goroutine holds a topic lock of one cluster while it takes a topic
// lock of another (a replicator copies an entry to the remote cluster with
// no lock of its own topic held, replicator.go).

// ConfigStore is a configuration store that several clusters share, as
// Pulsar's clusters share a global configuration store.
type ConfigStore struct {
	mu, secmu storeLock
	config    *store.Config
	meta      *clusterMeta

	// regmu guards clusters and unreachable; it is a leaf lock.
	regmu    sync.Mutex
	clusters map[string]*shared
	// unreachable are the clusters the others' replicators cannot reach
	// (SetReachable).
	unreachable map[string]bool
}

// NewConfigStore returns an empty configuration store: the tenants and
// namespaces a Pulsar cluster starts with (public, public/default,
// pulsar, pulsar/system), and no cluster until one is made over it.
func NewConfigStore() *ConfigStore {
	return &ConfigStore{config: store.NewConfig(), meta: newClusterMetaNone(), clusters: map[string]*shared{}}
}

// WithConfigStore makes the broker's cluster (NewCluster, or New for a
// cluster of one) one of the clusters sharing cs. Its name
// (WithClusterName) must differ from theirs; the cluster is listed in the
// cluster metadata from then on.
func WithConfigStore(cs *ConfigStore) Option { return func(c *config) { c.configStore = cs } }

// WithReplicatedSubscriptionsSnapshotFrequency sets how often a topic with
// replicated subscriptions takes a snapshot of its clusters' positions
// (replicatedSubscriptionsSnapshotFrequencyMillis, 1 s by default).
func WithReplicatedSubscriptionsSnapshotFrequency(d time.Duration) Option {
	return func(c *config) { c.snapshotEvery = d }
}

// newShared returns what a new cluster over cs shares among its brokers: a
// store over cs's configuration, cs's locks and cluster metadata.
func (cs *ConfigStore) newShared(cfg config) *shared {
	st := store.NewWithConfig(cs.config)
	cs.mu.Lock()
	if _, ok := st.NamespacePolicies["public/default"]; !ok {
		st.NamespacePolicies["public/default"] = Policies{
			BacklogQuota:           cfg.policies.Clone().BacklogQuota,
			MessageAgeBacklogQuota: cfg.policies.Clone().MessageAgeBacklogQuota,
		}
	}
	cs.mu.Unlock()
	s := &shared{mu: &cs.mu, secmu: &cs.secmu, data: st, members: map[int]*Broker{}, meta: cs.meta,
		name: cfg.clusterName, cs: cs, geo: newGeoState()}
	if cfg.dataDir != "" {
		// One directory per cluster would each keep the shared half of the
		// store, written under one lock: not built.
		s.diskErr = errors.New("broker: a data directory is not kept for clusters sharing a configuration store")
	}
	cs.regmu.Lock()
	defer cs.regmu.Unlock()
	if cs.clusters[cfg.clusterName] != nil {
		panic(fmt.Sprintf("pulsarsim: the configuration store has a cluster named %q already", cfg.clusterName))
	}
	cs.clusters[cfg.clusterName] = s
	cs.meta.mu.Lock()
	if !cs.meta.existsLocked(cfg.clusterName) {
		cs.meta.clusters[cfg.clusterName] = ClusterData{}
	}
	cs.meta.mu.Unlock()
	return s
}

// newClusterMetaNone is the cluster metadata of a configuration store no
// cluster was made over yet.
func newClusterMetaNone() *clusterMeta {
	m := newClusterMeta("")
	delete(m.clusters, "")
	return m
}

// ClusterNames returns the names of the clusters made over cs, sorted.
func (cs *ConfigStore) ClusterNames() []string {
	cs.regmu.Lock()
	defer cs.regmu.Unlock()
	names := make([]string, 0, len(cs.clusters))
	for n := range cs.clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// cluster returns what the brokers of the cluster named name share, nil
// when no cluster of that name was made over cs or it is unreachable
// (SetReachable).
func (cs *ConfigStore) cluster(name string) *shared {
	cs.regmu.Lock()
	defer cs.regmu.Unlock()
	if cs.unreachable[name] {
		return nil
	}
	return cs.clusters[name]
}

// clusterAny is cluster, reachable or not.
func (cs *ConfigStore) clusterAny(name string) *shared {
	cs.regmu.Lock()
	defer cs.regmu.Unlock()
	return cs.clusters[name]
}

// SetReachable makes the cluster named name unreachable (false) for the
// other clusters' replicators, as a network partition between regions
// would, or reachable again (true): while it is unreachable their
// replicators are disconnected and keep its backlog, and once it is
// reachable they send it in order. Its own brokers keep serving their
// clients. Stopping or crashing all of a cluster's brokers makes it
// unreachable too.
func (cs *ConfigStore) SetReachable(name string, reachable bool) {
	cs.regmu.Lock()
	defer cs.regmu.Unlock()
	if cs.unreachable == nil {
		cs.unreachable = map[string]bool{}
	}
	if reachable {
		delete(cs.unreachable, name)
	} else {
		cs.unreachable[name] = true
	}
}

// ConfigStore returns the configuration store the broker's cluster shares
// with others, nil when it has one of its own.
func (b *Broker) ConfigStore() *ConfigStore { return b.cs }

// missingLocalCluster reports whether tn's namespace is replicated to
// clusters that leave the broker's own out, with Pulsar's reason: a
// cluster does not serve such a namespace's topics (lookups and
// partitioned-topic metadata fail with MetadataError, as Pulsar's
// checkLocalOrGetPeerReplicationCluster refuses them when no peer cluster
// serves it; pulsarsim redirects to no peer).
func (b *Broker) missingLocalCluster(tn TopicName) (string, bool) {
	if b.cs == nil {
		return "", false
	}
	ns := tn.NamespaceName()
	b.mu.Lock()
	p := b.data.NamespacePolicies[ns]
	b.mu.Unlock()
	if p.ReplicationClusters == nil || len(*p.ReplicationClusters) == 0 || slices.Contains(*p.ReplicationClusters, b.name) {
		return "", false
	}
	return fmt.Sprintf("Namespace missing local cluster name in clusters list: local_cluster=%s ns=%s clusters=[%s]",
		b.name, ns, strings.Join(*p.ReplicationClusters, ", ")), true
}

// refusesForeign is missingLocalCluster's verdict alone.
func (b *Broker) refusesForeign(tn TopicName) bool {
	_, ok := b.missingLocalCluster(tn)
	return ok
}

// TenantAllowedClusters returns the clusters a tenant may use as its
// creation or last update gave them, nil when none was given (ok false:
// no such tenant).
func (b *Broker) TenantAllowedClusters(tenant string) (clusters []string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.registryLocked().Tenants[tenant] {
		return nil, false
	}
	return slices.Clone(b.data.TenantClusters[tenant]), true
}

// SetTenantAllowedClusters sets the clusters a tenant may use (nil: forget
// them); ErrTenantNotFound when there is no such tenant.
func (b *Broker) SetTenantAllowedClusters(tenant string, clusters []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.registryLocked().Tenants[tenant] {
		return ErrTenantNotFound
	}
	if clusters == nil {
		delete(b.data.TenantClusters, tenant)
		return nil
	}
	b.data.TenantClusters[tenant] = slices.Clone(clusters)
	return nil
}
