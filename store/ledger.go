package store

import (
	"time"

	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/txn"
)

// Ledger is what survives of a persistent topic when no broker has it
// loaded, as Pulsar's managed ledger keeps it: the entries, the durable
// cursors (mark-delete position, individually acknowledged entries, batch
// index acknowledgements), and what a topic writes into its ledger's
// properties or side ledgers (termination, the exclusive producers' epoch,
// the producers' last sequence ids, the compacted view, the transaction
// buffer). Redelivery counters, pending acknowledgements, replay queues, the
// delayed-delivery index and rate limiters are a broker's memory, not kept
// here (package broker, load.go).
//
// A loaded topic uses its ledger's Log and cursors under the topic's lock;
// the rest changes only when a topic is loaded or released.
type Ledger struct {
	ID      uint64
	Log     *Log
	Created time.Time
	Subs    map[string]DurableSub
	// Loaded is set while a broker has the topic loaded.
	Loaded     bool
	Terminated bool
	TopicEpoch uint64
	HasEpoch   bool
	DedupLast  map[string]int64
	// Properties are the topic's properties, kept in its managed ledger's
	// metadata in Pulsar; nil for none.
	Properties map[string]string
	View       CompactedView
	Buf        *txn.Buffer
}

// DurableSub is a durable subscription as its topic released it: its
// cursor (whose read position and redelivery counters the next load
// resets), when it was created, its cursor's ledger id and its properties.
type DurableSub struct {
	Cursor       *cursor.Cursor
	Created      time.Time
	CursorLedger uint64
	FromFirst    bool
	Properties   map[string]string // the subscription's properties, kept with its cursor
	// Pending are the acknowledgements transactions hold on the
	// subscription, as Pulsar's pending-ack store keeps them; nil for none.
	Pending *txn.PendingAcks
}
