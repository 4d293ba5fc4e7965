package testkit

import "github.com/pulsarsim/pulsarsim/broker"

// The broker's types, constants and values a test names, so that a test
// needs no other import of pulsarsim than testkit. Each is the broker's
// own (an alias), documented there.

// Types a test names.
type (
	// Fault is a fault: which commands it matches (Command, Topic, Subscription, Consumer, Producer, Count) and what it does to them (Error, Delay, Drop, Observe, Hold, Duplicate): broker.Fault.
	Fault = broker.Fault
	// FaultHandle is a fault in force: Fired, Wait, Next, Remove: broker.FaultHandle.
	FaultHandle = broker.FaultHandle
	// HeldCommand is a command a hold set aside, until it is released: broker.HeldCommand.
	HeldCommand = broker.HeldCommand
	// CommandType is a protocol command kind by its Pulsar name, as a Fault matches it: broker.CommandType.
	CommandType = broker.CommandType
	// ServerError is a Pulsar error code, as a Fault answers with it: broker.ServerError.
	ServerError = broker.ServerError
	// Policies is namespace or topic policies, each field unset (nil) or set: broker.Policies.
	Policies = broker.Policies
	// Retention is the retention policy: broker.Retention.
	Retention = broker.Retention
	// DispatchRate is a dispatch rate limit: broker.DispatchRate.
	DispatchRate = broker.DispatchRate
	// PublishRate is a publish rate limit: broker.PublishRate.
	PublishRate = broker.PublishRate
	// BacklogQuota is a backlog quota: broker.BacklogQuota.
	BacklogQuota = broker.BacklogQuota
	// BacklogQuotaPolicy is what a backlog quota does when exceeded: broker.BacklogQuotaPolicy.
	BacklogQuotaPolicy = broker.BacklogQuotaPolicy
	// DelayedDelivery is the delayed delivery policy: broker.DelayedDelivery.
	DelayedDelivery = broker.DelayedDelivery
	// InactiveTopicPolicies is the inactive topic policies: broker.InactiveTopicPolicies.
	InactiveTopicPolicies = broker.InactiveTopicPolicies
	// MessageID is a message id: ledger, entry, partition, batch index: broker.MessageID.
	MessageID = broker.MessageID
	// Message is a stored message, batches expanded: broker.Message.
	Message = broker.Message
	// ProducerMessage is a message to publish without a client (Publish): broker.ProducerMessage.
	ProducerMessage = broker.ProducerMessage
	// SubscriptionSnapshot is a subscription as the broker holds it (Subscription): broker.SubscriptionSnapshot.
	SubscriptionSnapshot = broker.SubscriptionSnapshot
	// ConsumerSnapshot is a consumer of a subscription snapshot: broker.ConsumerSnapshot.
	ConsumerSnapshot = broker.ConsumerSnapshot
	// PendingMessage is an entry pending at a consumer, with its redelivery count: broker.PendingMessage.
	PendingMessage = broker.PendingMessage
	// TopicSnapshot is a topic as the broker holds it (Topic): broker.TopicSnapshot.
	TopicSnapshot = broker.TopicSnapshot
	// Position is where a new subscription starts (Earliest, Latest, AtMessage): broker.Position.
	Position = broker.Position
	// Entry is one stored entry (Entry): broker.Entry.
	Entry = broker.Entry
	// TopicStats is a topic's statistics, as the admin API serves them (Stats): broker.TopicStats.
	TopicStats = broker.TopicStats
	// SubscriptionStats is a subscription's statistics: broker.SubscriptionStats.
	SubscriptionStats = broker.SubscriptionStats
	// ConsumerStats is a consumer's statistics: broker.ConsumerStats.
	ConsumerStats = broker.ConsumerStats
	// PublisherStats is a producer's statistics: broker.PublisherStats.
	PublisherStats = broker.PublisherStats
	// Schema is a schema (PutSchema, Schema): broker.Schema.
	Schema = broker.Schema
	// CompactionStatus is the state of a topic's compaction (CompactionStatus): broker.CompactionStatus.
	CompactionStatus = broker.CompactionStatus
	// Transaction is what the broker knows of a transaction (Transaction, Transactions): broker.Transaction.
	Transaction = broker.Transaction
	// TxnID is a transaction id: broker.TxnID.
	TxnID = broker.TxnID
	// TxnStatus is the state of a transaction, by Pulsar's name: broker.TxnStatus.
	TxnStatus = broker.TxnStatus
	// TxnMessage is a message a transaction produced: broker.TxnMessage.
	TxnMessage = broker.TxnMessage
	// TxnAck is an acknowledgement a transaction made: broker.TxnAck.
	TxnAck = broker.TxnAck
	// TxnSubscription is a subscription a transaction registered: broker.TxnSubscription.
	TxnSubscription = broker.TxnSubscription
	// Event is one broker event (Events, OnEvent): broker.Event.
	Event = broker.Event
	// EventKind is the kind of an Event: broker.EventKind.
	EventKind = broker.EventKind
	// Violation is a settlement invariant that does not hold (CheckSettlement): broker.Violation.
	Violation = broker.Violation
	// Rule is the settlement rule a Violation breaks: broker.Rule.
	Rule = broker.Rule
	// ConnectionSnapshot is a client connection as the broker holds it (Connections): broker.ConnectionSnapshot.
	ConnectionSnapshot = broker.ConnectionSnapshot
	// Clock is the broker clock (Clock, Now): broker.Clock.
	Clock = broker.Clock
)

// Pulsar's error codes, as a Fault answers with them, by the protocol's
// names (broker.ServerErrorPersistenceError).
const (
	ServerErrorUnknownError                          = broker.ServerErrorUnknownError
	ServerErrorMetadataError                         = broker.ServerErrorMetadataError
	ServerErrorPersistenceError                      = broker.ServerErrorPersistenceError
	ServerErrorAuthenticationError                   = broker.ServerErrorAuthenticationError
	ServerErrorAuthorizationError                    = broker.ServerErrorAuthorizationError
	ServerErrorConsumerBusy                          = broker.ServerErrorConsumerBusy
	ServerErrorServiceNotReady                       = broker.ServerErrorServiceNotReady
	ServerErrorProducerBlockedQuotaExceededError     = broker.ServerErrorProducerBlockedQuotaExceededError
	ServerErrorProducerBlockedQuotaExceededException = broker.ServerErrorProducerBlockedQuotaExceededException
	ServerErrorChecksumError                         = broker.ServerErrorChecksumError
	ServerErrorUnsupportedVersionError               = broker.ServerErrorUnsupportedVersionError
	ServerErrorTopicNotFound                         = broker.ServerErrorTopicNotFound
	ServerErrorSubscriptionNotFound                  = broker.ServerErrorSubscriptionNotFound
	ServerErrorConsumerNotFound                      = broker.ServerErrorConsumerNotFound
	ServerErrorTooManyRequests                       = broker.ServerErrorTooManyRequests
	ServerErrorTopicTerminatedError                  = broker.ServerErrorTopicTerminatedError
	ServerErrorProducerBusy                          = broker.ServerErrorProducerBusy
	ServerErrorInvalidTopicName                      = broker.ServerErrorInvalidTopicName
	ServerErrorIncompatibleSchema                    = broker.ServerErrorIncompatibleSchema
	ServerErrorConsumerAssignError                   = broker.ServerErrorConsumerAssignError
	ServerErrorTransactionCoordinatorNotFound        = broker.ServerErrorTransactionCoordinatorNotFound
	ServerErrorInvalidTxnStatus                      = broker.ServerErrorInvalidTxnStatus
	ServerErrorNotAllowedError                       = broker.ServerErrorNotAllowedError
	ServerErrorTransactionConflict                   = broker.ServerErrorTransactionConflict
	ServerErrorTransactionNotFound                   = broker.ServerErrorTransactionNotFound
	ServerErrorProducerFenced                        = broker.ServerErrorProducerFenced
)

// The protocol's command types, as a Fault, a hold, FailNext and
// DelayReplies match them (broker.CommandSubscribe).
const (
	CommandConnect                         = broker.CommandConnect
	CommandConnected                       = broker.CommandConnected
	CommandSubscribe                       = broker.CommandSubscribe
	CommandProducer                        = broker.CommandProducer
	CommandSend                            = broker.CommandSend
	CommandSendReceipt                     = broker.CommandSendReceipt
	CommandSendError                       = broker.CommandSendError
	CommandMessage                         = broker.CommandMessage
	CommandAck                             = broker.CommandAck
	CommandFlow                            = broker.CommandFlow
	CommandUnsubscribe                     = broker.CommandUnsubscribe
	CommandSuccess                         = broker.CommandSuccess
	CommandError                           = broker.CommandError
	CommandCloseProducer                   = broker.CommandCloseProducer
	CommandCloseConsumer                   = broker.CommandCloseConsumer
	CommandProducerSuccess                 = broker.CommandProducerSuccess
	CommandPing                            = broker.CommandPing
	CommandPong                            = broker.CommandPong
	CommandRedeliverUnacknowledgedMessages = broker.CommandRedeliverUnacknowledgedMessages
	CommandPartitionedMetadata             = broker.CommandPartitionedMetadata
	CommandPartitionedMetadataResponse     = broker.CommandPartitionedMetadataResponse
	CommandLookup                          = broker.CommandLookup
	CommandLookupResponse                  = broker.CommandLookupResponse
	CommandConsumerStats                   = broker.CommandConsumerStats
	CommandConsumerStatsResponse           = broker.CommandConsumerStatsResponse
	CommandReachedEndOfTopic               = broker.CommandReachedEndOfTopic
	CommandSeek                            = broker.CommandSeek
	CommandGetLastMessageID                = broker.CommandGetLastMessageID
	CommandGetLastMessageIDResponse        = broker.CommandGetLastMessageIDResponse
	CommandActiveConsumerChange            = broker.CommandActiveConsumerChange
	CommandGetTopicsOfNamespace            = broker.CommandGetTopicsOfNamespace
	CommandGetTopicsOfNamespaceResponse    = broker.CommandGetTopicsOfNamespaceResponse
	CommandGetSchema                       = broker.CommandGetSchema
	CommandGetSchemaResponse               = broker.CommandGetSchemaResponse
	CommandAuthChallenge                   = broker.CommandAuthChallenge
	CommandAuthResponse                    = broker.CommandAuthResponse
	CommandAckResponse                     = broker.CommandAckResponse
	CommandGetOrCreateSchema               = broker.CommandGetOrCreateSchema
	CommandGetOrCreateSchemaResponse       = broker.CommandGetOrCreateSchemaResponse
	CommandNewTxn                          = broker.CommandNewTxn
	CommandNewTxnResponse                  = broker.CommandNewTxnResponse
	CommandAddPartitionToTxn               = broker.CommandAddPartitionToTxn
	CommandAddPartitionToTxnResponse       = broker.CommandAddPartitionToTxnResponse
	CommandAddSubscriptionToTxn            = broker.CommandAddSubscriptionToTxn
	CommandAddSubscriptionToTxnResponse    = broker.CommandAddSubscriptionToTxnResponse
	CommandEndTxn                          = broker.CommandEndTxn
	CommandEndTxnResponse                  = broker.CommandEndTxnResponse
	CommandEndTxnOnPartition               = broker.CommandEndTxnOnPartition
	CommandEndTxnOnPartitionResponse       = broker.CommandEndTxnOnPartitionResponse
	CommandEndTxnOnSubscription            = broker.CommandEndTxnOnSubscription
	CommandEndTxnOnSubscriptionResponse    = broker.CommandEndTxnOnSubscriptionResponse
	CommandTcClientConnectRequest          = broker.CommandTcClientConnectRequest
	CommandTcClientConnectResponse         = broker.CommandTcClientConnectResponse
	CommandWatchTopicList                  = broker.CommandWatchTopicList
	CommandWatchTopicListSuccess           = broker.CommandWatchTopicListSuccess
	CommandWatchTopicUpdate                = broker.CommandWatchTopicUpdate
	CommandWatchTopicListClose             = broker.CommandWatchTopicListClose
	CommandTopicMigrated                   = broker.CommandTopicMigrated
)

// The states of a transaction, by Pulsar's names (WaitTransaction).
const (
	TxnStatusOpen       = broker.TxnStatusOpen
	TxnStatusCommitting = broker.TxnStatusCommitting
	TxnStatusCommitted  = broker.TxnStatusCommitted
	TxnStatusAborting   = broker.TxnStatusAborting
	TxnStatusAborted    = broker.TxnStatusAborted
)

// The kinds of broker event (Events, OnEvent).
const (
	EventTopicDeleted      = broker.EventTopicDeleted
	EventProducerOpened    = broker.EventProducerOpened
	EventProducerClosed    = broker.EventProducerClosed
	EventPublished         = broker.EventPublished
	EventConsumerOpened    = broker.EventConsumerOpened
	EventConsumerClosed    = broker.EventConsumerClosed
	EventDelivered         = broker.EventDelivered
	EventAcked             = broker.EventAcked
	EventRedeliveryAsked   = broker.EventRedeliveryAsked
	EventExpired           = broker.EventExpired
	EventSubscriptionSeek  = broker.EventSubscriptionSeek
	EventTxnOpened         = broker.EventTxnOpened
	EventTxnAcked          = broker.EventTxnAcked
	EventTxnReturned       = broker.EventTxnReturned
	EventTxnCommitted      = broker.EventTxnCommitted
	EventTxnAborted        = broker.EventTxnAborted
	EventDuplicate         = broker.EventDuplicate
	EventTopicLoaded       = broker.EventTopicLoaded
	EventTopicUnloaded     = broker.EventTopicUnloaded
	EventReachedEndOfTopic = broker.EventReachedEndOfTopic
	EventTopicMigrated     = broker.EventTopicMigrated
)

// The settlement rules a Violation names.
const (
	RuleOneState         = broker.RuleOneState
	RuleCounts           = broker.RuleCounts
	RuleBacklog          = broker.RuleBacklog
	RuleCountNeverDown   = broker.RuleCountNeverDown
	RuleDeadLetterOrigin = broker.RuleDeadLetterOrigin
)

// What a backlog quota does when it is exceeded.
const (
	ProducerRequestHold     = broker.ProducerRequestHold
	ProducerException       = broker.ProducerException
	ConsumerBacklogEviction = broker.ConsumerBacklogEviction
)

// Where a new subscription starts (CreateSubscription).
var (
	// Earliest starts a subscription at the topic's first message.
	Earliest = broker.Earliest
	// Latest starts a subscription after the topic's last message.
	Latest = broker.Latest
)

// AtMessage starts a subscription at message id (CreateSubscription).
func AtMessage(id MessageID) Position { return broker.AtMessage(id) }

// The errors of faults and holds.
var (
	// ErrCommandDropped: a held command was dropped with its connection
	// (HeldCommand.Wait).
	ErrCommandDropped = broker.ErrCommandDropped
	// ErrFaultDone: the fault was removed, or retired after its Count
	// (FaultHandle.Wait).
	ErrFaultDone = broker.ErrFaultDone
)

// LoadManager is how a cluster assigns and moves bundles (WithLoadManager):
// broker.LoadManager.
type LoadManager = broker.LoadManager

// The load managers of a cluster, as Pulsar's loadManagerClassName selects
// them.
const (
	// ModularLoadManager is Pulsar's default: the leader assigns bundles,
	// an unload makes clients look their topics up again.
	ModularLoadManager = broker.ModularLoadManager
	// ExtensibleLoadManager is PIP-192's: a Move is a transfer whose
	// CLOSE_* frames name the new owner (PIP-307).
	ExtensibleLoadManager = broker.ExtensibleLoadManager
)

// DefaultOwnershipTimeout is how long a crashed broker's bundles stay its
// own (Pulsar's metadataStoreSessionTimeoutMillis): Advance a cluster by it
// after a Crash for the others to take them over.
const DefaultOwnershipTimeout = broker.DefaultOwnershipTimeout
