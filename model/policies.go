package model

import (
	"reflect"
	"strings"
)

// Policies are the settings Pulsar keeps per namespace and per topic: limits,
// rates, quotas, retention, TTL and the like. Every field is a pointer: nil
// means unset at that level. The policy in force for a topic is resolved
// field by field, as Pulsar resolves it: the topic's own value, else its
// namespace's, else the broker's default (broker.WithDefaultPolicies, and the
// broker options that set the same values, such as broker.WithLimits).
//
// A topic's policies apply to all partitions of a partitioned topic, and a
// change applies at once to the topics it concerns.
//
// To add a policy, add a pointer field below (to a number, a bool, or a
// struct of plain values), give it a default in DefaultPolicies and a range
// check in Policies.Validate, and read it where the broker applies it
// (package broker: Topic.policiesLocked, Broker.appliedPolicies).
type Policies struct {
	// MessageTTLSeconds is the message TTL in whole seconds (Pulsar's
	// messageTTL, message_ttl_in_seconds): messages older than that leave
	// every subscription's backlog. 0 means they never expire. Default 0.
	MessageTTLSeconds *int
	// Retention is how long, and how much of, what every subscription has
	// acknowledged a topic keeps (retention_policies). Default 0 and 0.
	Retention *Retention

	// MaxProducersPerTopic is maxProducersPerTopic (topic policy
	// maxProducers): a PRODUCER on a topic with this many producers is
	// refused. 0 means no limit, the default.
	MaxProducersPerTopic *int
	// MaxConsumersPerTopic is maxConsumersPerTopic (topic policy
	// maxConsumers), counted over all subscriptions. 0: no limit.
	MaxConsumersPerTopic *int
	// MaxConsumersPerSubscription is maxConsumersPerSubscription, for
	// Shared, Failover and Key_Shared subscriptions. 0: no limit.
	MaxConsumersPerSubscription *int
	// MaxSubscriptionsPerTopic is maxSubscriptionsPerTopic, on persistent
	// topics. 0: no limit.
	MaxSubscriptionsPerTopic *int
	// MaxUnackedMessagesPerConsumer is maxUnackedMessagesPerConsumer (topic
	// policy maxUnackedMessagesOnConsumer): a Shared or Key_Shared consumer
	// of a durable subscription that holds this many unacknowledged
	// messages gets no more until it acknowledges half of them. 0: no
	// limit. Default 50,000.
	MaxUnackedMessagesPerConsumer *int
	// MaxUnackedMessagesPerSubscription is
	// maxUnackedMessagesPerSubscription (maxUnackedMessagesOnSubscription):
	// a Shared or Key_Shared subscription whose consumers hold this many
	// unacknowledged messages in all reads no new entries (redeliveries
	// still go out) until they are under half of it. The subscription
	// decides this when its unacked count changes, as Pulsar does, so a
	// new value takes effect at the next delivery, ack or redelivery. 0: no
	// limit. Default 200,000.
	MaxUnackedMessagesPerSubscription *int

	// DispatchRate limits what the topic delivers, over all of its
	// subscriptions (dispatchRate, topicDispatchRate). Default: no limit.
	DispatchRate *DispatchRate
	// SubscriptionDispatchRate limits what each subscription of the topic
	// delivers (subscriptionDispatchRate). Default: no limit.
	SubscriptionDispatchRate *DispatchRate
	// SubscriptionDispatchRates are the dispatch rates of single
	// subscriptions, by name (the dispatchRate of Pulsar's per-subscription
	// topic policies, .../{topic}/{subscription}/dispatchRate): each
	// replaces SubscriptionDispatchRate for its subscription. Set on topics
	// only; nil and an empty map both set nothing.
	SubscriptionDispatchRates map[string]DispatchRate
	// ReplicatorDispatchRate is replicatorDispatchRate, the limit of what
	// geo-replication sends to another cluster: stored and served only, as
	// a standalone replicates nowhere. Default: no limit.
	ReplicatorDispatchRate *DispatchRate
	// PublishRate limits what the topic's producers publish (publishRate,
	// publishMaxMessageRate): over it, the broker stops reading from their
	// connections until the rate allows more. Default: no limit.
	PublishRate *PublishRate

	// BacklogQuota is the destination_storage backlog quota: a limit on the
	// size of the topic's backlog and what happens over it. Default: no
	// limit (-1), producer_request_hold.
	BacklogQuota *BacklogQuota
	// MessageAgeBacklogQuota is the message_age backlog quota: a limit on
	// the age of the oldest unacknowledged message. Default: no limit (-1),
	// producer_request_hold.
	MessageAgeBacklogQuota *BacklogQuota

	// DeduplicationEnabled is deduplicationEnabled (the broker's
	// brokerDeduplicationEnabled). Default false.
	DeduplicationEnabled *bool
	// CompactionThreshold is compactionThreshold (compaction_threshold, the
	// broker's brokerServiceCompactionThresholdInBytes), in bytes: every
	// compaction check (60 s of broker time) compacts the topic when the
	// backlog of its __compaction subscription is over it. 0, the
	// default, never compacts by itself.
	CompactionThreshold *int64
	// DelayedDelivery is the delayed-delivery policy (delayedDelivery,
	// delayed_delivery_policies). Default: active, a 1 s tick, no maximum
	// delay.
	DelayedDelivery *DelayedDelivery

	// SchemaCompatibilityStrategy is the schema compatibility strategy
	// (schemaCompatibilityStrategy, schema_compatibility_strategy): which
	// new schemas a producer, a consumer or the admin API may register.
	// Default SchemaFull. Pulsar's UNDEFINED is nil here.
	SchemaCompatibilityStrategy *SchemaCompatibility
	// SchemaValidationEnforced refuses producers without a schema on a
	// topic that has one (schemaValidationEnforced,
	// isSchemaValidationEnforced). Default false.
	SchemaValidationEnforced *bool
	// AllowAutoUpdateSchema lets producers and consumers register new
	// schemas (is_allow_auto_update_schema,
	// isAllowAutoUpdateSchemaEnabled); when false only the admin API does.
	// Pulsar sets it per namespace, not per topic. Default true.
	AllowAutoUpdateSchema *bool
	// InactiveTopics is the inactive-topic policy (inactiveTopicPolicies,
	// inactive_topic_policies; inactive.go). Default: the broker's
	// WithInactiveTopicDeletion, deleted after 60 s without subscriptions.
	InactiveTopics *InactiveTopicPolicies
	// AutoTopicCreation is a namespace's autoTopicCreation policy
	// (autoTopicCreationOverride; autotopiccreation.go): whether, and of
	// which type, its topics are created on first use. Set on namespaces
	// only. Default: the broker's WithAutoTopicCreation,
	// WithAutoTopicCreationType and WithDefaultNumPartitions.
	AutoTopicCreation *AutoTopicCreation

	// Offload is the tiered-storage offload policy (offloadPolicies,
	// offload_policies; the namespace's offloadThreshold,
	// offloadThresholdInSeconds and offloadDeletionLagMs are fields of it).
	// Stored and served only: a standalone without tiered storage offloads
	// nothing. Default: none.
	Offload *OffloadPolicies
	// Persistence is the BookKeeper persistence policy (persistence,
	// persistence): ensemble and quorums, and the mark-delete rate. Stored
	// and served only, as pulsarsim keeps no bookies. Default: the
	// standalone's 1, 1, 1 and 1.0.
	Persistence *Persistence
	// SubscribeRate is subscribeRate (clusterSubscribeRate): how many
	// subscribe requests a consumer may make in a period on a persistent
	// topic (package broker, subscriberate.go). Default: no limit (0), a
	// 30 s period.
	SubscribeRate *SubscribeRate
	// ReplicationClusters are the clusters a namespace's or topic's
	// messages are replicated to (replication, replication_clusters). A
	// standalone has one cluster, so this only ever names it. Unset: the
	// namespace's, then the broker's own cluster.
	ReplicationClusters *[]string
	// SchemaAutoUpdateCompatibility is the deprecated
	// schemaAutoUpdateCompatibilityStrategy
	// (schema_auto_update_compatibility_strategy) of a namespace: stored
	// and served only, SchemaCompatibilityStrategy is the one that applies.
	SchemaAutoUpdateCompatibility *SchemaAutoUpdateCompatibility
	// EncryptionRequired is a namespace's encryptionRequired
	// (encryption_required): stored and served only. Default false.
	EncryptionRequired *bool
	// SubscriptionAuthMode is a namespace's subscriptionAuthMode
	// (subscription_auth_mode): with SubscriptionAuthPrefix and
	// authorization on, a role that is not a super-user may only use
	// subscriptions whose name starts with the role. Default
	// SubscriptionAuthNone.
	SubscriptionAuthMode *SubscriptionAuthMode
	// SubscriptionAuthRoles are a namespace's subscription permissions
	// (auth_policies.subscription_auth_roles), by subscription: with
	// authorization on, a subscription named here may be used only by the
	// roles listed (and super-users and the tenant's admins). Set on
	// namespaces only.
	SubscriptionAuthRoles map[string][]string

	// The policies below are stored and served only: pulsarsim does not
	// apply them yet (FIDELITY.md, "pulsar-admin: the commands compared").

	// SubscriptionTypesEnabled are the subscription types a topic accepts
	// (subscriptionTypesEnabled, subscription_types_enabled); nil or empty:
	// the broker's, every type.
	SubscriptionTypesEnabled *[]string
	// SubscriptionExpirationMinutes is a namespace's
	// subscriptionExpirationTime (subscription_expiration_time_minutes):
	// inactive subscriptions older than that are deleted. Default 0, never.
	SubscriptionExpirationMinutes *int
	// AutoSubscriptionCreation is autoSubscriptionCreation
	// (autoSubscriptionCreationOverride): whether a consumer may create a
	// subscription. Default: the broker's allowAutoSubscriptionCreation.
	AutoSubscriptionCreation *bool
	// MaxTopicsPerNamespace is a namespace's maxTopicsPerNamespace
	// (max_topics_per_namespace). Default 0, no limit.
	MaxTopicsPerNamespace *int
	// DeduplicationSnapshotIntervalSeconds is
	// deduplicationSnapshotInterval (deduplicationSnapshotIntervalSeconds).
	DeduplicationSnapshotIntervalSeconds *int
	// MaxMessageSize is a topic's maxMessageSize, in bytes. Default: the
	// broker's maxMessageSize.
	MaxMessageSize *int
	// NamespaceProperties are a namespace's properties (properties), keys
	// and values of the user's own. Set on namespaces only.
	NamespaceProperties map[string]string
	// DispatcherPauseOnAckStatePersistent is
	// dispatcherPauseOnAckStatePersistent
	// (dispatcherPauseOnAckStatePersistentEnabled). Default false.
	DispatcherPauseOnAckStatePersistent *bool
}

// OffloadPolicies is a tiered-storage offload policy (Pulsar's
// OffloadPoliciesImpl); nil pointers are unset (Pulsar writes no value for
// them).
type OffloadPolicies struct {
	// Driver is managedLedgerOffloadDriver (aws-s3, google-cloud-storage,
	// filesystem, azureblob, aliyun-oss, S3).
	Driver string
	// ThresholdBytes is managedLedgerOffloadThresholdInBytes (the
	// namespace's offloadThreshold).
	ThresholdBytes *int64
	// ThresholdSeconds is managedLedgerOffloadThresholdInSeconds
	// (offloadThresholdInSeconds).
	ThresholdSeconds *int64
	// DeletionLagMillis is managedLedgerOffloadDeletionLagInMillis
	// (offloadDeletionLagMs).
	DeletionLagMillis *int64
	// Settings are the policy's other fields that were set (the bucket,
	// region and endpoint, a driver's own settings and credentials, thread
	// counts, block sizes...), by Pulsar's field name, each as its JSON
	// text. Replaced whole, never changed in place.
	Settings map[string]string
}

// OffloadDrivers are the offload drivers Pulsar 4.0 knows.
var OffloadDrivers = []string{"S3", "aws-s3", "google-cloud-storage", "filesystem", "azureblob", "aliyun-oss"}

// Validate checks the driver and the bucket as Pulsar does when a whole
// policy is set (a namespace's offload threshold alone makes a policy
// without a driver): a driver Pulsar knows, in any case, and for all but
// filesystem a bucket (the common one, or the driver's own for S3 and
// GCS).
func (o OffloadPolicies) Validate() error {
	known := false
	for _, d := range OffloadDrivers {
		known = known || strings.EqualFold(o.Driver, d)
	}
	if !known {
		return Errorf(ErrInvalidPolicy, "The driver is not supported, support value: %s", strings.Join(OffloadDrivers, ","))
	}
	set := func(name string) bool {
		v, ok := o.Settings[name]
		return ok && strings.Trim(strings.TrimSpace(v), `"`) != ""
	}
	switch {
	case strings.EqualFold(o.Driver, "filesystem"), set("managedLedgerOffloadBucket"),
		(strings.EqualFold(o.Driver, "S3") || strings.EqualFold(o.Driver, "aws-s3")) && set("s3ManagedLedgerOffloadBucket"),
		strings.EqualFold(o.Driver, "google-cloud-storage") && set("gcsManagedLedgerOffloadBucket"):
		return nil
	}
	return Errorf(ErrInvalidPolicy, "The bucket must be specified for namespace offload.")
}

// Persistence is a persistence policy (Pulsar's PersistencePolicies).
type Persistence struct {
	// Ensemble, WriteQuorum and AckQuorum are bookkeeperEnsemble,
	// bookkeeperWriteQuorum and bookkeeperAckQuorum.
	Ensemble, WriteQuorum, AckQuorum int
	// MaxMarkDeleteRate is managedLedgerMaxMarkDeleteRate, mark-deletes a
	// second (0: no limit).
	MaxMarkDeleteRate float64
}

// The broker's limits on a persistence policy (Pulsar's
// managedLedgerMaxEnsembleSize, managedLedgerMaxWriteQuorum and
// managedLedgerMaxAckQuorum, 5 by default).
const (
	MaxEnsembleSize = 5
	MaxWriteQuorum  = 5
	MaxAckQuorum    = 5
)

// Validate checks the ensemble and quorums as Pulsar does: each within the
// broker's limit and positive, and ensemble >= write quorum >= ack quorum.
func (p Persistence) Validate() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{{"Ensemble", p.Ensemble, MaxEnsembleSize}, {"WriteQuorum", p.WriteQuorum, MaxWriteQuorum}, {"AckQuorum", p.AckQuorum, MaxAckQuorum}} {
		if f.v <= 0 || f.v > f.max {
			return Errorf(ErrInvalidPolicy, "Bookkeeper-%s must be <= %d and > 0.", f.name, f.max)
		}
	}
	if p.Ensemble < p.WriteQuorum || p.WriteQuorum < p.AckQuorum {
		return Errorf(ErrInvalidPolicy, "Bookkeeper Ensemble (%d) >= WriteQuorum (%d) >= AckQuorum (%d)",
			p.Ensemble, p.WriteQuorum, p.AckQuorum)
	}
	return nil
}

// SubscribeRate is a subscribe rate limit (Pulsar's SubscribeRate): at most
// PerConsumer subscribe requests per consumer each PeriodSeconds; 0 or less
// is no limit.
type SubscribeRate struct {
	// PerConsumer is subscribeThrottlingRatePerConsumer.
	PerConsumer int
	// PeriodSeconds is ratePeriodInSecond.
	PeriodSeconds int
}

// SchemaAutoUpdateCompatibility is a SchemaAutoUpdateCompatibilityStrategy,
// by its Java name.
type SchemaAutoUpdateCompatibility string

// SchemaAutoUpdateCompatibilities are the strategies, in Pulsar's ordinal
// order.
var SchemaAutoUpdateCompatibilities = []SchemaAutoUpdateCompatibility{"AutoUpdateDisabled", "Backward",
	"Forward", "Full", "AlwaysCompatible", "BackwardTransitive", "ForwardTransitive", "FullTransitive"}

// SubscriptionAuthMode is a namespace's subscription authorization mode.
type SubscriptionAuthMode string

// The subscription authorization modes, in Pulsar's ordinal order.
const (
	// SubscriptionAuthNone checks no subscription name.
	SubscriptionAuthNone SubscriptionAuthMode = "None"
	// SubscriptionAuthPrefix allows a role only subscriptions whose name
	// starts with the role.
	SubscriptionAuthPrefix SubscriptionAuthMode = "Prefix"
)

// Retention is a retention policy (Pulsar's RetentionPolicies). Both zero
// keeps nothing that is acknowledged; -1 means no limit of that kind.
type Retention struct {
	// Minutes is retentionTimeInMinutes.
	Minutes int
	// SizeMB is retentionSizeInMB.
	SizeMB int64
}

// DispatchRate is a dispatch rate limit (Pulsar's DispatchRate): at most
// Messages messages and Bytes bytes each PeriodSeconds. A limit of 0 or less
// is no limit.
type DispatchRate struct {
	// Messages is dispatchThrottlingRateInMsg.
	Messages int
	// Bytes is dispatchThrottlingRateInByte.
	Bytes int64
	// PeriodSeconds is ratePeriodInSecond (less than 1 counts as 1).
	PeriodSeconds int
	// RelativeToPublishRate is relativeToPublishRate: the limits are added
	// to the topic's publish rate.
	RelativeToPublishRate bool
}

// PublishRate is a publish rate limit (Pulsar's PublishRate): at most
// Messages messages and Bytes bytes a second. A limit of 0 or less is no
// limit.
type PublishRate struct {
	// Messages is publishThrottlingRateInMsg.
	Messages int
	// Bytes is publishThrottlingRateInByte.
	Bytes int64
}

// BacklogQuotaPolicy is what a broker does to a topic over its backlog
// quota (Pulsar's BacklogQuota.RetentionPolicy).
type BacklogQuotaPolicy string

// The backlog quota policies.
const (
	// ProducerRequestHold refuses new producers with
	// ProducerBlockedQuotaExceededError and disconnects the topic's
	// producers at each backlog check.
	ProducerRequestHold BacklogQuotaPolicy = "producer_request_hold"
	// ProducerException is the same with
	// ProducerBlockedQuotaExceededException.
	ProducerException BacklogQuotaPolicy = "producer_exception"
	// ConsumerBacklogEviction moves the slowest subscriptions forward,
	// dropping their oldest unacknowledged messages.
	ConsumerBacklogEviction BacklogQuotaPolicy = "consumer_backlog_eviction"
)

// BacklogQuota is one backlog quota (Pulsar's BacklogQuota): of type
// destination_storage (Policies.BacklogQuota), LimitBytes limits the size
// of the backlog; of type message_age (Policies.MessageAgeBacklogQuota),
// LimitSeconds limits the age of its oldest message.
type BacklogQuota struct {
	// LimitBytes is limitSize; negative means no limit.
	LimitBytes int64
	// LimitSeconds is limitTime; 0 or less means no limit.
	LimitSeconds int
	// Policy is what happens over the limit.
	Policy BacklogQuotaPolicy
}

// DelayedDelivery is a delayed-delivery policy (Pulsar's
// DelayedDeliveryPolicies).
type DelayedDelivery struct {
	// Active is whether deliver_at_time is honoured; when false, delayed
	// messages are delivered at once.
	Active bool
	// TickMillis is tickTime: a delayed message due within one tick is
	// delivered.
	TickMillis int64
	// MaxDelayMillis is maxDeliveryDelayInMillis: a message delayed further
	// than that is refused; 0 means no maximum.
	MaxDelayMillis int64
}

// Pulsar 4.0's defaults for the unacknowledged-message limits.
const (
	DefaultMaxUnackedMessagesPerConsumer     = 50_000
	DefaultMaxUnackedMessagesPerSubscription = 200_000
)

// DefaultPolicies are the broker-level policies: every field set, with
// Pulsar 4.0's standalone defaults.
func DefaultPolicies() Policies {
	noQuota := BacklogQuota{LimitBytes: -1, LimitSeconds: -1, Policy: ProducerRequestHold}
	return Policies{
		MessageTTLSeconds:                 new(0), // ttlDurationDefaultInSeconds
		Retention:                         &Retention{},
		MaxProducersPerTopic:              new(0),
		MaxConsumersPerTopic:              new(0),
		MaxConsumersPerSubscription:       new(0),
		MaxSubscriptionsPerTopic:          new(0),
		MaxUnackedMessagesPerConsumer:     new(DefaultMaxUnackedMessagesPerConsumer),
		MaxUnackedMessagesPerSubscription: new(DefaultMaxUnackedMessagesPerSubscription),
		DispatchRate:                      &DispatchRate{PeriodSeconds: 1},
		SubscriptionDispatchRate:          &DispatchRate{PeriodSeconds: 1},
		ReplicatorDispatchRate:            &DispatchRate{PeriodSeconds: 1},
		PublishRate:                       &PublishRate{},
		BacklogQuota:                      new(noQuota),
		MessageAgeBacklogQuota:            new(noQuota),
		DeduplicationEnabled:              new(false),
		CompactionThreshold:               new(int64(0)),
		DelayedDelivery:                   &DelayedDelivery{Active: true, TickMillis: 1000},
		SchemaCompatibilityStrategy:       new(SchemaFull),
		SchemaValidationEnforced:          new(false),
		AllowAutoUpdateSchema:             new(true),
		InactiveTopics:                    new(DefaultInactiveTopicDeletion.Policy()),
		AutoTopicCreation:                 &AutoTopicCreation{Allow: true, Type: TopicTypeNonPartitioned},
		Persistence:                       &Persistence{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, MaxMarkDeleteRate: 1},
		SubscribeRate:                     &SubscribeRate{PeriodSeconds: 30},
		SchemaAutoUpdateCompatibility:     new(SchemaAutoUpdateCompatibility("Full")),
		EncryptionRequired:                new(false),
		SubscriptionAuthMode:              new(SubscriptionAuthNone),
	}
}

// ValidatePolicies checks the ranges of the fields p sets, as an update
// does. The error is ErrInvalidPolicy, worded as Pulsar words it.
func ValidatePolicies(p Policies) error { return p.Validate() }

// Validate checks the set fields' ranges. The error is ErrInvalidPolicy,
// worded as Pulsar words it.
func (p Policies) Validate() error {
	if v := p.MessageTTLSeconds; v != nil && *v < 0 {
		return Errorf(ErrInvalidPolicy, "Invalid value for message TTL, message TTL must >= 0")
	}
	for _, f := range []struct {
		v    *int
		name string
	}{
		{p.MaxProducersPerTopic, "maxProducersPerTopic"},
		{p.MaxConsumersPerTopic, "maxConsumersPerTopic"},
		{p.MaxConsumersPerSubscription, "maxConsumersPerSubscription"},
		{p.MaxSubscriptionsPerTopic, "maxSubscriptionsPerTopic"},
		{p.MaxUnackedMessagesPerConsumer, "maxUnackedMessagesPerConsumer"},
		{p.MaxUnackedMessagesPerSubscription, "maxUnackedMessagesPerSubscription"},
	} {
		if f.v != nil && *f.v < 0 {
			return Errorf(ErrInvalidPolicy, "%s must be 0 or more", f.name)
		}
	}
	if v := p.CompactionThreshold; v != nil && *v < 0 {
		return Errorf(ErrInvalidPolicy, "compactionThreshold must be 0 or more")
	}
	if r := p.Retention; r != nil {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	if it := p.InactiveTopics; it != nil && it.Mode != "" && !it.Mode.Valid() {
		return Errorf(ErrInvalidPolicy, "Invalid inactive topic delete mode %q", it.Mode)
	}
	for _, q := range []*BacklogQuota{p.BacklogQuota, p.MessageAgeBacklogQuota} {
		if q != nil && !q.Policy.Valid() {
			return Errorf(ErrInvalidPolicy, "the attribute policy cannot be null")
		}
	}
	if v := p.SchemaCompatibilityStrategy; v != nil && !v.Valid() {
		return Errorf(ErrInvalidPolicy, "Invalid schema compatibility strategy %s", *v)
	}
	if p := p.Persistence; p != nil {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	if a := p.AutoTopicCreation; a != nil {
		if err := a.Validate(0); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a retention policy as Pulsar does.
func (r Retention) Validate() error {
	switch {
	case r.SizeMB < -1:
		return Errorf(ErrInvalidPolicy, "Invalid retention policy: size limit must be >= -1")
	case r.Minutes < -1:
		return Errorf(ErrInvalidPolicy, "Invalid retention policy: time limit must be >= -1")
	case (r.Minutes == 0) != (r.SizeMB == 0):
		return Errorf(ErrInvalidPolicy, "Invalid retention policy: Setting a single time or size limit to 0 "+
			"is invalid when one of the limits has a non-zero value. Use the value of -1 instead of 0 to "+
			"ignore a specific limit. To disable retention both limits must be set to 0.")
	}
	return nil
}

// Valid reports whether p is one of the three policies.
func (p BacklogQuotaPolicy) Valid() bool {
	return p == ProducerRequestHold || p == ProducerException || p == ConsumerBacklogEviction
}

// Or returns p with each unset field taken from fallback: the resolution of
// a lower level over a higher one, e.g. topic.Or(namespace).
func (p Policies) Or(fallback Policies) Policies {
	out := p.Clone()
	ov, fv := reflect.ValueOf(&out).Elem(), reflect.ValueOf(fallback.Clone())
	for i := range ov.NumField() {
		if ov.Field(i).IsNil() {
			ov.Field(i).Set(fv.Field(i))
		}
	}
	return out
}

// Clone copies p so that the copy shares no pointer or map with it. An
// empty map is cloned as nil: it sets nothing.
func (p Policies) Clone() Policies {
	out := p
	v := reflect.ValueOf(&out).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.IsNil():
		case f.Kind() == reflect.Map && f.Len() == 0:
			f.SetZero()
		case f.Kind() == reflect.Map:
			c := reflect.MakeMapWithSize(f.Type(), f.Len())
			for it := f.MapRange(); it.Next(); {
				c.SetMapIndex(it.Key(), it.Value())
			}
			f.Set(c)
		default:
			c := reflect.New(f.Type().Elem())
			c.Elem().Set(f.Elem())
			f.Set(c)
		}
	}
	return out
}

// IsEmpty reports whether no field is set.
func (p Policies) IsEmpty() bool {
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			return false
		}
	}
	return true
}
