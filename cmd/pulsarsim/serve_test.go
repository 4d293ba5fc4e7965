package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestAdminServerFailureIsReported(t *testing.T) {
	good, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	broken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	broken.Close() // this listener breaks: its server cannot accept
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := serveAdmin(ctx, discard(), http.NotFoundHandler(), nil, good, broken); err == nil || ctx.Err() != nil {
		t.Fatalf("serveAdmin with a broken listener returned %v (context: %v), want its error at once", err, ctx.Err())
	}
	// The other server's listener is closed (a dial could reach another
	// process that took the freed port: ask the listener itself).
	good.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	if c, err := good.Accept(); !errors.Is(err, net.ErrClosed) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("the other server's listener is still open after the failure (Accept: %v)", err)
	}
}

func TestAdminServerStopsCleanlyWhenAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	shutDown := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveAdmin(ctx, discard(), http.NotFoundHandler(), func() { shutDown <- struct{}{} }, ln)
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serveAdmin after its context ended: %v", err)
	}
	select {
	case <-shutDown:
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown hook did not run")
	}
}
