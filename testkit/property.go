package testkit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"pgregory.net/rapid"
)

// HandlerCase is one run of CheckHandler. HandlerCases generates them.
type HandlerCase struct {
	// Type is the subscription type.
	Type pulsar.SubscriptionType
	// Consumers run at once, each on its own client like a separate
	// process (at least 1; Exclusive allows 1).
	Consumers int
	// Messages are published before the consumers start, numbered by the
	// property "i" (MessageIndex) and keyed "k0", "k1", "k2" in turn.
	Messages int
	// Batched publishes them in batches of up to 4.
	Batched bool
	// MaxDeliveries, when positive, gives the consumers a dead-letter
	// policy: a message that arrives with this redelivery count goes to the
	// dead-letter topic instead of the handler (counts exist only on Shared
	// and Key_Shared).
	MaxDeliveries uint32
	// Script says what the handler's dependency does (use Script.Flaky() in
	// the handler); CheckHandler does not read it.
	Script ScriptTable
	// Faults strike during the run.
	Faults FaultSchedule
}

// HandlerCases generates handler cases: any subscription type, 1 to 3
// consumers, 1 to 12 messages, batched or not, with or without a
// dead-letter policy (limit 1 to 3), a script of Ack, Nack and Crash
// outcomes, and a fault schedule.
//
// A case with a dead-letter policy does not cut connections, and its
// consumers crash by closing (the driver keeps the crashed client open):
// pulsar-client-go v0.19.0 has a data race (newPartitionProducer against
// ConnectionClosed) when a connection closes while its dead-letter producer
// is being created, which the race detector reports.
//
// A case that cuts connections can still meet another race of that client
// under the race detector: a request (an ack, say) sent while its
// connection closes calls the connection's WaitGroup Add while the closing
// loop waits on it (SendRequestNoWait against failLeftRequestsWhenClose;
// apache/pulsar-client-go issue 1483, fixed after v0.19.0). It was seen
// once in three runs of go test -race -count=3 ./... (TestWorkerLosesNoMessage).
func HandlerCases() *rapid.Generator[HandlerCase] {
	return rapid.Custom(func(t *rapid.T) HandlerCase {
		c := HandlerCase{
			Type:          rapid.SampledFrom([]pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared, pulsar.Exclusive, pulsar.Failover}).Draw(t, "type"),
			Consumers:     rapid.IntRange(1, 3).Draw(t, "consumers"),
			Messages:      rapid.IntRange(1, 12).Draw(t, "messages"),
			Batched:       rapid.Bool().Draw(t, "batched"),
			MaxDeliveries: uint32(rapid.IntRange(0, 3).Draw(t, "maxDeliveries")),
			Script:        Scripts(Ack, Nack, Crash).Draw(t, "script"),
		}
		if c.Type == pulsar.Exclusive {
			c.Consumers = 1
		}
		var kinds []FaultKind
		if c.MaxDeliveries > 0 {
			kinds = []FaultKind{CrashConsumer, CloseConsumer, FailCommand, DelayCommand}
		}
		c.Faults = FaultSchedules(kinds...).Draw(t, "faults")
		return c
	})
}

// HandlerRun is what happened in one CheckHandler run.
type HandlerRun struct {
	// Topic is the run's fresh topic; DeadLetterTopic its dead-letter topic.
	Topic, DeadLetterTopic string
	// Deliveries are what the handlers got, in order, and what they did.
	Deliveries []Delivery
	// DeadLetters are the messages of the dead-letter topic.
	DeadLetters []Message
}

// Acked returns the indexes (MessageIndex) of the messages a handler acked.
func (r HandlerRun) Acked() map[int]bool {
	out := map[int]bool{}
	for _, d := range r.Deliveries {
		if n, err := strconv.Atoi(d.Properties["i"]); err == nil && d.Acked {
			out[n] = true
		}
	}
	return out
}

// DeadLettered returns the indexes of the messages copied to the
// dead-letter topic.
func (r HandlerRun) DeadLettered() map[int]bool {
	out := map[int]bool{}
	for _, m := range r.DeadLetters {
		if n, err := strconv.Atoi(m.Properties["i"]); err == nil {
			out[n] = true
		}
	}
	return out
}

// settleBudget bounds how long CheckHandler waits for a run to settle.
const settleBudget = 30 * time.Second

// CheckHandler runs the handler h through case c on a fresh topic of this
// broker, and checks that nothing was lost: it publishes c.Messages
// numbered messages, runs c.Consumers consumers of c.Type (with the case's
// dead-letter policy, a 10 ms nack delay, acks sent at once, as
// DriverOptions.AsyncAcks) that hand each message to h, applies c.Faults,
// and waits until the
// subscription has nothing left unacknowledged. Then every message must
// have been acked by a handler or copied to the dead-letter topic, and
// CheckInvariants must pass. A consumer that holds messages h never
// answered is restarted after 150 ms without deliveries, so that they come
// back. A Failover switch delay is not waited out in real time: the broker
// clock moves to its end, as Advance does.
//
// A case ends as soon as it has failed (a handler that panicked, a
// scheduled fault the broker refused), without waiting for the settle
// limit.
//
// t is the rapid.T of a property (rapid.Check) or a *testing.T: failures
// go to it, so that rapid shrinks a failing case. Under rapid, when the
// test fails, its busiest-messages log and HTML report show the last case
// run only: the shrunk case, which rapid runs again to print it.
func (b *Broker) CheckHandler(t rapid.TB, c HandlerCase, h Handler) HandlerRun {
	t.Helper()
	tb, done := CaseTB(b.tb, t)
	defer done()
	run := HandlerRun{Topic: fmt.Sprintf("persistent://public/default/handler-%d", b.cases.Add(1))}
	run.DeadLetterTopic = run.Topic + "-DLQ"
	if _, ok := t.(testing.TB); !ok {
		// Under rapid, the last case run is the one rapid prints (the shrunk
		// case, run again for its output): a failure report shows it alone.
		b.lastCase.Store(&run)
	}
	b.publishCase(tb, run.Topic, c)
	o := DriverOptions{
		Consumer: pulsar.ConsumerOptions{Topic: run.Topic, SubscriptionName: "sub", Type: c.Type,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, NackRedeliveryDelay: 10 * time.Millisecond},
		Consumers: max(c.Consumers, 1), Handler: h, Faults: c.Faults, ReleaseIdle: 150 * time.Millisecond,
		AsyncAcks: true,
	}
	if c.MaxDeliveries > 0 {
		o.Consumer.DLQ = &pulsar.DLQPolicy{MaxDeliveries: c.MaxDeliveries, DeadLetterTopic: run.DeadLetterTopic}
		o.Crash = func(string) {} // see HandlerCases
	}
	failedBefore := t.Failed() // a *testing.T may have failed before this case
	failed := func() bool { return !failedBefore && t.Failed() }
	d := b.driveOn(tb, o)
	ctx, cancel := context.WithTimeout(context.Background(), settleBudget)
	defer cancel()
	err := b.waitFor(ctx, func() bool {
		if failed() {
			return true // the driver or a fault failed the case: its failure is known
		}
		s, ok := b.srv.Subscription(run.Topic, "sub")
		b.skipSwitchDelay(s)
		return ok && s.Backlog == 0
	})
	if failed() {
		d.Close()
		t.Fatalf("pulsarsim: the case failed while its messages were handled (see above); deliveries so far:\n%s",
			listDeliveries(d.Deliveries()))
	}
	if err != nil {
		s, _ := b.srv.Subscription(run.Topic, "sub")
		d.Close()
		t.Fatalf("pulsarsim: %d messages not settled after %v (%v): the subscription still holds %d unacknowledged entries; its state %+v\ndeliveries:\n%s%s",
			c.Messages, settleBudget, err, s.Backlog, s, listDeliveries(d.Deliveries()), b.unsettled(s))
	}
	d.Close()
	run.Deliveries = d.Deliveries()
	run.DeadLetters, _ = b.srv.Messages(run.DeadLetterTopic)
	acked, dead := run.Acked(), run.DeadLettered()
	for i := range c.Messages {
		if !acked[i] && !dead[i] {
			t.Fatalf("pulsarsim: message %d lost: the subscription moved past it, but no handler acked it and no dead-letter copy holds it; deliveries:\n%s",
				i, listDeliveries(run.Deliveries))
		}
	}
	if err := b.CheckInvariants(); err != nil {
		t.Fatalf("pulsarsim: %v", err)
	}
	return run
}

// skipSwitchDelay moves the broker clock to the end of a Failover switch
// delay the subscription waits out (see SkipFailoverDelay).
func (b *Broker) skipSwitchDelay(s SubscriptionSnapshot) bool {
	if s.SwitchingUntil.IsZero() || b.srv.Clock() != Clock(b.clock) {
		return false
	}
	if d := s.SwitchingUntil.Sub(b.srv.Clock().Now()); d > 0 {
		b.clock.Advance(d)
	}
	b.srv.RunTimers()
	return true
}

// SkipFailoverDelay moves the broker clock to the end of the switch delay
// that a Failover subscription waits out after its active consumer changed
// (activeConsumerFailoverDelayTimeMillis, 1 s), as Advance would, so that
// the new active consumer is served at once instead of a second of real
// time later. It reports whether there was such a delay. It does nothing
// when the broker runs on a clock of the test's own (broker.WithClock).
func (b *Broker) SkipFailoverDelay(topic, sub string) bool {
	s, ok := b.srv.Subscription(topic, sub)
	return ok && b.skipSwitchDelay(s)
}

// unsettled draws the lives of a subscription's unacknowledged entries.
func (b *Broker) unsettled(s SubscriptionSnapshot) string {
	var sb strings.Builder
	acked := map[int64]bool{}
	for _, id := range s.Acked {
		acked[id.Entry] = true
	}
	for n, left := s.MarkDelete.Entry+1, s.Backlog; left > 0; n++ {
		if !acked[n] {
			sb.WriteString(b.Timeline(s.Topic, MessageID{Ledger: s.MarkDelete.Ledger, Entry: n}))
			left--
		}
	}
	return sb.String()
}

func listDeliveries(ds []Delivery) string {
	var sb strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&sb, "  message %s: %v\n", d.Properties["i"], d)
	}
	return sb.String()
}

// publishCase publishes a case's messages on topic.
func (b *Broker) publishCase(tb testing.TB, topic string, c HandlerCase) {
	tb.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		tb.Fatalf("pulsarsim: client: %v", err)
	}
	defer client.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: !c.Batched, BatchingMaxMessages: 4})
	if err != nil {
		tb.Fatalf("pulsarsim: producer: %v", err)
	}
	defer p.Close()
	errs := make(chan error, c.Messages)
	for i := range c.Messages {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{
			Key: fmt.Sprint("k", i%3), Payload: fmt.Appendf(nil, "message %d", i), Properties: map[string]string{"i": fmt.Sprint(i)},
		}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	if err := p.Flush(); err != nil {
		tb.Fatalf("pulsarsim: publish: %v", err)
	}
	for range c.Messages {
		if err := <-errs; err != nil {
			tb.Fatalf("pulsarsim: publish: %v", err)
		}
	}
}

// driveOn starts a driver against this broker whose failures and cleanups
// go to tb. A crash cuts the consumer's connection at the broker (unless o
// says otherwise), and scheduled faults are applied to the driver's topic.
func (b *Broker) driveOn(tb testing.TB, o DriverOptions) *Driver {
	tb.Helper()
	o.URL = b.URL()
	topic, sub := o.Consumer.Topic, o.Consumer.SubscriptionName
	if o.Crash == nil {
		o.Crash = func(name string) { b.DropConsumerConnection(topic, sub, name) }
	}
	if o.Inject == nil {
		o.Inject = b.injector(tb, topic, sub)
	}
	return NewDriver(tb, o)
}

// injector applies scheduled faults to a subscription of topic; the
// broker faults it adds are removed at tb's cleanup.
func (b *Broker) injector(tb testing.TB, topic, sub string) func(ScheduledFault, string) {
	return func(f ScheduledFault, consumer string) {
		switch f.Kind {
		case CutConnection:
			b.srv.DropConsumerConnection(topic, sub, consumer)
		case DropConnections:
			b.srv.DropConnections()
		case CloseConsumer:
			b.srv.CloseConsumer(topic, sub, consumer)
		case FailCommand, DelayCommand:
			h, err := b.srv.AddFault(Fault{Command: f.Command, Topic: topic, Count: f.Count, Error: f.Error, Delay: f.Delay})
			if err != nil {
				tb.Errorf("pulsarsim: scheduled fault %+v: %v", f, err)
				return
			}
			tb.Cleanup(h.Remove)
		}
	}
}

// CaseTB returns a testing.TB for one rapid case of the test outer: its
// failures go to t, so that rapid shrinks them, and the functions given to
// its Cleanup run when done is called (at the end of the case, not of the
// test). When t is already a testing.TB, CaseTB returns t, and done does
// nothing.
func CaseTB(outer testing.TB, t rapid.TB) (tb testing.TB, done func()) {
	if tt, ok := t.(testing.TB); ok {
		return tt, func() {}
	}
	c := &caseTB{TB: outer, t: t}
	return c, c.runCleanups
}

// caseTB is a testing.TB for one rapid case (see CaseTB).
type caseTB struct {
	testing.TB
	t        rapid.TB
	mu       sync.Mutex
	cleanups []func()
}

func (c *caseTB) Helper()                      { c.t.Helper() }
func (c *caseTB) Log(args ...any)              { c.t.Log(args...) }
func (c *caseTB) Logf(f string, args ...any)   { c.t.Logf(f, args...) }
func (c *caseTB) Error(args ...any)            { c.t.Error(args...) }
func (c *caseTB) Errorf(f string, args ...any) { c.t.Errorf(f, args...) }
func (c *caseTB) Fatal(args ...any)            { c.t.Fatal(args...) }
func (c *caseTB) Fatalf(f string, args ...any) { c.t.Fatalf(f, args...) }
func (c *caseTB) Fail()                        { c.t.Fail() }
func (c *caseTB) FailNow()                     { c.t.FailNow() }
func (c *caseTB) Failed() bool                 { return c.t.Failed() }
func (c *caseTB) Skip(args ...any)             { c.t.Skip(args...) }
func (c *caseTB) Skipf(f string, args ...any)  { c.t.Skipf(f, args...) }
func (c *caseTB) SkipNow()                     { c.t.SkipNow() }

func (c *caseTB) Cleanup(f func()) {
	c.mu.Lock()
	c.cleanups = append(c.cleanups, f)
	c.mu.Unlock()
}

func (c *caseTB) runCleanups() {
	for {
		c.mu.Lock()
		n := len(c.cleanups)
		if n == 0 {
			c.mu.Unlock()
			return
		}
		f := c.cleanups[n-1]
		c.cleanups = c.cleanups[:n-1]
		c.mu.Unlock()
		f()
	}
}
