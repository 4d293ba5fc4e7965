// Command crashtest kills a broker with SIGKILL again and again while real
// clients produce to it and consume from it, restarts it on the same data
// each time, and checks after every restart what Pulsar promises across a
// crash:
//
//   - every message whose SEND_RECEIPT a producer got is still in its topic,
//     at the message id the receipt named, whole (a reader from the earliest
//     position reads it back and its payload checks);
//   - no message is stored twice, except one its producer resent after the
//     connection broke while the send was outstanding (Pulsar's rule without
//     deduplication); with -dedup none at all;
//   - an acknowledgement the broker confirmed (pulsar-client-go's
//     AckWithResponse) is not forgotten: a subscription that redelivers a
//     message whose acknowledgement was confirmed before a kill has lost an
//     acknowledgement. Pulsar itself may lose the acknowledgements made since
//     its cursor last persisted its position (see -ack-grace), so each one
//     found is reported with its age at the kill;
//   - at the end, once production stops, every subscription receives every
//     message its topic holds: a cursor that came back ahead of what was
//     acknowledged would skip some.
//
// The broker is pulsarsim (a binary given with -sim, run with -data-dir) or,
// with -real, a real Pulsar standalone restarted on its data by
// scripts/real-pulsar. scripts/crash-test runs it; RELIABILITY.md records
// runs.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

type options struct {
	sim       string        // pulsarsim binary
	simArgs   string        // extra pulsarsim flags
	real      string        // scripts/real-pulsar, for a real standalone
	dataDir   string        // the broker's data directory
	workDir   string        // logs and the record
	addr      string        // binary protocol host:port
	http      string        // admin host:port
	kills     int           // how many SIGKILLs
	minRun    time.Duration // shortest run between a restart and a kill
	maxRun    time.Duration // longest
	rate      int           // messages a second per producer
	size      int           // payload bytes
	dedup     bool          // broker deduplication on
	ackGrace  time.Duration // how old a forgotten acknowledgement may be
	seed      uint64
	readyWait time.Duration
	noDataDir bool // run pulsarsim without -data-dir (the checks must fail)
	keepGoing bool // go on after a check fails, to count every failure
}

func main() {
	var o options
	flag.StringVar(&o.sim, "sim", "", "the pulsarsim binary to run and kill")
	flag.StringVar(&o.simArgs, "sim-args", "", "more pulsarsim flags, space-separated (e.g. \"-data-sync always\")")
	flag.StringVar(&o.real, "real", "", "instead of pulsarsim: scripts/real-pulsar, whose standalone is killed and started with --keep-data")
	flag.StringVar(&o.dataDir, "data-dir", "", "the broker's data directory (default: under -work)")
	flag.StringVar(&o.workDir, "work", "", "directory for the broker's log and the record (default: a new temporary one)")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:6773", "the broker's binary protocol address")
	flag.StringVar(&o.http, "http", "127.0.0.1:8203", "the broker's admin address")
	flag.IntVar(&o.kills, "kills", 50, "SIGKILLs in the run")
	flag.DurationVar(&o.minRun, "min-run", 200*time.Millisecond, "shortest time between a broker ready and its kill")
	flag.DurationVar(&o.maxRun, "max-run", 3*time.Second, "longest time between a broker ready and its kill")
	flag.IntVar(&o.rate, "rate", 200, "messages a second of each producer")
	flag.IntVar(&o.size, "size", 128, "payload bytes")
	flag.BoolVar(&o.dedup, "dedup", false, "turn broker deduplication on (pulsarsim -deduplication): no duplicate allowed")
	flag.DurationVar(&o.ackGrace, "ack-grace", 0, "a confirmed acknowledgement a crash forgets fails the run unless it was at most this old at the kill")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	flag.DurationVar(&o.readyWait, "ready-timeout", 5*time.Minute, "how long a restart may take")
	flag.BoolVar(&o.noDataDir, "no-data-dir", false, "run pulsarsim in memory (to see the checks fail)")
	flag.BoolVar(&o.keepGoing, "keep-going", false, "go on after a check fails (every failure is reported at the end)")
	flag.Parse()
	if o.sim == "" && o.real == "" {
		fmt.Fprintln(os.Stderr, "crashtest: give -sim BINARY or -real SCRIPT")
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	if o.workDir == "" {
		d, err := os.MkdirTemp("", "crashtest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "crashtest:", err)
			os.Exit(1)
		}
		o.workDir = d
	}
	if o.dataDir == "" {
		o.dataDir = o.workDir + "/data"
	}
	rep, err := run(o)
	fmt.Println(rep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest: FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("crashtest: passed")
}

// fields splits the -sim-args flag.
func fields(s string) []string { return strings.Fields(s) }
