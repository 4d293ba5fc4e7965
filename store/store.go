package store

import (
	"sync/atomic"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/model"
)

// Store is one cluster's store: what its brokers share and what outlives
// each of them, as Pulsar keeps it in its metadata store and in BookKeeper.
type Store struct {
	// Partitioned is the partitioned-topic metadata: base name ->
	// partitions.
	Partitioned map[string]int
	// Schemas are the topics' schemas by base topic name, version = index.
	Schemas map[string][]Schema
	// NamespacePolicies and TopicPolicies hold the policies set on a
	// namespace and on a topic (by base name). PolicyGen counts their
	// changes: it changes with them, and is read atomically by topics
	// checking the policies they cached.
	NamespacePolicies map[string]model.Policies
	TopicPolicies     map[string]model.Policies
	PolicyGen         atomic.Uint64
	// Registry holds the tenants and namespaces.
	Registry Registry
	// NextLedger is the id the next ledger gets.
	NextLedger uint64
	// Ledgers are the persistent topics' ledgers, by canonical name.
	Ledgers map[string]*Ledger
	// Owners says which broker owns which namespace bundle.
	Owners *bundles.Table
	// Security holds the tenant admin roles and the permissions.
	Security Security
	// AntiAffinityGroups are the namespaces' anti-affinity groups, kept
	// as Pulsar keeps them in a namespace's local policies: apart from the
	// namespace, which need not exist.
	AntiAffinityGroups map[string]string
}

// New returns an empty store.
func New() *Store {
	return &Store{
		Partitioned:       map[string]int{},
		Schemas:           map[string][]Schema{},
		NamespacePolicies: map[string]model.Policies{},
		TopicPolicies:     map[string]model.Policies{},
		NextLedger:        1,
		Ledgers:           map[string]*Ledger{},
		Owners:            bundles.NewTable(),

		AntiAffinityGroups: map[string]string{},
	}
}

// Pulsar's initialize-cluster-metadata, which a cluster's brokers start
// on, creates public/default and pulsar/system with 16 bundles whatever
// defaultNumberOfNamespaceBundles says, and the transaction coordinators'
// assign topic with 16 partitions, transactions on or off
// (PulsarClusterMetadataSetup).
const (
	InitialBundles      = 16
	InitialCoordinators = 16
)

// InitializeClusterMetadata writes what initialize-cluster-metadata writes
// for a new cluster: the bundles of public/default and pulsar/system, and
// the partitions of assignTopic, the coordinators' assign topic.
func (s *Store) InitializeClusterMetadata(assignTopic string) {
	for _, ns := range []string{"public/default", "pulsar/system"} {
		s.Owners.Split(ns, InitialBundles)
	}
	s.Partitioned[assignTopic] = InitialCoordinators
}
