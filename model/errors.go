package model

import (
	"errors"
	"fmt"
)

// The errors of the broker's exported API. Each is a sentinel to test with
// errors.Is; the error returned often says more, in Pulsar's words (the
// topic's name, the limit broken), while still matching its sentinel. The
// admin REST API answers each with the HTTP status Pulsar uses.
var (
	// ErrTenantNotFound: the tenant does not exist.
	ErrTenantNotFound = errors.New("Tenant does not exist")
	// ErrNamespaceNotFound: the namespace does not exist.
	ErrNamespaceNotFound = errors.New("Namespace does not exist")
	// ErrTopicNotFound: the topic does not exist.
	ErrTopicNotFound = errors.New("Topic not found")
	// ErrPartitionedTopicNotFound: no partitioned topic has this name.
	ErrPartitionedTopicNotFound = errors.New("Partitioned topic does not exist")
	// ErrSubscriptionNotFound: the topic has no subscription of this name.
	ErrSubscriptionNotFound = errors.New("Subscription not found")
	// ErrMessageNotFound: no stored entry has this message id.
	ErrMessageNotFound = errors.New("Message id not found")
	// ErrSchemaNotFound: the topic has no schema (of this version).
	ErrSchemaNotFound = errors.New("Schema not found")

	// ErrTenantExists: the tenant exists already.
	ErrTenantExists = errors.New("Tenant already exist") // sic, as Pulsar 4.0.8 answers
	// ErrNamespaceExists: the namespace exists already.
	ErrNamespaceExists = errors.New("Namespace already exists")
	// ErrTopicExists: a topic or a partitioned topic has this name already.
	ErrTopicExists = errors.New("This topic already exists")
	// ErrSubscriptionExists: the topic has a subscription of this name
	// already.
	ErrSubscriptionExists = errors.New("Subscription already exists for topic")
	// ErrNotPartitioned: the operation needs a partitioned topic and the
	// name is not one.
	ErrNotPartitioned = errors.New("Topic is not a partitioned topic")

	// ErrTenantNotEmpty: the tenant still has namespaces.
	ErrTenantNotEmpty = errors.New("The tenant still has active namespaces")
	// ErrNamespaceNotEmpty: the namespace still holds topics.
	ErrNamespaceNotEmpty = errors.New("Cannot delete non empty namespace")
	// ErrTopicBusy: a delete without force found producers or consumers
	// attached.
	ErrTopicBusy = errors.New("Topic has active producers/subscriptions")
	// ErrSubscriptionBusy: a delete without force found consumers attached.
	ErrSubscriptionBusy = errors.New("Subscription has active connected consumers")
	// ErrTopicTerminated: the topic takes no more messages.
	ErrTopicTerminated = errors.New("Topic was already terminated")

	// ErrInvalidName: a tenant, namespace, topic or subscription name is
	// malformed.
	ErrInvalidName = errors.New("Invalid name")
	// ErrInvalidPolicy: a policy value is out of its range.
	ErrInvalidPolicy = errors.New("Invalid policy value")
	// ErrInvalidSchema: a schema's type is not one of Pulsar's.
	ErrInvalidSchema = errors.New("Invalid schema")
	// ErrInvalidSchemaData: a schema's definition is malformed for its
	// type (Pulsar's InvalidSchemaDataException).
	ErrInvalidSchemaData = errors.New("Invalid schema data")
	// ErrIncompatibleSchema: a schema is incompatible with the topic's
	// schemas under the strategy in force (IncompatibleSchemaException).
	ErrIncompatibleSchema = errors.New("Incompatible schema")
	// ErrSchemaCheckFailed: Pulsar's schema check itself failed with an
	// unexpected exception (a default value of the wrong type, a
	// definition it cannot read back), which it reports as an internal
	// error.
	ErrSchemaCheckFailed = errors.New("Schema check failed")
	// ErrInvalidPartitions: a partitioned topic needs at least one
	// partition.
	ErrInvalidPartitions = errors.New("Number of partitions should be more than 0")
	// ErrTooManyPartitions: a partition count is over
	// maxNumPartitionsPerPartitionedTopic (WithMaxPartitionsPerTopic).
	ErrTooManyPartitions = errors.New("Too many partitions")
	// ErrFewerPartitions: a partitioned topic's partition count can only
	// grow.
	ErrFewerPartitions = errors.New("Partition count cannot decrease")
	// ErrInvalidMessage: a message to publish is malformed or too large.
	ErrInvalidMessage = errors.New("Invalid message")
	// ErrExpiryNotIssued: an admin expiry found nothing to do (the
	// subscription has no backlog, or is almost caught up).
	ErrExpiryNotIssued = errors.New("Expire message by timestamp not issued")
	// ErrNotAllowed: the cluster refuses the move (a destination broker
	// that is not active, a transfer to the bundle's own owner).
	ErrNotAllowed = errors.New("Not allowed")
)

// reasonError is an error of one of the sentinel kinds above, with its own
// wording (Pulsar's reason, usually naming the topic or the value).
type reasonError struct {
	kind   error
	reason string
}

func (e *reasonError) Error() string { return e.reason }

func (e *reasonError) Unwrap() error { return e.kind }

// Errorf returns an error of kind worded by format and args.
func Errorf(kind error, format string, args ...any) error {
	return &reasonError{kind: kind, reason: fmt.Sprintf(format, args...)}
}
