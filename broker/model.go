package broker

import "github.com/pulsarsim/pulsarsim/model"

// The plain values of the exported API live in package model, which every
// layer speaks; these names keep them reachable as broker.X.

// Types of package model.
type (
	TopicName               = model.TopicName
	Policies                = model.Policies
	Retention               = model.Retention
	DispatchRate            = model.DispatchRate
	PublishRate             = model.PublishRate
	BacklogQuotaPolicy      = model.BacklogQuotaPolicy
	BacklogQuota            = model.BacklogQuota
	DelayedDelivery         = model.DelayedDelivery
	TopicType               = model.TopicType
	AutoTopicCreation       = model.AutoTopicCreation
	InactiveTopicDeleteMode = model.InactiveTopicDeleteMode
	InactiveTopicPolicies   = model.InactiveTopicPolicies
	InactiveTopicDeletion   = model.InactiveTopicDeletion
	SchemaCompatibility     = model.SchemaCompatibility
)

// Constants of package model.
const (
	ProducerRequestHold                      = model.ProducerRequestHold
	ProducerException                        = model.ProducerException
	ConsumerBacklogEviction                  = model.ConsumerBacklogEviction
	DefaultMaxUnackedMessagesPerConsumer     = model.DefaultMaxUnackedMessagesPerConsumer
	DefaultMaxUnackedMessagesPerSubscription = model.DefaultMaxUnackedMessagesPerSubscription
	TopicTypeNonPartitioned                  = model.TopicTypeNonPartitioned
	TopicTypePartitioned                     = model.TopicTypePartitioned
	DeleteWhenNoSubscriptions                = model.DeleteWhenNoSubscriptions
	DeleteWhenSubscriptionsCaughtUp          = model.DeleteWhenSubscriptionsCaughtUp
	SchemaAlwaysIncompatible                 = model.SchemaAlwaysIncompatible
	SchemaAlwaysCompatible                   = model.SchemaAlwaysCompatible
	SchemaBackward                           = model.SchemaBackward
	SchemaForward                            = model.SchemaForward
	SchemaFull                               = model.SchemaFull
	SchemaBackwardTransitive                 = model.SchemaBackwardTransitive
	SchemaForwardTransitive                  = model.SchemaForwardTransitive
	SchemaFullTransitive                     = model.SchemaFullTransitive
)

// Errors and defaults of package model.
var (
	ErrTenantNotFound            = model.ErrTenantNotFound
	ErrNamespaceNotFound         = model.ErrNamespaceNotFound
	ErrTopicNotFound             = model.ErrTopicNotFound
	ErrPartitionedTopicNotFound  = model.ErrPartitionedTopicNotFound
	ErrSubscriptionNotFound      = model.ErrSubscriptionNotFound
	ErrMessageNotFound           = model.ErrMessageNotFound
	ErrSchemaNotFound            = model.ErrSchemaNotFound
	ErrTenantExists              = model.ErrTenantExists
	ErrNamespaceExists           = model.ErrNamespaceExists
	ErrTopicExists               = model.ErrTopicExists
	ErrSubscriptionExists        = model.ErrSubscriptionExists
	ErrNotPartitioned            = model.ErrNotPartitioned
	ErrTenantNotEmpty            = model.ErrTenantNotEmpty
	ErrNamespaceNotEmpty         = model.ErrNamespaceNotEmpty
	ErrTopicBusy                 = model.ErrTopicBusy
	ErrSubscriptionBusy          = model.ErrSubscriptionBusy
	ErrTopicTerminated           = model.ErrTopicTerminated
	ErrInvalidName               = model.ErrInvalidName
	ErrInvalidPolicy             = model.ErrInvalidPolicy
	ErrInvalidSchema             = model.ErrInvalidSchema
	ErrInvalidSchemaData         = model.ErrInvalidSchemaData
	ErrIncompatibleSchema        = model.ErrIncompatibleSchema
	ErrSchemaCheckFailed         = model.ErrSchemaCheckFailed
	ErrInvalidPartitions         = model.ErrInvalidPartitions
	ErrTooManyPartitions         = model.ErrTooManyPartitions
	ErrFewerPartitions           = model.ErrFewerPartitions
	ErrInvalidMessage            = model.ErrInvalidMessage
	ErrExpiryNotIssued           = model.ErrExpiryNotIssued
	ErrNotAllowed                = model.ErrNotAllowed
	DefaultInactiveTopicDeletion = model.DefaultInactiveTopicDeletion
	SchemaCompatibilities        = model.SchemaCompatibilities
)

// ParseTopicName parses a short ("t", "tenant/ns/t") or full
// ("persistent://tenant/ns/t") topic name the way Pulsar does
// (model.ParseTopicName).
func ParseTopicName(s string) (TopicName, error) { return model.ParseTopicName(s) }

// ValidatePolicies checks the ranges of the fields p sets, as an update
// does (model.ValidatePolicies).
func ValidatePolicies(p Policies) error { return model.ValidatePolicies(p) }

// errorf returns an error of kind worded by format and args.
func errorf(kind error, format string, args ...any) error { return model.Errorf(kind, format, args...) }
