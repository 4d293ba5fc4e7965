package broker

import (
	"log/slog"
	"time"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/protocol"
)

// Option configures a Broker. Options are plain values: two brokers in one
// process share nothing.
type Option func(*config)

type config struct {
	// store is the cluster's store, shared with the other brokers of the
	// cluster (cluster.go), and node the broker's index in it; nil and 0
	// for a broker of its own. ownershipTimeout is how long a crashed
	// broker keeps its bundles (0: DefaultOwnershipTimeout).
	store             *shared
	node              int
	ownershipTimeout  time.Duration
	loadManager       LoadManager
	maxMessageSize    int
	autoCreateTopics  bool
	autoTopicType     TopicType // allowAutoTopicCreationType
	defaultPartitions int       // defaultNumPartitions
	maxPartitions     int       // maxNumPartitionsPerPartitionedTopic, 0: no limit
	autoNamespaces    bool
	quotaInterval     time.Duration // backlogQuotaCheckIntervalInSeconds; 0: no periodic check
	preciseQuota      bool          // preciseTimeBasedBacklogQuotaCheck
	compactionCheck   time.Duration // brokerServiceCompactionMonitorIntervalInSeconds; 0: none
	keepAlive         time.Duration
	logger            *slog.Logger
	clock             Clock
	clusterName       string
	serverVersion     string
	maxUnackedPerCons int
	batchIndexAck     bool
	ksConsistentHash  bool
	failoverDelay     time.Duration // 0: dispatch's default; negative: none
	expiryInterval    time.Duration
	limits            Limits
	handshakeTimeout  time.Duration
	writeLow          int
	writeHigh         int
	authn             *auth.Authenticator // nil: authentication off
	authz             *auth.Authorizer    // nil: authorization off
	authRefresh       time.Duration
	advertisedAddress string
	listeners         map[string]AdvertisedListener
	// policies are the broker-level policies: those WithDefaultPolicies
	// sets until New resolves them all (brokerPolicies).
	policies      Policies
	inactive      InactiveTopicDeletion
	dedup         bool // brokerDeduplicationEnabled
	transactions  bool // transactionCoordinatorEnabled
	maxActiveTxns int  // maxActiveTransactionsPerCoordinator, 0: none
	// entryMeta is the broker entry metadata written and sent
	// (entrymetadata.go).
	entryMeta BrokerEntryMetadata
	// migrationCheck is clusterMigrationCheckDurationSeconds: 0, the
	// loaded topics are not checked for a migration (migration.go).
	migrationCheck time.Duration
	// dataDir is the directory the store is kept in, "" for memory only,
	// and dataSync its sync policy (datadir.go).
	dataDir  string
	dataSync durable.Sync
	// configStore is the configuration store the cluster shares with
	// others, nil for its own (geo.go); snapshotEvery how often replicated
	// subscriptions take a snapshot (replsub.go).
	configStore   *ConfigStore
	snapshotEvery time.Duration
	// topicLoadTime is how long a topic takes to load from the store
	// (topicload.go).
	topicLoadTime time.Duration
}

func defaultConfig() config {
	return config{
		maxMessageSize:    protocol.DefaultMaxMessageSize,
		autoCreateTopics:  true,
		autoTopicType:     TopicTypeNonPartitioned,
		defaultPartitions: 1,
		keepAlive:         30 * time.Second,
		logger:            slog.New(slog.DiscardHandler),
		clock:             SystemClock{},
		clusterName:       "standalone",
		serverVersion:     "Pulsar Server4.0.0-pulsarsim",
		maxUnackedPerCons: 50000,
		batchIndexAck:     false,
		ksConsistentHash:  true,
		expiryInterval:    5 * time.Minute,
		quotaInterval:     60 * time.Second,
		compactionCheck:   60 * time.Second,
		writeLow:          DefaultWriteBufferLowWaterMark,
		writeHigh:         DefaultWriteBufferHighWaterMark,
		authRefresh:       60 * time.Second,
		inactive:          DefaultInactiveTopicDeletion,
		snapshotEvery:     time.Second,
		topicLoadTime:     DefaultTopicLoadTime,
	}
}

// WithMaxMessageSize sets maxMessageSize, advertised in CONNECTED; frames
// larger than it plus 10 KiB close their connection. Default 5 MiB.
func WithMaxMessageSize(n int) Option { return func(c *config) { c.maxMessageSize = n } }

// WithAutoTopicCreation turns topic creation on first use on or off
// (allowAutoTopicCreation; of the type WithAutoTopicCreationType sets).
// Default on, as in a Pulsar standalone.
func WithAutoTopicCreation(on bool) Option { return func(c *config) { c.autoCreateTopics = on } }

// WithKeepAlive sets the keep-alive interval: the broker pings an idle client
// every interval and drops one that stayed silent for a whole interval after a
// ping. Default 30 s, as Pulsar's keepAliveIntervalSeconds.
func WithKeepAlive(d time.Duration) Option { return func(c *config) { c.keepAlive = d } }

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the broker clock read by message TTL and delayed delivery.
// Default: the system clock.
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithClusterName sets the cluster name used in generated producer names.
// Default "standalone".
func WithClusterName(name string) Option { return func(c *config) { c.clusterName = name } }

// WithMaxUnackedMessagesPerConsumer sets maxUnackedMessagesPerConsumer for
// Shared and Key_Shared consumers; 0 means no limit. Default 50,000. It is
// the broker's default of Policies.MaxUnackedMessagesPerConsumer.
func WithMaxUnackedMessagesPerConsumer(n int) Option {
	return func(c *config) { c.maxUnackedPerCons = n }
}

// WithBatchIndexAck turns acknowledgmentAtBatchIndexLevelEnabled on or off.
// Default off, as in Pulsar 4.0 (4.0.8 ships it off; pulsar-client-go's test
// standalone turns it on). When off, an ack that names batch indexes (an
// ack_set) only clears the entry's redelivery counter: the entry stays
// unacknowledged until a whole-entry ack.
func WithBatchIndexAck(on bool) Option { return func(c *config) { c.batchIndexAck = on } }

// WithFailoverDelay sets activeConsumerFailoverDelayTimeMillis: after the
// active consumer of a Failover subscription changes, the new one gets
// nothing for this long (on the broker's clock), then everything
// unacknowledged. Default 1 s, as in Pulsar 4.0; 0 or less switches at
// once. Tests that change consumers often set it small to keep the delay's
// behaviour without its second.
func WithFailoverDelay(d time.Duration) Option {
	return func(c *config) {
		c.failoverDelay = d
		if d <= 0 {
			c.failoverDelay = -1
		}
	}
}

// WithKeySharedConsistentHashing sets subscriptionKeySharedUseConsistentHashing:
// on (the default), Key_Shared AUTO_SPLIT consumers share the hash space on
// a consistent-hash ring; off, each new consumer takes the lower half of the
// largest hash range.
func WithKeySharedConsistentHashing(on bool) Option {
	return func(c *config) { c.ksConsistentHash = on }
}
