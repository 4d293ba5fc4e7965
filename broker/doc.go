// Package broker is pulsarsim's broker: an Apache Pulsar broker in a Go
// process, on real TCP sockets, that unmodified Pulsar clients connect to.
//
// A test does not need this package: testkit starts a Broker for each test
// (testkit.Start), closes it when the test ends, and names the types and
// constants a test uses (Fault, Policies, MessageID, the error codes, the
// command types). Use broker itself to run a broker in a program of your
// own, as cmd/pulsarsim does, or to see the errors of its API:
//
//	b := broker.New(broker.WithTransactions(true))
//	if err := b.Listen("127.0.0.1:6650"); err != nil {
//		return err
//	}
//	defer b.Close()
//	// clients connect to b.URL(); admin.New(b) serves its admin REST API
//
// New takes Options (With…) for what a standalone.conf would set: limits,
// policies' defaults, security, transactions, deduplication, the clock.
// Listen and ListenTLS serve the binary protocol; Close ends every
// connection and waits for the broker's goroutines.
//
// # The exported API
//
// Beside the wire protocol, Broker has an exported API, the one the admin
// REST API (package admin) and tests (package testkit) use: tenants,
// namespaces and topics; subscriptions created at a position and deleted;
// messages published without a client (Publish, PublishBatch); one stored
// entry (Entry); stats (TopicStats); schemas; namespace and topic
// policies (Policies); compaction (Compact, CompactionStatus,
// RunCompactionCheck); transactions (Transactions, NewTransaction,
// PublishInTransaction, CommitTransaction, AbortTransaction); faults and
// holds (AddFault with a Fault on a CommandType, answered with a
// ServerError code named as the protocol names it; FailNext,
// DelayReplies); and the event stream (OnEvent). It takes and returns
// plain values, fails with the sentinel errors of errors.go, and takes
// every lock itself.
// CheckSettlement checks every subscription's settlement state against the
// invariants of Rule, each topic as one state copied under its lock.
//
// # A cluster
//
// NewCluster starts several brokers over one store (Cluster): each broker
// has its own listeners and connections and loads the topics whose bundles
// it owns; any broker answers lookups, and topics move when their bundle
// is unloaded or their broker stops or crashes. A broker made by New is a
// cluster of one.
//
// # Several clusters
//
// WithConfigStore makes a cluster one of several sharing a configuration
// store (ConfigStore), as Pulsar's clusters share a global one: tenants,
// namespaces and their policies, partitioned-topic metadata, permissions
// and the cluster metadata are common, the rest (ledgers, bundle
// ownership, schemas, topic policies) each cluster's own. A namespace whose
// replication clusters name several of them is geo-replicated between
// them (replicator.go), its replicated subscriptions kept in step
// (replsub.go).
//
// # Inside: which layer owns what
//
// The store (package store) is what the brokers of a cluster share and
// what outlives them, as Pulsar's metadata store and BookKeeper keep it:
// tenants and namespaces, policies, partitioned-topic metadata, schemas,
// security policies, each persistent topic's ledger (entries and durable
// cursors), and which broker owns which bundle (package bundles). Like
// cursor and dispatch it is a plain structure without locks: it imports no
// serving code, so it cannot know of connections. The brokers of a cluster
// hold it, with the locks that guard it, in their shared value (store.go).
// A Broker is one serving node: listeners and
// connections, the handshake, lookups (owner.go), the topics it has loaded
// with their producers, subscriptions, consumers, dispatchers and
// redelivery counters, faults and holds, timers and the event stream; it
// loads a topic from its ledger and gives it back (load.go), and persists a
// cursor's state as Pulsar's managed cursor does (persist.go). It is the
// I/O shell around the pure cursor and dispatch packages: every decision
// about acknowledgement and delivery is theirs, and the broker only carries
// frames to and from the clients.
//
// # Locks
//
// Every lock of the broker lives in this package. A goroutine that holds
// several takes them in this order, and never the other way round:
//
//  1. a connection's handling lock (conn.hmu). Each command of a connection
//     runs under it: its reader takes it for every frame it reads, and a
//     goroutine that releases a held command takes it to run that command
//     (hold.go). Only the reader waits for it (and only when it holds no
//     other lock); any other goroutine merely tries it and, when it is
//     taken, leaves the command to the holder, so a hook that releases a
//     command never blocks.
//  2. a topic's lock (Topic.mu). All of the topic's state changes under it:
//     its log, producers, subscriptions, cursors and dispatchers, and the
//     consumers' counters. No goroutine ever holds two topic locks.
//  3. a connection's state lock (conn.mu): its producer and consumer tables,
//     handshake and authentication state. Taken under a topic lock (a
//     SUBSCRIBE or PRODUCER registering its consumer or producer, a
//     broker-side close removing one before its CLOSE_* goes out, stats
//     reading the client version), under a handling lock (a fault resolving
//     a consumer id), or alone.
//  4. the broker lock (shared.mu, which a broker reaches as Broker.mu: the
//     brokers of a cluster share it), which guards the store (metadata,
//     ledgers' table, bundle ownership) and each broker's topic table,
//     listeners and connection set. Taken under a topic lock (schema
//     registration) or alone; never together with a connection's state
//     lock.
//  5. a connection's write buffer lock (conn.wmu), taken to queue a frame
//     or arm the handshake timer: under a topic lock, under the broker's
//     lock (a new connection's handshake timer, as it is accepted), or
//     alone; never under a connection's state lock.
//  6. the event queue's lock (eventQueue.mu), taken under a topic lock to
//     number and queue an event, or alone; or the timer heap's lock
//     (timers.mu), taken under a topic lock to register a subscription's
//     timer, or alone. A Clock's own lock (ManualClock, OffsetClock) is read
//     under a topic lock before them.
//
// RunTimers holds the timers' run lock (timers.run) while it runs what is
// due, taking topic locks one at a time under it; it is never taken with a
// topic lock held. Timer-driven events (a TTL expiry, delayed messages
// delivered) may thus reach the hooks under it: a hook must not call
// RunTimers.
//
// The cluster's own lock (Cluster.mu) guards its table of brokers. It comes
// before all of the above (Listen and AddBroker start brokers under it),
// and no broker takes it.
//
// The security policies' lock (shared.secmu) is a leaf: nothing is taken
// under it. So is a connection's read gate lock (conn.reads.mu), taken
// under a topic lock when a publish rate limit pauses or resumes the
// connection's reader, or by the reader alone.
//
// The cluster metadata's lock (clusterMeta.mu, clustermeta.go: clusters,
// failure domains, isolation policies, resource quotas, dynamic settings;
// one per cluster, in the shared value) is a leaf: taken alone, or under
// the broker lock (a topic created on first use reads the dynamic
// settings), and nothing is taken under it but a data directory's queue
// lock, as it is released.
//
// A data directory's queue lock (durable.Disk's, datadir.go) is a leaf:
// taken under a topic lock, the broker lock (as it is released, to queue
// the metadata), the security lock, the cluster metadata's lock or the
// transaction coordinators' lock to queue a change, or alone; the
// directory's goroutine takes nothing else with it, and runs the callbacks
// of its barriers (a SEND_RECEIPT once its entry is durable) with no lock
// held, which take a connection's write buffer lock.
//
// Clusters made over one configuration store (ConfigStore, geo.go) share
// its broker lock and its security policies' lock: every broker of every
// such cluster takes the same shared.mu, in the place of the order above.
// A replicator (replicator.go) holds no topic lock of its own cluster while
// it writes to the remote cluster's topic, so no goroutine holds two topic
// locks there either. The replication state's lock (geoState.mu, one per
// cluster) is a leaf, taken alone or under a topic lock (also a topic lock
// of another cluster, when a replicator reports its connection there); so
// is the configuration store's table of clusters (ConfigStore.regmu).
//
// The transaction coordinators' lock (transactions.mu, txn.go; one per
// cluster, in the shared value) is a leaf:
// taken alone, under a topic lock (to record what a transaction produced or
// acknowledged) or under the timers' run lock, and nothing is taken under
// it but a data directory's queue lock (datadirtxn.go). Ending a transaction takes it, releases it, then takes the topic locks
// of its topics one at a time.
//
// Faults and holds have locks of their own, never taken under a topic lock:
// a connection's hold queue lock (conn.holdMu), then a fault handle's lock
// (FaultHandle.mu), taken under the hold queue lock (a command held,
// released or dropped leaves the fault's list at once) or alone; and the
// fault registry's lock (faults.mu), never held with either. Each of them
// may be taken under a handling lock.
//
// No socket is written under any of these locks but a handling lock: each
// connection's writer goroutine drains its write buffer, and the only direct
// writes (the error that precedes closing a connection that failed its
// handshake or went over a connection limit) hold at most the handling lock
// of that connection. Events are queued under the lock of the topic they
// concern and delivered to the OnEvent hooks when that lock is
// released (topicLock.Unlock), so hooks run with no topic, connection-state,
// broker or event lock held, at most under the handling lock of the
// connection whose command caused them (or the timers' run lock), and may
// call back into the broker.
package broker
