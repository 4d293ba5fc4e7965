// Command pulsarsim runs a simulated Apache Pulsar broker on 127.0.0.1:6650
// until it is interrupted. Any Pulsar client can connect to it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/pulsarsim/pulsarsim/broker"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pulsarsim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("pulsarsim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6650", "address to serve the Pulsar binary protocol on")
	maxMsg := fs.Int("max-message-size", 5*1024*1024, "maxMessageSize in bytes, advertised to clients")
	autoCreate := fs.Bool("auto-create-topics", true, "create topics on first use")
	verbose := fs.Bool("v", false, "log every connection event")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b := broker.New(
		broker.WithLogger(logger),
		broker.WithMaxMessageSize(*maxMsg),
		broker.WithAutoTopicCreation(*autoCreate),
	)
	if err := b.Listen(*addr); err != nil {
		return err
	}
	logger.Info("pulsarsim serving", "url", b.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	logger.Info("pulsarsim stopping")
	return b.Close()
}
