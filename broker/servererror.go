package broker

import "github.com/pulsarsim/pulsarsim/protocol/pb"

// ServerError is a Pulsar wire error code, as a Fault answers with it.
type ServerError = pb.ServerError

// The Pulsar error codes tests most often inject.
const (
	ServerErrorUnknown             = pb.ServerError_UnknownError
	ServerErrorMetadata            = pb.ServerError_MetadataError
	ServerErrorPersistence         = pb.ServerError_PersistenceError
	ServerErrorAuthorization       = pb.ServerError_AuthorizationError
	ServerErrorConsumerBusy        = pb.ServerError_ConsumerBusy
	ServerErrorServiceNotReady     = pb.ServerError_ServiceNotReady
	ServerErrorChecksum            = pb.ServerError_ChecksumError
	ServerErrorTopicNotFound       = pb.ServerError_TopicNotFound
	ServerErrorSubscriptionMissing = pb.ServerError_SubscriptionNotFound
	ServerErrorTooManyRequests     = pb.ServerError_TooManyRequests
	ServerErrorTopicTerminated     = pb.ServerError_TopicTerminatedError
	ServerErrorProducerBusy        = pb.ServerError_ProducerBusy
	ServerErrorNotAllowed          = pb.ServerError_NotAllowedError

	ServerErrorTransactionNotFound            = pb.ServerError_TransactionNotFound
	ServerErrorInvalidTxnStatus               = pb.ServerError_InvalidTxnStatus
	ServerErrorTransactionConflict            = pb.ServerError_TransactionConflict
	ServerErrorTransactionCoordinatorNotFound = pb.ServerError_TransactionCoordinatorNotFound
)
