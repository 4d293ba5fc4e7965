// Package scenarios is pulsarsim's executable specification: the settlement
// rules of Pulsar (acknowledgement, negative acknowledgement, the client's
// acknowledgement timeout, the dead-letter topic) as named scenarios that
// drive pulsar-client-go, and property checks of the same rules.
//
// Every scenario runs against pulsarsim by default. With PULSAR_URL set (and
// PULSAR_ADMIN_URL for the checks that need the admin API) it runs against
// that Pulsar instead: the assertions that need broker inspection are then
// skipped, and those a client can see are kept.
package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// Target is the broker a scenario runs against.
type Target struct {
	tb testing.TB
	// URL is the broker's service URL.
	URL string
	// AdminURL is the admin API's URL, empty when unknown.
	AdminURL string
	// Sim is the pulsarsim broker, nil against a real Pulsar.
	Sim *testkit.Broker
	run string
}

var runCounter atomic.Int64

// NewTarget returns the broker for one scenario: a fresh pulsarsim broker,
// or the Pulsar named by PULSAR_URL (and PULSAR_ADMIN_URL).
func NewTarget(tb testing.TB) *Target {
	tb.Helper()
	if url := os.Getenv("PULSAR_URL"); url != "" {
		return RemoteTarget(tb, url, os.Getenv("PULSAR_ADMIN_URL"))
	}
	return SimTarget(tb)
}

// SimTarget returns a fresh pulsarsim broker as the target, started with
// opts.
func SimTarget(tb testing.TB, opts ...testkit.Option) *Target {
	tb.Helper()
	t := &Target{tb: tb, run: newRunID()}
	// Every scenario ends with the settlement invariants checked.
	t.Sim = testkit.Start(tb, append([]testkit.Option{testkit.WithInvariants()}, opts...)...)
	t.URL = t.Sim.URL()
	return t
}

// NewTxnTarget returns a broker with the transaction coordinator on: a
// fresh pulsarsim broker started with testkit.WithTransactions, or the
// Pulsar named by PULSAR_TXN_URL (a standalone with
// transactionCoordinatorEnabled=true: scripts/real-pulsar --transactions).
// With PULSAR_URL set and PULSAR_TXN_URL not, the test is skipped: the
// real broker it names runs without transactions.
func NewTxnTarget(tb testing.TB) *Target {
	tb.Helper()
	if url := os.Getenv("PULSAR_TXN_URL"); url != "" {
		return RemoteTarget(tb, url, os.Getenv("PULSAR_TXN_ADMIN_URL"))
	}
	if os.Getenv("PULSAR_URL") != "" {
		tb.Skip("needs a broker with transactions: set PULSAR_TXN_URL")
	}
	return SimTarget(tb, testkit.WithTransactions())
}

// RemoteTarget returns the Pulsar at url (admin API at adminURL, which may be
// empty) as the target. Topic names get a suffix unique to the run.
func RemoteTarget(tb testing.TB, url, adminURL string) *Target {
	return &Target{tb: tb, run: newRunID(), URL: url, AdminURL: adminURL}
}

func newRunID() string { return fmt.Sprintf("%x-%d", rand.Uint32(), runCounter.Add(1)) }

// Inspect returns the pulsarsim broker for assertions that need broker
// inspection, or nil against a real Pulsar; the caller skips those checks
// then.
func (t *Target) Inspect() *testkit.Broker { return t.Sim }

// RequireSim skips the test when it runs against a real Pulsar.
func (t *Target) RequireSim(why string) *testkit.Broker {
	t.tb.Helper()
	if t.Sim == nil {
		t.tb.Skipf("needs pulsarsim: %s", why)
	}
	return t.Sim
}

// Topic returns a full topic name for this scenario, unique per run against
// a real Pulsar (which keeps topics between runs).
func (t *Target) Topic(name string) string {
	if t.Sim != nil {
		return "persistent://public/default/" + name
	}
	return "persistent://public/default/" + name + "-" + t.run
}

// Client returns a pulsar-client-go client for the target, closed when the
// test ends.
func (t *Target) Client() pulsar.Client {
	t.tb.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: t.URL, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.tb.Fatal(err)
	}
	t.tb.Cleanup(c.Close)
	return c
}

// TxnClient returns a pulsar-client-go client with transactions enabled,
// closed when the test ends.
func (t *Target) TxnClient() pulsar.Client {
	t.tb.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: t.URL, Logger: log.DefaultNopLogger(), EnableTransaction: true})
	if err != nil {
		t.tb.Fatal(err)
	}
	t.tb.Cleanup(c.Close)
	return c
}

// Drive starts a settlement driver on the target. Against pulsarsim a Crash
// drops the consumer's connection at the broker; against a real Pulsar it
// closes the consumer's client.
func (t *Target) Drive(o testkit.DriverOptions) *testkit.Driver {
	t.tb.Helper()
	if t.Sim != nil {
		return t.Sim.Drive(o)
	}
	o.URL = t.URL
	return testkit.NewDriver(t.tb, o)
}

// Produce publishes n messages, one entry each, with the property "i" set to
// the message's index, and returns their ids.
func (t *Target) Produce(topic string, n int, props map[string]string) []pulsar.MessageID {
	t.tb.Helper()
	p, err := t.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.tb.Fatal(err)
	}
	defer p.Close()
	ids := make([]pulsar.MessageID, n)
	for i := range n {
		msgProps := map[string]string{"i": fmt.Sprint(i)}
		for k, v := range props {
			msgProps[k] = v
		}
		id, err := p.Send(context.Background(), &pulsar.ProducerMessage{
			Payload: fmt.Appendf(nil, "message %d", i), Properties: msgProps,
		})
		if err != nil {
			t.tb.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// ReadAll reads every message of a topic from the beginning with a reader,
// as any client can, until no more arrive within quiet.
func (t *Target) ReadAll(topic string, quiet time.Duration) []pulsar.Message {
	t.tb.Helper()
	r, err := t.Client().CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.tb.Fatal(err)
	}
	defer r.Close()
	var out []pulsar.Message
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, m)
	}
}

// ReadN reads a topic from the beginning with a reader until it has n
// messages, failing the test when ctx ends first.
func (t *Target) ReadN(ctx context.Context, topic string, n int) []pulsar.Message {
	t.tb.Helper()
	r, err := t.Client().CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.tb.Fatal(err)
	}
	defer r.Close()
	var out []pulsar.Message
	for len(out) < n {
		m, err := r.Next(ctx)
		if err != nil {
			t.tb.Fatalf("reading %d messages of %s: %v (have %d)", n, topic, err, len(out))
		}
		out = append(out, m)
	}
	return out
}

// Ctx returns a context that ends with the test's budget for one scenario.
func Ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
