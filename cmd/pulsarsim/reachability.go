package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// watchReachability cuts the brokers off from their clients on SIGUSR1 and
// brings them back on SIGUSR2, until ctx ends: a test driving a pulsarsim
// process of its own (a client's cluster failover between two of them) can
// make one unreachable, with its state kept, and reachable again, as
// testkit's Cluster.CutOff and Reconnect do in a Go test. SIGTERM still
// stops the process, as docker stop does.
func watchReachability(ctx context.Context, logger *slog.Logger, cutOff, reconnect func() error) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	logger.Info("pulsarsim: SIGUSR1 cuts it off from its clients, SIGUSR2 brings it back", "pid", os.Getpid())
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				if s == syscall.SIGUSR1 {
					logger.Info("pulsarsim cut off from its clients (SIGUSR1; SIGUSR2 brings it back)", "err", cutOff())
				} else {
					logger.Info("pulsarsim reachable again (SIGUSR2)", "err", reconnect())
				}
			}
		}
	}()
}
