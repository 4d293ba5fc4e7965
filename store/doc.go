// Package store is the layer of a cluster that outlives its brokers, as
// Pulsar keeps it in its metadata store, its managed ledgers and BookKeeper:
// tenants and namespaces, namespace and topic policies, partitioned-topic
// metadata, schemas, permissions, which broker owns which namespace bundle,
// and each persistent topic's ledger (its entries and the durable state of
// its cursors, its deduplication state, epoch, termination, compacted view
// and transaction buffer).
//
// It knows nothing of connections, consumers or dispatchers: it cannot, as
// it imports no serving code. A broker (package broker) loads a topic from
// its Ledger and gives the Ledger back when the topic is unloaded or the
// broker stops or crashes; what Pulsar keeps in a broker's memory only
// (redelivery counters, pending acknowledgements, replay queues, the
// delayed-delivery index, rate state) never reaches the store.
//
// Like cursor and dispatch, a Store is a plain data structure without locks
// or goroutines: the brokers sharing it serialize access under their broker
// lock, and a loaded topic's Log and cursors are used under that topic's
// lock (package broker's doc gives the lock order).
package store
