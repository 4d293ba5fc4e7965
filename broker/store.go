package broker

import (
	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/store"
)

// shared is what the brokers of one cluster share: the store (package
// store: metadata, ledgers, bundle ownership) and the locks that guard it.
// The store knows nothing of connections, consumers or dispatchers: a broker
// loads a topic from its ledger, and gives the ledger back when the topic is
// unloaded or the broker goes (load.go).
//
// mu is the broker lock of the lock order (doc.go): every broker of a
// cluster takes the one lock of what they share, and the store is read and
// written only under it (a loaded topic's log and cursors excepted: they are
// the topic's, under its lock). secmu guards data.Security, the tenant admin
// roles and permissions; it is a leaf lock (nothing else is taken while
// holding it).
type shared struct {
	// mu and secmu are the configuration store's when the cluster shares
	// one with other clusters (ConfigStore): the clusters then take the
	// same broker lock, since they share what it guards. With a data
	// directory they queue the store's metadata as they are released
	// (datadir.go).
	mu    *storeLock
	secmu *storeLock
	data  *store.Store
	// disk is the data directory the store is kept in (datadir.go), nil
	// without one; diskErr is why it could not be opened.
	disk    *durable.Disk
	diskErr error
	// restored is set when the data directory held a store: the cluster's
	// metadata was initialized when it was new.
	restored bool
	// members are the cluster's brokers by index, each the one serving
	// under that index now (a restart replaces it); under mu.
	members map[int]*Broker
	// txns are the cluster's transaction coordinators: any broker serves
	// them, as Pulsar's coordinators recover from their log on whichever
	// broker owns their partition (txn.go).
	txns transactions
	// meta is the configuration store's cluster metadata and the dynamic
	// settings (clustermeta.go), under its own leaf lock.
	meta *clusterMeta
	// name is the cluster's name, cs the configuration store it shares
	// with other clusters (nil for none), geo its replication state
	// (geo.go).
	name string
	cs   *ConfigStore
	geo  *geoState
}

// newShared returns what a new cluster's brokers share, holding what a
// fresh standalone holds: public/default with the broker's backlog quotas
// written into it.
func newShared(cfg config) *shared {
	if cfg.configStore != nil {
		return cfg.configStore.newShared(cfg)
	}
	st := store.New()
	st.NamespacePolicies["public/default"] = Policies{
		BacklogQuota:           cfg.policies.Clone().BacklogQuota,
		MessageAgeBacklogQuota: cfg.policies.Clone().MessageAgeBacklogQuota,
	}
	s := &shared{mu: &storeLock{}, secmu: &storeLock{}, data: st, members: map[int]*Broker{},
		meta: newClusterMeta(cfg.clusterName), name: cfg.clusterName, geo: newGeoState()}
	if cfg.dataDir != "" {
		s.openDataDir(cfg)
	}
	return s
}

// initializeClusterMetadata writes what Pulsar's initialize-cluster-metadata
// writes for a new cluster (store.InitializeClusterMetadata).
func (s *shared) initializeClusterMetadata() {
	if s.restored {
		return // done when the data directory was new
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tn, _ := ParseTopicName(CoordinatorAssignTopic)
	s.data.InitializeClusterMetadata(tn.String())
}

// The store's values, by the names the broker's code gives them.
type (
	entry             = store.Entry
	entryLog          = store.Log
	compactedView     = store.CompactedView
	ledger            = store.Ledger
	durableSub        = store.DurableSub
	storedSchema      = store.Schema
	namespaceRegistry = store.Registry
	securityPolicies  = store.Security
)
