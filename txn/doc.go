// Package txn holds Pulsar 4.0's transaction state machines: the
// coordinator's transactions (open, committing, committed, aborting, aborted,
// and their timeouts), a topic's transaction buffer (which stored messages
// belong to open or aborted transactions, and how far consumers may read),
// and a subscription's pending acknowledgements (the messages acknowledged
// in open transactions, the conflicts between them, what a commit
// acknowledges and what an abort gives back).
//
// Each follows the broker class it is named after: Coordinator the
// transaction metadata store (MLTransactionMetadataStore) and the service
// that ends transactions (TransactionMetadataStoreService), Buffer the topic
// transaction buffer (TopicTransactionBuffer), PendingAcks the pending-ack
// handle (PendingAckHandleImpl). Errors carry the Pulsar error kind and
// Pulsar 4.0.8's wording. A coordinator and pending acknowledgements can be
// restored from what their logs keep (RestoreCoordinator, PendingAcks.State
// and RestorePendingAcks), as a broker recovers them from its data.
//
// The package is pure: no goroutines, no clock (time is an argument, in
// milliseconds), no sockets, and nothing of it is safe for concurrent use.
// Entries are numbered as in package cursor: 0, 1, 2… within a topic's log.
package txn
