package main

import (
	"flag"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/durable"
)

// dataFlags are the flags of the data directory: where the store is kept
// across restarts, and when an entry counts as durable.
type dataFlags struct {
	dir  *string
	sync *string
}

func addDataFlags(fs *flag.FlagSet) dataFlags {
	return dataFlags{
		dir: fs.String("data-dir", "",
			"keep topics, subscriptions and metadata in this directory and start on what it holds, as a standalone's data directory (empty: everything in memory)"),
		sync: fs.String("data-sync", string(durable.SyncFsync),
			"with -data-dir: when a SEND_RECEIPT goes out: fsync (after an fsync, as BookKeeper's journalSyncData=true) or write (after the write reaches the OS: survives a kill, not a power loss, as journalSyncData=false)"),
	}
}

// brokerOptions returns the broker options of the flags.
func (f dataFlags) brokerOptions() ([]broker.Option, error) {
	if *f.dir == "" {
		return nil, nil
	}
	policy, err := durable.ParseSync(*f.sync)
	if err != nil {
		return nil, err
	}
	return []broker.Option{broker.WithDataDir(*f.dir), broker.WithDataSync(policy)}, nil
}
