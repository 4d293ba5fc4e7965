package testkit

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/durable"
)

// WithDataDir starts the broker on data directory dir (broker.WithDataDir):
// it keeps its store there, and Restart and Crash bring it back with what
// it held. Use t.TempDir() for a directory of the test's own.
func WithDataDir(dir string) Option { return WithBroker(broker.WithDataDir(dir)) }

// WithDataSync sets the data directory's sync policy (durable.SyncFsync by
// default; durable.SyncWrite skips the fsync).
func WithDataSync(policy durable.Sync) Option { return WithBroker(broker.WithDataSync(policy)) }

// Restart stops the broker as a clean shutdown does (everything it holds
// is persisted) and starts a new one with the same options on the same
// address, so clients reconnect to it; after Crash it only starts it. With
// WithDataDir the new broker loads what the directory holds; without it, it
// starts empty. The admin API AdminURL started serves the new broker on its
// address too; a TLS listener (WithTLS) is not started again. Not safe
// while other goroutines use the Broker.
func (b *Broker) Restart() {
	b.tb.Helper()
	addr := strings.TrimPrefix(b.srv.URL(), "pulsar://")
	if err := b.srv.Close(); err != nil && !errors.Is(err, broker.ErrClosed) {
		b.tb.Fatalf("pulsarsim: stop broker: %v", err)
	}
	srv := broker.New(b.opts...)
	srv.OnEvent(b.history.Record)
	if err := retry(func() error { return srv.Listen(addr) }); err != nil {
		b.tb.Fatalf("pulsarsim: restart broker on %s: %v", addr, err)
	}
	b.srv = srv
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if b.adminStop == nil {
		return
	}
	b.adminStop()
	adminAddr := strings.TrimPrefix(b.adminURL, "http://")
	var ln net.Listener
	err := retry(func() (err error) {
		ln, err = net.Listen("tcp", adminAddr)
		return err
	})
	if err != nil {
		b.tb.Fatalf("pulsarsim: restart admin API on %s: %v", adminAddr, err)
	}
	b.adminStop = b.serveAdmin(ln)
}

// Crash stops the broker as a killed process stops (broker.Broker.Crash):
// nothing more reaches its data directory, what was not committed is lost
// (no receipt went out for it), cursors stay as last persisted, and its
// clients' connections are cut. Restart starts it again.
func (b *Broker) Crash() {
	b.tb.Helper()
	if err := b.srv.Crash(); err != nil {
		b.tb.Fatalf("pulsarsim: crash broker: %v", err)
	}
}

// retry runs listen, again for a moment while the address is still held by
// the listener just closed.
func retry(listen func() error) error {
	var err error
	for range 100 {
		if err = listen(); err == nil {
			return nil
		}
		var op *net.OpError
		if !errors.As(err, &op) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// DataDirStats returns what the broker's data directory has committed since
// the broker started (broker.Broker.DataDirStats).
func (b *Broker) DataDirStats() durable.Stats { return b.srv.DataDirStats() }
