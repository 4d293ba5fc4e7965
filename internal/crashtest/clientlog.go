package main

import (
	"fmt"
	"log/slog"
	"os"

	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// clientLog is pulsar-client-go's log of the run, its warnings and errors
// only, written to a file beside the record: what the clients went through
// when the broker went away (reconnections, closed producers).
type clientLog struct {
	l *slog.Logger
}

func newClientLog(path string) (*clientLog, *os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return &clientLog{l: slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))}, f, nil
}

func attrs(fields plog.Fields) []any {
	var out []any
	for k, v := range fields {
		out = append(out, slog.Any(k, v))
	}
	return out
}

func (c *clientLog) SubLogger(fields plog.Fields) plog.Logger {
	return &clientLog{l: c.l.With(attrs(fields)...)}
}
func (c *clientLog) WithFields(fields plog.Fields) plog.Entry { return c.SubLogger(fields) }
func (c *clientLog) WithField(name string, value any) plog.Entry {
	return &clientLog{l: c.l.With(slog.Any(name, value))}
}
func (c *clientLog) WithError(err error) plog.Entry    { return c.WithField("error", err) }
func (c *clientLog) Debug(args ...any)                 {}
func (c *clientLog) Info(args ...any)                  {}
func (c *clientLog) Warn(args ...any)                  { c.l.Warn(fmt.Sprint(args...)) }
func (c *clientLog) Error(args ...any)                 { c.l.Error(fmt.Sprint(args...)) }
func (c *clientLog) Debugf(format string, args ...any) {}
func (c *clientLog) Infof(format string, args ...any)  {}
func (c *clientLog) Warnf(format string, args ...any)  { c.l.Warn(fmt.Sprintf(format, args...)) }
func (c *clientLog) Errorf(format string, args ...any) { c.l.Error(fmt.Sprintf(format, args...)) }
