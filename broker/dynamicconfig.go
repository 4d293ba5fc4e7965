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
// pulsarsim applies at once, to the topics already loaded too, the
// settings a standalone applies at run time to what pulsarsim has: topic
// creation on first use (allowAutoTopicCreation, allowAutoTopicCreationType,
// defaultNumPartitions, maxNumPartitionsPerPartitionedTopic), the
// defaults of the topic policies dynamicPolicies lists, and
// defaultNumberOfNamespaceBundles for the namespaces created after. The
// others are kept and served only.

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
	m.dynamic[name] = value
	m.mu.Unlock()
	b.dynamicChanged()
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
	delete(m.dynamic, name)
	m.mu.Unlock()
	b.dynamicChanged()
	return nil
}

// dynamicAutoTopicCreation applies the settings of topic creation on first
// use set at run time to a (the broker's) and returns the limit of
// partitions in force. Values that do not parse are not applied, as Pulsar
// logs and skips them.
func (m *clusterMeta) dynamicAutoTopicCreation(a AutoTopicCreation, maxPartitions int) (AutoTopicCreation, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.autoTopicCreationLocked(a), m.intLocked("maxNumPartitionsPerPartitionedTopic", maxPartitions)
}

func (m *clusterMeta) autoTopicCreationLocked(a AutoTopicCreation) AutoTopicCreation {
	if v, ok := m.dynamic["allowAutoTopicCreation"]; ok {
		a.Allow = strings.EqualFold(v, "true")
	}
	if v, ok := m.dynamic["allowAutoTopicCreationType"]; ok {
		if t := TopicType(v); t == TopicTypePartitioned || t == TopicTypeNonPartitioned {
			a.Type = t
		}
	}
	a.DefaultNumPartitions = m.intLocked("defaultNumPartitions", a.DefaultNumPartitions)
	return a
}

// dynamicPolicies returns the broker-level policies base with the settings
// set at run time that a broker applies to its topics in their place: the
// per-topic, per-subscription and per-replicator dispatch rates
// (dispatchThrottlingRatePer{Topic,Subscription,Replicator}In{Msg,Byte}),
// the publish rate per topic (maxPublishRatePerTopicIn{Messages,Bytes}),
// the subscribe rate (subscribeThrottlingRatePerConsumer,
// subscribeRatePeriodPerConsumerInSecond), isAllowAutoUpdateSchemaEnabled
// (for the namespaces that do not set theirs), the inactive-topic policy (brokerDeleteInactiveTopicsEnabled,
// ...MaxInactiveDurationSeconds, ...Mode) and topic creation on first use.
// A setting set alone keeps its partner's configured value, as Pulsar
// builds each rate from both fields of its ServiceConfiguration.
func (m *clusterMeta) dynamicPolicies(base Policies) Policies {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.dynamic) == 0 {
		return base
	}
	p := base.Clone()
	rate := func(r *DispatchRate, msgs, bytes string) {
		r.Messages = m.intLocked(msgs, r.Messages)
		r.Bytes = m.int64Locked(bytes, r.Bytes)
	}
	rate(p.DispatchRate, "dispatchThrottlingRatePerTopicInMsg", "dispatchThrottlingRatePerTopicInByte")
	rate(p.SubscriptionDispatchRate, "dispatchThrottlingRatePerSubscriptionInMsg", "dispatchThrottlingRatePerSubscriptionInByte")
	rate(p.ReplicatorDispatchRate, "dispatchThrottlingRatePerReplicatorInMsg", "dispatchThrottlingRatePerReplicatorInByte")
	p.PublishRate.Messages = m.intLocked("maxPublishRatePerTopicInMessages", p.PublishRate.Messages)
	p.PublishRate.Bytes = m.int64Locked("maxPublishRatePerTopicInBytes", p.PublishRate.Bytes)
	p.SubscribeRate.PerConsumer = m.intLocked("subscribeThrottlingRatePerConsumer", p.SubscribeRate.PerConsumer)
	p.SubscribeRate.PeriodSeconds = m.intLocked("subscribeRatePeriodPerConsumerInSecond", p.SubscribeRate.PeriodSeconds)
	*p.AllowAutoUpdateSchema = m.boolLocked("isAllowAutoUpdateSchemaEnabled", *p.AllowAutoUpdateSchema)
	in := p.InactiveTopics
	in.DeleteWhileInactive = m.boolLocked("brokerDeleteInactiveTopicsEnabled", in.DeleteWhileInactive)
	in.MaxInactiveDurationSeconds = m.intLocked("brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", in.MaxInactiveDurationSeconds)
	if v, ok := m.dynamic["brokerDeleteInactiveTopicsMode"]; ok && InactiveTopicDeleteMode(v).Valid() {
		in.Mode = InactiveTopicDeleteMode(v)
	}
	*p.AutoTopicCreation = m.autoTopicCreationLocked(*p.AutoTopicCreation)
	return p
}

// dynamicBundles returns defaultNumberOfNamespaceBundles as set at run
// time, 0 when it is not (or is not a positive number).
func (m *clusterMeta) dynamicBundles() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.intLocked("defaultNumberOfNamespaceBundles", 0), 0)
}

// intLocked returns the setting name set at run time as an int, or def
// when it is not set or does not parse (Integer.valueOf).
func (m *clusterMeta) intLocked(name string, def int) int {
	n, err := strconv.ParseInt(m.dynamic[name], 10, 32)
	if err != nil {
		return def
	}
	return int(n)
}

// int64Locked is intLocked for a long setting (Long.valueOf).
func (m *clusterMeta) int64Locked(name string, def int64) int64 {
	n, err := strconv.ParseInt(m.dynamic[name], 10, 64)
	if err != nil {
		return def
	}
	return n
}

// boolLocked returns the boolean setting name set at run time, or def when
// it is not set; as Boolean.valueOf, anything but "true" is false.
func (m *clusterMeta) boolLocked(name string, def bool) bool {
	v, ok := m.dynamic[name]
	if !ok {
		return def
	}
	return strings.EqualFold(v, "true")
}

// dynamicChanged makes every broker of the cluster apply the settings now
// in force: the topics' cached policies are resolved again and each
// subscription dispatches what they allow, as Pulsar's configuration
// listeners update each topic's limiters.
func (b *Broker) dynamicChanged() {
	b.mu.Lock()
	b.data.PolicyGen.Add(1)
	members := slices.Collect(maps.Values(b.members))
	b.mu.Unlock()
	for _, m := range members {
		m.reapplyPolicies(func(TopicName) bool { return true })
	}
}
