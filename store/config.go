package store

import (
	"sync/atomic"

	"github.com/pulsarsim/pulsarsim/model"
)

// Config is the part of a store that Pulsar keeps in its configuration
// store (the global ZooKeeper), which several clusters may share: tenants
// with their allowed clusters, namespaces with their policies (replication
// clusters, permissions), partitioned-topic metadata, and the permissions
// on topics. A Store embeds it by pointer, so that the stores of clusters
// sharing one configuration store hold the same Config; everything else of
// a Store (ledgers, bundle ownership, schemas, topic policies, local
// policies) is its cluster's own.
type Config struct {
	// Partitioned is the partitioned-topic metadata: base name ->
	// partitions.
	Partitioned map[string]int
	// PartitionedProperties are the properties of the partitioned topics
	// created or updated with some (Pulsar keeps them in the partitioned
	// metadata): base name -> properties.
	PartitionedProperties map[string]map[string]string
	// NamespacePolicies hold the policies set on a namespace. PolicyGen
	// counts the changes of every policy (a namespace's or a topic's): it
	// changes with them, and is read atomically by topics checking the
	// policies they cached.
	NamespacePolicies map[string]model.Policies
	PolicyGen         atomic.Uint64
	// Registry holds the tenants and namespaces.
	Registry Registry
	// Security holds the tenant admin roles and the permissions.
	Security Security
	// TenantClusters are the clusters each tenant may use (its
	// allowedClusters), for the tenants created with a list.
	TenantClusters map[string][]string
}

// NewConfig returns an empty configuration store.
func NewConfig() *Config {
	return &Config{
		Partitioned:           map[string]int{},
		PartitionedProperties: map[string]map[string]string{},
		NamespacePolicies:     map[string]model.Policies{},
		TenantClusters:        map[string][]string{},
	}
}
