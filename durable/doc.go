// Package durable keeps a cluster's store (package store) on disk, so that a
// broker started again on the same directory comes back with what Pulsar's
// standalone keeps across a restart: the persistent topics' entries, their
// durable cursors (mark-delete position, individually acknowledged entries,
// batch-index acknowledgement sets, properties), what a topic writes into its
// managed ledger's properties (termination, the exclusive producers' epoch,
// the producers' last sequence ids, the compacted view), and the metadata
// (tenants, namespaces, policies, partitioned-topic metadata, schemas,
// permissions); beside them, records the broker encodes itself (PutRecord:
// the cluster metadata and dynamic configuration, the transaction
// coordinators' logs, the subscriptions' pending-ack stores).
//
// The directory holds one bbolt database (a copy-on-write B+tree whose
// commits are atomic). A Disk writes in the background: a broker queues each
// change under the lock that guards it (so changes reach the disk in the
// order they were made), and one goroutine commits everything queued since
// its last commit in one transaction, then syncs it under the chosen Sync
// policy (group commit). A caller that must not answer before its change is
// durable, as a SEND_RECEIPT must not, queues a Barrier behind it.
//
// Entries carry a checksum: an entry that does not check out on recovery
// (a torn or damaged write) is cut with every entry after it, so no broker
// ever serves half an entry. What was not yet committed when the process
// died was never acknowledged to anybody.
//
// The broker (package broker) is the only user; the store stays a plain
// structure that knows nothing of disks.
package durable
