package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/txn"
)

// store is what the brokers of one cluster share, and what outlives any of
// them, as Pulsar keeps it in its metadata store and in BookKeeper: tenants
// and namespaces, policies, partitioned-topic metadata, schemas, security
// policies, each persistent topic's ledger (its entries and the durable state
// of its cursors), and which broker owns which namespace bundle. It knows
// nothing of connections, consumers or dispatchers: a broker loads a topic
// from its ledger, and gives the ledger back when the topic is unloaded or
// the broker goes.
//
// mu is the broker lock of the lock order (doc.go): every broker of a
// cluster takes the one lock of their shared store.
type store struct {
	mu          sync.Mutex
	partitioned map[string]int            // partitioned topic metadata: base name -> partitions
	schemas     map[string][]storedSchema // by base topic name, version = index
	// nsPolicies and topicPolicies hold the policies set on a namespace and
	// on a topic (by base name); policyGen counts their changes (it changes
	// under mu, and is read without it by topics checking their cached
	// policies).
	nsPolicies    map[string]Policies
	topicPolicies map[string]Policies
	policyGen     atomic.Uint64
	nsreg         namespaceRegistry // tenants and namespaces of the admin API
	nextLedger    uint64

	// ledgers are the persistent topics' ledgers, by canonical name.
	ledgers map[string]*ledger
	// owners says which broker owns which bundle (package bundles).
	owners *bundles.Table

	// secmu guards sec, the tenant admin roles and permissions; it is a leaf
	// lock (nothing else is taken while holding it).
	secmu sync.Mutex
	sec   securityPolicies
}

// newStore returns the store of a new cluster, holding what a fresh
// standalone holds: public/default with the broker's backlog quotas written
// into it.
func newStore(cfg config) *store {
	return &store{
		partitioned: map[string]int{},
		schemas:     map[string][]storedSchema{},
		nsPolicies: map[string]Policies{"public/default": {
			BacklogQuota:           cfg.policies.Clone().BacklogQuota,
			MessageAgeBacklogQuota: cfg.policies.Clone().MessageAgeBacklogQuota,
		}},
		topicPolicies: map[string]Policies{},
		nextLedger:    1,
		ledgers:       map[string]*ledger{},
		owners:        bundles.NewTable(),
	}
}

// Pulsar's initialize-cluster-metadata, which a cluster's brokers start
// on, creates public/default and pulsar/system with 16 bundles whatever
// defaultNumberOfNamespaceBundles says, and the transaction coordinators'
// assign topic with 16 partitions, transactions on or off
// (PulsarClusterMetadataSetup).
const (
	initialBundles      = 16
	initialCoordinators = 16
)

// initializeClusterMetadata writes what initialize-cluster-metadata writes
// for a new cluster.
func (s *store) initializeClusterMetadata() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ns := range []string{"public/default", "pulsar/system"} {
		s.owners.Split(ns, initialBundles)
	}
	tn, _ := ParseTopicName(CoordinatorAssignTopic)
	s.partitioned[tn.String()] = initialCoordinators
}

// ledger is what survives of a persistent topic when no broker has it
// loaded, as Pulsar's managed ledger keeps it: the entries, the durable
// cursors (mark-delete position, individually acknowledged entries, batch
// index acknowledgements), and what a topic writes into its ledger's
// properties or side ledgers (termination, the exclusive producers' epoch,
// the producers' last sequence ids, the compacted view, the transaction
// buffer). Redelivery counters, pending acknowledgements, replay queues, the
// delayed-delivery index and rate limiters are a broker's memory, not kept
// here (load.go).
//
// A loaded topic uses its ledger's log and cursors under the topic's lock;
// the store's lock guards the rest, which changes only when a topic is
// loaded or released.
type ledger struct {
	id      uint64
	log     *entryLog
	created time.Time
	subs    map[string]durableSub
	// loaded is set while a broker has the topic loaded.
	loaded     bool
	terminated bool
	topicEpoch uint64
	hasEpoch   bool
	dedupLast  map[string]int64
	view       compactedView
	buf        *txn.Buffer
}

// durableSub is a durable subscription as its topic released it: its
// cursor (whose read position and redelivery counters the next load
// resets), when it was created, its cursor's ledger id and its properties.
type durableSub struct {
	cur          *cursor.Cursor
	created      time.Time
	cursorLedger uint64
	fromFirst    bool
	properties   map[string]string // the subscription's properties, kept with its cursor
}
