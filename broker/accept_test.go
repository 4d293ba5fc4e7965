package broker_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
)

// temporaryError is an accept failure that passes, as running out of file
// descriptors does.
type temporaryError struct{}

func (temporaryError) Error() string   { return "too many open files (test)" }
func (temporaryError) Timeout() bool   { return false }
func (temporaryError) Temporary() bool { return true }

// failingListener fails the Accept calls that fail says should, and passes
// the others to the real listener.
type failingListener struct {
	net.Listener
	calls atomic.Int32
	fail  func(call int32) error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if err := l.fail(l.calls.Add(1)); err != nil {
		return nil, err
	}
	return l.Listener.Accept()
}

func listen(t *testing.T, fail func(call int32) error) *failingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &failingListener{Listener: ln, fail: fail}
}

// sendOne produces one message through a fresh client of the broker at url.
func sendOne(t *testing.T, url, topic string) error {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger(),
		OperationTimeout: 5 * time.Second, ConnectionTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return err
	}
	defer p.Close()
	_, err = p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")})
	return err
}

func TestServeRetriesTemporaryAcceptErrors(t *testing.T) {
	ln := listen(t, func(call int32) error {
		if call <= 3 {
			return temporaryError{}
		}
		return nil
	})
	b := broker.New()
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	if err := sendOne(t, "pulsar://"+ln.Addr().String(), "after-retries"); err != nil {
		t.Fatalf("a client after three temporary accept errors: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-served; !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Serve returned %v, want ErrClosed", err)
	}
}

func TestServeReturnsAPermanentAcceptErrorAndKeepsItsConnections(t *testing.T) {
	boom := errors.New("listener broken (test)")
	// The first connection is accepted; the listener then breaks.
	ln := listen(t, func(call int32) error {
		if call >= 2 {
			return boom
		}
		return nil
	})
	defer ln.Close()
	b := broker.New()
	defer b.Close()
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()

	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + ln.Addr().String(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := <-served; !errors.Is(err, boom) {
		t.Fatalf("Serve returned %v, want the listener's error", err)
	}
	// The connection accepted before goes on.
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatalf("send on the connection accepted before the failure: %v", err)
	}
	if err := b.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close returned %v, want the listener's error", err)
	}
}
