// Package testkit is pulsarsim's API for tests: start a broker bound to a
// test, point real clients at it, and inspect what the broker saw. A test
// imports testkit alone (with its Pulsar client and rapid): the broker's
// types and constants a test names are here too, as aliases (Fault,
// Policies, MessageID, ServerErrorServiceNotReady, CommandSubscribe,
// TxnStatusCommitted…).
//
// # Errors
//
// A Broker is bound to the test that started it, as an httptest.Server is,
// and its methods return no error: when the broker refuses what a method
// asks (a fault it cannot apply, a topic that already exists, a publish it
// does not store, a wait that ends before its condition holds, a
// transaction it does not know), the method fails the test with
// t.Fatalf, naming what was refused. The exceptions answer a question
// rather than do something: Topic and Subscription return false when the
// topic or subscription does not exist, as a map lookup does; and the
// Check… methods (CheckInvariants, CheckSettlement, CheckHandler) return
// what they found, for the test to judge. A function that takes a
// testing.TB or a rapid.TB (NewDriver, CheckHandler, CaseTB) fails that
// one. To see the broker's error itself, as a test of a refusal would, use
// the broker package.
//
// Broker.CheckInvariants checks the broker's settlement invariants at any
// point (WithInvariants at the test's end). Property checks of a consumer's
// handler use the rapid generators HandlerCases, Scripts and
// FaultSchedules with Broker.CheckHandler; the README's "Property checks of
// your own consumer" is the complete example, a property check of a
// handler in a dozen lines, which the module's tests compile and run.
package testkit

import (
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/issuer"
)

// Broker is a pulsarsim broker started for one test. It shows the test API
// only: the server's lifecycle (listening and closing) belongs to Start and
// the test's cleanup.
type Broker struct {
	srv     *broker.Broker
	tb      testing.TB
	clock   *broker.OffsetClock
	history *view.History // every event since Start
	// shown is what the broker's web view and reports read: history, or
	// for a broker of a cluster the cluster's (every broker's events).
	shown *view.History

	ca     *testCA // with WithTLS
	secret []byte  // token secret, with WithTokenAuth
	// superUsers are WithAuthorization's; the WebSocket API's internal
	// client authenticates as the first.
	superUsers []string

	issuer    *issuer.Issuer // with WithOAuth2
	issuerSrv *httptest.Server

	adminMu  sync.Mutex
	adminURL string // the admin API's URL once AdminURL started it

	cases    atomic.Int64               // CheckHandler runs, for their topic names
	lastCase atomic.Pointer[HandlerRun] // the last CheckHandler run under rapid

	// opts are the broker's options, for Restart (datadir.go); adminStop
	// stops the admin API AdminURL started (under adminMu).
	opts      []broker.Option
	adminStop func()
}

// Option configures what Start starts: the broker's own options
// (WithBroker) and what the test kit does around it.
type Option func(*settings)

// settings collects the Options given to Start.
type settings struct {
	broker     []broker.Option
	sec        securitySettings
	invariants bool // WithInvariants
	// history, when set, is the history a cluster records its events in
	// (StartClusters gives its clusters one).
	history *view.History
}

// WithBroker passes options to the broker itself, such as
// broker.WithBatchIndexAck(true) or broker.WithAutoTopicCreation(false).
func WithBroker(opts ...broker.Option) Option {
	return func(s *settings) { s.broker = append(s.broker, opts...) }
}

// WithAutoNamespaces makes a topic's first use create its namespace and
// tenant (broker.WithAutoNamespaceCreation): a convenience for tests that
// use topics outside public/default without creating their namespaces.
// Without it, as on Pulsar, such topics are refused until the test creates
// the namespace (b.CreateNamespace).
func WithAutoNamespaces() Option { return WithBroker(broker.WithAutoNamespaceCreation(true)) }

// WithInactiveTopicsKept keeps every topic until the broker closes. By
// default the broker deletes inactive topics as a Pulsar 4.0 standalone
// does: a topic with no subscriptions, producers or consumers goes at the
// check (every 60 s of broker time) once it has been so for 60 s, with its
// messages. Subscriptions keep a topic, so most tests never see this; a
// test that publishes without subscribing, lets broker time pass (Advance,
// or a long run) and then inspects the topic needs this option.
func WithInactiveTopicsKept() Option {
	return WithBroker(broker.WithInactiveTopicDeletion(broker.InactiveTopicDeletion{}))
}

// WithDeduplication turns message deduplication on for every topic whose
// namespace and topic policies leave it unset (Pulsar's
// brokerDeduplicationEnabled, off by default): a message whose producer
// name and sequence id were already stored is acknowledged and dropped, and
// a producer that comes back under its name goes on from its last sequence
// id.
func WithDeduplication() Option { return WithBroker(broker.WithDeduplication(true)) }

// Start starts a broker on 127.0.0.1 and a free port, configured by opts, and
// registers tb.Cleanup to close it. It fails the test if the broker cannot
// listen.
//
// The broker's clock is the real clock plus an offset that Advance moves
// (unless opts set another clock). Every event the broker reports is
// recorded (Events, Timeline, ViewURL), and when the test fails the
// timelines of the busiest messages are written to the test log, and their
// pictures to an HTML report whose path is logged (see ReportDirEnv).
func Start(tb testing.TB, opts ...Option) *Broker {
	tb.Helper()
	var set settings
	for _, o := range opts {
		o(&set)
	}
	clock := &broker.OffsetClock{}
	secOpts, secret, err := set.sec.brokerOptions()
	if err != nil {
		tb.Fatalf("pulsarsim: security settings: %v", err)
	}
	brokerOpts := append([]broker.Option{broker.WithClock(clock)}, secOpts...)
	b := broker.New(append(brokerOpts, set.broker...)...)
	tk := &Broker{srv: b, tb: tb, clock: clock, history: view.NewHistory(0), secret: secret,
		superUsers: set.sec.superUsers, opts: append(brokerOpts, set.broker...)}
	b.OnEvent(tk.history.Record)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		tb.Fatalf("pulsarsim: start broker: %v", err)
	}
	if set.sec.oauth2 {
		tk.startIssuer()
		tb.Cleanup(tk.issuerSrv.Close)
	}
	if set.sec.tls {
		if err := tk.startTLS(set.sec); err != nil {
			b.Close()
			tb.Fatalf("pulsarsim: start TLS: %v", err)
		}
	}
	tb.Cleanup(func() {
		if set.invariants {
			if err := tk.CheckInvariants(); err != nil {
				tb.Errorf("pulsarsim: %v", err)
			}
		}
		if tb.Failed() {
			tk.reportFailure()
		}
		if err := tk.srv.Close(); err != nil {
			tb.Errorf("pulsarsim: %v", err)
		}
		if tb.Failed() {
			tk.logFailure()
		}
	})
	return tk
}

// URL returns the broker's service URL, "pulsar://127.0.0.1:PORT", for
// pulsar.ClientOptions.URL.
func (b *Broker) URL() string { return b.srv.URL() }

// Messages returns the messages stored on topic, oldest first, with batches
// expanded. It fails the test if a stored entry cannot be decoded.
func (b *Broker) Messages(topic string) []Message {
	b.tb.Helper()
	ms, err := b.srv.Messages(topic)
	if err != nil {
		b.tb.Fatalf("pulsarsim: messages of %s: %v", topic, err)
	}
	return ms
}

// Client returns a pulsar-client-go client connected to the broker, with the
// client's logging silenced; opts may adjust the options (URL is preset).
// The client is closed when the test ends.
func (b *Broker) Client(opts ...func(*pulsar.ClientOptions)) pulsar.Client {
	b.tb.Helper()
	o := pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()}
	for _, f := range opts {
		f(&o)
	}
	c, err := pulsar.NewClient(o)
	if err != nil {
		b.tb.Fatalf("pulsarsim: new client: %v", err)
	}
	b.tb.Cleanup(c.Close)
	return c
}
