package broker

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Broker settings changed at run time, as Pulsar's dynamic configuration:
// a setting whose ServiceConfiguration field is marked dynamic may be set
// (and removed again) through the admin API; the value is kept in the
// configuration store, shared by the brokers of a cluster, as written. The
// only check Pulsar makes is loadManagerClassName's (a class it can load);
// a value that does not parse is kept and not applied.
//
// pulsarsim applies the settings of topic creation on first use
// (allowAutoTopicCreation, allowAutoTopicCreationType, defaultNumPartitions,
// maxNumPartitionsPerPartitionedTopic) at once; the others are kept and
// served only.

// dynamicConfigNames are the settings Pulsar 4.0.8 lets the admin API
// change at run time (BrokerService.getDynamicConfiguration).
var dynamicConfigNames = strings.Fields(`
	allowAutoSubscriptionCreation allowAutoTopicCreation allowAutoTopicCreationType
	allowOverrideEntryFilters autoSkipNonRecoverableData bookkeeperUseV2WireProtocol
	brokerClientAuthenticationParameters brokerClientAuthenticationPlugin
	brokerClientTlsEnabled brokerDeleteInactivePartitionedTopicMetadataEnabled
	brokerDeleteInactiveTopicsEnabled brokerDeleteInactiveTopicsFrequencySeconds
	brokerDeleteInactiveTopicsMaxInactiveDurationSeconds brokerDeleteInactiveTopicsMode
	brokerPublisherThrottlingMaxByteRate brokerPublisherThrottlingMaxMessageRate
	brokerPublisherThrottlingTickTimeMillis brokerShutdownTimeoutMs
	clientLibraryVersionCheckEnabled configurationMetadataSyncEventTopic
	defaultNamespaceBundleSplitAlgorithm defaultNumPartitions defaultNumberOfNamespaceBundles
	dispatchThrottlingOnBatchMessageEnabled dispatchThrottlingOnNonBacklogConsumerEnabled
	dispatchThrottlingRateInByte dispatchThrottlingRateInMsg
	dispatchThrottlingRatePerReplicatorInByte dispatchThrottlingRatePerReplicatorInMsg
	dispatchThrottlingRatePerSubscriptionInByte dispatchThrottlingRatePerSubscriptionInMsg
	dispatchThrottlingRatePerTopicInByte dispatchThrottlingRatePerTopicInMsg
	dispatchThrottlingRateRelativeToPublishRate
	dispatcherDispatchMessagesInSubscriptionThread
	dispatcherEntryFilterRescheduledMessageDelay dispatcherMaxReadBatchSize
	dispatcherMaxReadSizeBytes dispatcherMaxRoundRobinBatchSize dispatcherMinReadBatchSize
	dispatcherPauseOnAckStatePersistentEnabled dispatcherReadFailureBackoffInitialTimeInMs
	dispatcherReadFailureBackoffMandatoryStopTimeInMs dispatcherReadFailureBackoffMaxTimeInMs
	entryFilterNames entryFiltersDirectory exposeBundlesMetricsInPrometheus
	failureDomainsEnabled flowOrQpsDifferenceThresholdPercentage forceDeleteNamespaceAllowed
	forceDeleteTenantAllowed httpRequestsFailOnUnknownPropertiesEnabled
	isAllowAutoUpdateSchemaEnabled keySharedLookAheadMsgInReplayThresholdPerConsumer
	keySharedLookAheadMsgInReplayThresholdPerSubscription keySharedUnblockingIntervalMs
	loadBalanceSheddingDelayInSeconds loadBalancerAutoBundleSplitEnabled
	loadBalancerAutoUnloadSplitBundlesEnabled
	loadBalancerAverageResourceUsageDifferenceThresholdPercentage
	loadBalancerAvgShedderHighThreshold loadBalancerAvgShedderHitCountHighThreshold
	loadBalancerAvgShedderHitCountLowThreshold loadBalancerAvgShedderLowThreshold
	loadBalancerBandwidthInResourceWeight loadBalancerBandwidthOutResourceWeight
	loadBalancerBandwithInResourceWeight loadBalancerBandwithOutResourceWeight
	loadBalancerBrokerLoadDataTTLInSeconds loadBalancerBrokerLoadTargetStd
	loadBalancerBrokerMaxTopics loadBalancerBrokerOverloadedThresholdPercentage
	loadBalancerBrokerThresholdShedderPercentage
	loadBalancerBundleUnloadMinThroughputThreshold loadBalancerCPUResourceWeight
	loadBalancerDebugModeEnabled loadBalancerDirectMemoryResourceWeight
	loadBalancerDistributeBundlesEvenlyEnabled loadBalancerHistoryResourcePercentage
	loadBalancerHostUsageCheckIntervalMinutes loadBalancerLoadSheddingStrategy
	loadBalancerMaxNumberOfBrokerSheddingPerCycle
	loadBalancerMaxNumberOfBundlesInBundleLoadReport
	loadBalancerMaxNumberOfBundlesToSplitPerCycle loadBalancerMemoryResourceWeight
	loadBalancerMsgRateDifferenceShedderThreshold
	loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold
	loadBalancerNamespaceBundleMaxBandwidthMbytes loadBalancerNamespaceBundleMaxMsgRate
	loadBalancerNamespaceBundleMaxSessions loadBalancerNamespaceBundleMaxTopics
	loadBalancerNamespaceBundleSplitConditionHitCountThreshold
	loadBalancerNamespaceMaximumBundles loadBalancerReportUpdateMaxIntervalMinutes
	loadBalancerReportUpdateMinIntervalMillis loadBalancerReportUpdateThresholdPercentage
	loadBalancerServiceUnitStateMaxConcurrentOverrides loadBalancerServiceUnitTableViewSyncer
	loadBalancerSheddingBundlesWithPoliciesEnabled
	loadBalancerSheddingConditionHitCountThreshold loadBalancerSheddingEnabled
	loadBalancerSheddingGracePeriodMinutes loadBalancerSheddingIntervalMinutes
	loadBalancerTransferEnabled loadManagerClassName
	managedLedgerCacheEvictionTimeThresholdMillis managedLedgerCacheEvictionWatermark
	managedLedgerCacheSizeMB managedLedgerCursorResetLedgerCloseTimestampMaxClockSkewMillis
	managedLedgerForceRecovery managedLedgerInactiveLedgerRolloverTimeSeconds
	managedLedgerInactiveOffloadedLedgerEvictionTimeSeconds
	managedLedgerMaxBacklogBetweenCursorsForCaching
	managedLedgerMinimumBacklogCursorsForCaching managedLedgerMinimumBacklogEntriesForCaching
	managedLedgerTraceTaskExecution maxConcurrentLookupRequest maxConcurrentTopicLoadRequest
	maxMessagePublishBufferSizeInMB maxNamespacesPerTenant
	maxNumPartitionsPerPartitionedTopic maxPublishRatePerTopicInBytes
	maxPublishRatePerTopicInMessages maxTenants maxTopicsPerNamespace
	maxUnloadBundleNumPerShedding maxUnloadPercentage metadataSyncEventTopic minUnloadMessage
	minUnloadMessageThroughput namespaceBundleUnloadingTimeoutMs preciseDispatcherFlowControl
	preferLaterVersions replicationProducerQueueSize replicationStartAt
	resourceUsageTransportPublishIntervalInSecs schemaLedgerForceRecovery
	skipBrokerShutdownOnOOM strictlyVerifySubscriptionName
	subscribeRatePeriodPerConsumerInSecond subscribeThrottlingRatePerConsumer
	subscriptionKeySharedEnable subscriptionKeySharedUseClassicPersistentImplementation
	subscriptionRedeliveryTrackerEnabled subscriptionSharedUseClassicPersistentImplementation
	subscriptionTypesEnabled superUserRoles supportedNamespaceBundleSplitAlgorithms
	topicFactoryClassName topicNameCacheMaxCapacity topicPublisherThrottlingTickTimeMillis
	transactionLogBatchedWriteEnabled transactionPendingAckBatchedWriteEnabled
	unblockStuckSubscriptionEnabled
`)

// loadManagers are the load managers a Pulsar 4.0.8 broker can load.
var loadManagers = []string{
	"org.apache.pulsar.broker.loadbalance.NoopLoadManager",
	"org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl",
	"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
	"org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
}

// ErrNotDynamic is returned for a setting that cannot change at run time
// (or that Pulsar does not have).
var ErrNotDynamic = errors.New("non-dynamic configuration")

// ErrInvalidDynamicValue is returned for a value Pulsar's check refuses.
var ErrInvalidDynamicValue = errors.New("Invalid dynamic-config value")

// DynamicConfigNames returns the names of the settings that may change at
// run time, sorted.
func DynamicConfigNames() []string { return slices.Clone(dynamicConfigNames) }

// DynamicConfig returns the settings set at run time, by name.
func (b *Broker) DynamicConfig() map[string]string {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.dynamic)
}

// SetDynamicConfig sets a setting at run time, for every broker of the
// cluster. It fails with ErrInvalidDynamicValue for a load manager Pulsar
// cannot load, then ErrNotDynamic for a setting that is not dynamic.
func (b *Broker) SetDynamicConfig(name, value string) error {
	if name == "loadManagerClassName" && !slices.Contains(loadManagers, value) {
		return ErrInvalidDynamicValue
	}
	if _, ok := slices.BinarySearch(dynamicConfigNames, name); !ok {
		return ErrNotDynamic
	}
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dynamic[name] = value
	return nil
}

// DeleteDynamicConfig removes a setting set at run time (nothing when it
// is not set): the broker's own applies again. ErrNotDynamic for a setting
// that is not dynamic.
func (b *Broker) DeleteDynamicConfig(name string) error {
	if _, ok := slices.BinarySearch(dynamicConfigNames, name); !ok {
		return ErrNotDynamic
	}
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.dynamic, name)
	return nil
}

// dynamicAutoTopicCreation applies the settings of topic creation on first
// use set at run time to a (the broker's) and returns the limit of
// partitions in force. Values that do not parse are not applied, as Pulsar
// logs and skips them.
func (m *clusterMeta) dynamicAutoTopicCreation(a AutoTopicCreation, maxPartitions int) (AutoTopicCreation, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.dynamic["allowAutoTopicCreation"]; ok {
		a.Allow = strings.EqualFold(v, "true")
	}
	if v, ok := m.dynamic["allowAutoTopicCreationType"]; ok {
		if t := TopicType(v); t == TopicTypePartitioned || t == TopicTypeNonPartitioned {
			a.Type = t
		}
	}
	if n, err := strconv.ParseInt(m.dynamic["defaultNumPartitions"], 10, 32); err == nil {
		a.DefaultNumPartitions = int(n)
	}
	if n, err := strconv.ParseInt(m.dynamic["maxNumPartitionsPerPartitionedTopic"], 10, 32); err == nil {
		maxPartitions = int(n)
	}
	return a, maxPartitions
}
