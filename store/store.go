package store

import (
	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/model"
)

// Store is one cluster's store: what its brokers share and what outlives
// each of them, as Pulsar keeps it in its metadata store and in BookKeeper.
type Store struct {
	// Config is what the configuration store keeps (tenants, namespaces
	// and their policies, partitioned-topic metadata, permissions), shared
	// with the other clusters of the same configuration store.
	*Config
	// Schemas are the topics' schemas by base topic name, version = index.
	Schemas map[string][]Schema
	// TopicPolicies hold the policies set on a topic (by base name), a
	// cluster's own as Pulsar keeps them in its system topic; Config's
	// PolicyGen counts their changes too.
	TopicPolicies map[string]model.Policies
	// NextLedger is the id the next ledger gets.
	NextLedger uint64
	// NextProducerPrefix is the number the next broker to start takes for
	// the producer names it generates ("<cluster>-<prefix>-<n>"), as
	// Pulsar's brokers take theirs from a counter in the metadata store
	// (/counters/producer-name): a broker started again on the same store
	// generates names no earlier run gave out.
	NextProducerPrefix uint64
	// Ledgers are the persistent topics' ledgers, by canonical name.
	Ledgers map[string]*Ledger
	// Owners says which broker owns which namespace bundle.
	Owners *bundles.Table
	// AntiAffinityGroups are the namespaces' anti-affinity groups, kept
	// as Pulsar keeps them in a namespace's local policies: apart from the
	// namespace, which need not exist.
	AntiAffinityGroups map[string]string
	// LocalPolicies are the rest of the namespaces' local policies that
	// pulsarsim keeps (their bookie affinity groups): a namespace has an
	// entry once any of its local policies was written, its anti-affinity
	// group too, as Pulsar then has the node.
	LocalPolicies map[string]LocalPolicies
}

// LocalPolicies are a namespace's local policies beyond its anti-affinity
// group.
type LocalPolicies struct {
	// BookieAffinity is its bookie affinity group, nil when none is set.
	BookieAffinity *BookieAffinityGroup `json:",omitempty"`
}

// BookieAffinityGroup is a namespace's bookie affinity group: the bookie
// groups its ledgers are placed in first and second (nil: not set).
type BookieAffinityGroup struct {
	Primary   *string `json:",omitempty"`
	Secondary *string `json:",omitempty"`
}

// New returns an empty store with a configuration store of its own.
func New() *Store { return NewWithConfig(NewConfig()) }

// NewWithConfig returns an empty store over the configuration store c,
// which other stores may share.
func NewWithConfig(c *Config) *Store {
	return &Store{
		Config:        c,
		Schemas:       map[string][]Schema{},
		TopicPolicies: map[string]model.Policies{},
		NextLedger:    1,
		Ledgers:       map[string]*Ledger{},
		Owners:        bundles.NewTable(),

		AntiAffinityGroups: map[string]string{},
		LocalPolicies:      map[string]LocalPolicies{},
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
