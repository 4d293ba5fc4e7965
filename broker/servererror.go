package broker

import "github.com/pulsarsim/pulsarsim/protocol/pb"

// ServerError is a Pulsar wire error code, as a Fault answers with it.
type ServerError = pb.ServerError

// The Pulsar error codes, each named ServerError plus the protocol's name
// of the code (ServerError_PersistenceError in PulsarApi.proto is
// ServerErrorPersistenceError).
const (
	ServerErrorUnknownError                          = pb.ServerError_UnknownError
	ServerErrorMetadataError                         = pb.ServerError_MetadataError
	ServerErrorPersistenceError                      = pb.ServerError_PersistenceError
	ServerErrorAuthenticationError                   = pb.ServerError_AuthenticationError
	ServerErrorAuthorizationError                    = pb.ServerError_AuthorizationError
	ServerErrorConsumerBusy                          = pb.ServerError_ConsumerBusy
	ServerErrorServiceNotReady                       = pb.ServerError_ServiceNotReady
	ServerErrorProducerBlockedQuotaExceededError     = pb.ServerError_ProducerBlockedQuotaExceededError
	ServerErrorProducerBlockedQuotaExceededException = pb.ServerError_ProducerBlockedQuotaExceededException
	ServerErrorChecksumError                         = pb.ServerError_ChecksumError
	ServerErrorUnsupportedVersionError               = pb.ServerError_UnsupportedVersionError
	ServerErrorTopicNotFound                         = pb.ServerError_TopicNotFound
	ServerErrorSubscriptionNotFound                  = pb.ServerError_SubscriptionNotFound
	ServerErrorConsumerNotFound                      = pb.ServerError_ConsumerNotFound
	ServerErrorTooManyRequests                       = pb.ServerError_TooManyRequests
	ServerErrorTopicTerminatedError                  = pb.ServerError_TopicTerminatedError
	ServerErrorProducerBusy                          = pb.ServerError_ProducerBusy
	ServerErrorInvalidTopicName                      = pb.ServerError_InvalidTopicName
	ServerErrorIncompatibleSchema                    = pb.ServerError_IncompatibleSchema
	ServerErrorConsumerAssignError                   = pb.ServerError_ConsumerAssignError
	ServerErrorTransactionCoordinatorNotFound        = pb.ServerError_TransactionCoordinatorNotFound
	ServerErrorInvalidTxnStatus                      = pb.ServerError_InvalidTxnStatus
	ServerErrorNotAllowedError                       = pb.ServerError_NotAllowedError
	ServerErrorTransactionConflict                   = pb.ServerError_TransactionConflict
	ServerErrorTransactionNotFound                   = pb.ServerError_TransactionNotFound
	ServerErrorProducerFenced                        = pb.ServerError_ProducerFenced
)

// The names these codes had before they took the protocol's names.
const (
	// Deprecated: use ServerErrorUnknownError.
	ServerErrorUnknown = ServerErrorUnknownError
	// Deprecated: use ServerErrorAuthorizationError.
	ServerErrorAuthorization = ServerErrorAuthorizationError
	// Deprecated: use ServerErrorMetadataError.
	ServerErrorMetadata = ServerErrorMetadataError
	// Deprecated: use ServerErrorPersistenceError.
	ServerErrorPersistence = ServerErrorPersistenceError
	// Deprecated: use ServerErrorChecksumError.
	ServerErrorChecksum = ServerErrorChecksumError
	// Deprecated: use ServerErrorSubscriptionNotFound.
	ServerErrorSubscriptionMissing = ServerErrorSubscriptionNotFound
	// Deprecated: use ServerErrorTopicTerminatedError.
	ServerErrorTopicTerminated = ServerErrorTopicTerminatedError
	// Deprecated: use ServerErrorNotAllowedError.
	ServerErrorNotAllowed = ServerErrorNotAllowedError
)
