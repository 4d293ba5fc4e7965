package testkit

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// Outcome is what a scripted handler does with one delivery.
type Outcome int

// The outcomes a Script can choose.
const (
	// Ack acknowledges the message, synchronously: the driver's consumers use
	// AckWithResponse (unless DriverOptions.AsyncAcks), so an ack that
	// returned without error reached the broker and cannot be lost in the
	// client's ack-grouping buffer.
	Ack Outcome = iota
	// Nack negatively acknowledges the message: the client asks for
	// redelivery after its NackRedeliveryDelay.
	Nack
	// NoAnswer neither acks nor nacks: the message stays with the consumer.
	NoAnswer
	// Crash kills the consumer as a process crash would: it stops handling
	// messages, whatever it had received is lost, its connection drops (when
	// the driver's Crash hook drops it; otherwise the consumer closes), and
	// a new consumer with the same name takes its place.
	Crash
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Ack:
		return "ack"
	case Nack:
		return "nack"
	case NoAnswer:
		return "no answer"
	case Crash:
		return "crash"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Script decides what the handler does with a delivery. attempt counts the
// earlier deliveries of the same message to this driver's handlers: 0 the
// first time.
type Script func(m pulsar.Message, attempt int) Outcome

// DriverOptions configure a settlement Driver.
type DriverOptions struct {
	// URL is the broker's service URL; Broker.Drive sets it.
	URL string
	// Consumer holds the options of every consumer. Each consumer is named
	// Consumer.Name (or "driver") plus "-0", "-1"…; AckWithResponse is on
	// unless AsyncAcks is set.
	Consumer pulsar.ConsumerOptions
	// AsyncAcks sends each ack at once without waiting for the broker's
	// answer (AckWithResponse off, no ack grouping): Delivery.Acked then
	// says that the client took the ack. An ack the broker never answers
	// (Pulsar does not answer one for a consumer it just closed) then costs
	// nothing, where a confirmed ack waits for the client's operation
	// timeout, holding back the consumer's reconnection.
	AsyncAcks bool
	// Consumers is how many consumers run, each on its own client like a
	// separate process. Default 1.
	Consumers int
	// Script decides each delivery's outcome. Nil means Ack always.
	Script Script
	// Crash, when set, is called with a crashing consumer's name before the
	// driver closes its client; Broker.Drive sets it to drop the consumer's
	// TCP connection at the broker, so the broker sees a disconnect and not
	// a close.
	Crash func(consumer string)
	// ReleaseIdle, when positive, restarts (closes and reopens) a consumer
	// that holds messages it never answered once no delivery arrived for
	// this long: those messages go back to the subscription.
	ReleaseIdle time.Duration
	// Handler, when set, is the code under test and takes Script's place:
	// the driver hands it each message with its consumer, and reads what it
	// did from that consumer: an Ack that returned no error, a Nack, or
	// neither (no answer). A panic in Handler crashes its consumer, as it
	// would the process (Flaky panics so on purpose); any other panic than
	// Flaky's also fails the test.
	Handler Handler
	// Faults strike as the deliveries reach the handlers (see
	// ScheduledFault). The driver applies CrashConsumer itself and hands the
	// other kinds to Inject.
	Faults FaultSchedule
	// Inject applies a scheduled fault (not CrashConsumer) at a delivery to
	// the named consumer, once its handler is done with it. Broker.Drive
	// sets it; without it those faults are skipped.
	Inject func(f ScheduledFault, consumer string)
	// Client, when set, adjusts the options of each consumer's client (URL
	// and a silent Logger are preset).
	Client func(*pulsar.ClientOptions)
}

// Delivery is one message a driver's handler saw, and what it did.
type Delivery struct {
	Consumer string
	// ID is "ledger:entry:partition:batch".
	ID              string
	Key             string
	Payload         []byte
	Properties      map[string]string
	RedeliveryCount uint32
	Attempt         int
	Outcome         Outcome
	// Acked is set when the outcome was Ack and the broker confirmed it.
	Acked bool
	// Restarts counts the consumers the driver had begun to close to replace
	// them (after a crash or to release unanswered messages) before this
	// delivery.
	Restarts int
}

// Driver runs consumers whose handler follows a Script. It is the building
// block of the scenarios and property checks.
type Driver struct {
	tb   testing.TB
	opts DriverOptions

	mu         sync.Mutex
	deliveries []Delivery
	lastOf     map[string]int // message key -> index of its last delivery
	attempts   map[string]int
	count      int // deliveries so far, for the fault schedule
	last       time.Time
	restarts   int
	slots      []*incarnation
	retired    []pulsar.Client
	closed     bool
	panicked   bool // the handler panicked once (reported) already
	changed    chan struct{}

	crashes chan *incarnation
	stop    chan struct{}
	wg      sync.WaitGroup
}

// incarnation is one life of a consumer slot: a client, its consumer and
// the goroutine reading it.
type incarnation struct {
	slot   int
	name   string
	client pulsar.Client
	cons   pulsar.Consumer
	stop   chan struct{}
	halted sync.Once
	done   chan struct{}
	held   int             // deliveries left unanswered, under the driver's lock
	rec    pulsar.Consumer // what Handler gets: the consumer, recording its answers
	call   *handlerCall    // the delivery Handler is handling, under the driver's lock
}

// halt tells the incarnation's reader to stop; it may be called many times.
func (inc *incarnation) halt() { inc.halted.Do(func() { close(inc.stop) }) }

// MessageKey formats a message id as a Delivery.ID does.
func MessageKey(id pulsar.MessageID) string {
	return fmt.Sprintf("%d:%d:%d:%d", id.LedgerID(), id.EntryID(), id.PartitionIdx(), id.BatchIdx())
}

// NewDriver starts a settlement driver against the broker at o.URL, any
// Pulsar broker (Broker.Drive is the form for a test's own broker). It
// stops when the test ends, or at Close. It fails tb when a consumer cannot
// start.
func NewDriver(tb testing.TB, o DriverOptions) *Driver {
	tb.Helper()
	if o.Consumers <= 0 {
		o.Consumers = 1
	}
	if o.Script == nil {
		o.Script = func(pulsar.Message, int) Outcome { return Ack }
	}
	if o.Consumer.Name == "" {
		o.Consumer.Name = "driver"
	}
	o.Consumer.AckWithResponse = !o.AsyncAcks
	if o.AsyncAcks && o.Consumer.AckGroupingOptions == nil {
		o.Consumer.AckGroupingOptions = &pulsar.AckGroupingOptions{MaxSize: 1}
	}
	d := &Driver{
		tb: tb, opts: o, attempts: map[string]int{}, lastOf: map[string]int{}, last: time.Now(),
		changed: make(chan struct{}, 1), crashes: make(chan *incarnation, o.Consumers), stop: make(chan struct{}),
	}
	for i := 0; i < o.Consumers; i++ {
		inc, err := d.startRetrying(i)
		if err != nil {
			d.Close()
			tb.Fatalf("pulsarsim driver: start consumer %d: %v", i, err)
		}
		d.slots = append(d.slots, inc)
	}
	d.wg.Add(1)
	go d.supervise()
	tb.Cleanup(d.Close)
	return d
}

// Drive starts a settlement driver against this broker. A Crash outcome
// drops the consumer's connection at the broker (unless o.Crash says
// otherwise), and o.Faults strike o.Consumer's topic and subscription.
func (b *Broker) Drive(o DriverOptions) *Driver {
	b.tb.Helper()
	return b.driveOn(b.tb, o)
}

func (d *Driver) start(slot int) (*incarnation, error) {
	clo := pulsar.ClientOptions{URL: d.opts.URL, Logger: log.DefaultNopLogger()}
	if d.opts.Client != nil {
		d.opts.Client(&clo)
	}
	client, err := pulsar.NewClient(clo)
	if err != nil {
		return nil, err
	}
	co := d.opts.Consumer
	co.Name = fmt.Sprintf("%s-%d", d.opts.Consumer.Name, slot)
	cons, err := client.Subscribe(co)
	if err != nil {
		client.Close()
		return nil, err
	}
	inc := &incarnation{slot: slot, name: co.Name, client: client, cons: cons,
		stop: make(chan struct{}), done: make(chan struct{})}
	inc.rec = &recordingConsumer{Consumer: cons, d: d, inc: inc}
	go d.read(inc)
	return inc, nil
}

// startRetries and startBackoff bound how a driver starts a consumer again
// when the broker refuses it (a scheduled SUBSCRIBE failure, say), as a
// process supervisor would.
const (
	startRetries = 20
	startBackoff = 50 * time.Millisecond
)

// startRetrying starts the consumer of a slot, trying again while the
// subscribe fails, until the driver stops.
func (d *Driver) startRetrying(slot int) (*incarnation, error) {
	inc, err := d.start(slot)
	for try := 1; err != nil && try < startRetries; try++ {
		select {
		case <-d.stop:
			return nil, err
		case <-time.After(startBackoff):
		}
		inc, err = d.start(slot)
	}
	return inc, err
}

func (d *Driver) read(inc *incarnation) {
	defer close(inc.done)
	for {
		select {
		case <-inc.stop:
			return
		case m, ok := <-inc.cons.Chan():
			if !ok {
				return
			}
			if !d.handle(inc, m) {
				return
			}
		}
	}
}

// handle applies the script (or runs the handler) for one delivery, after
// the faults scheduled before it. It returns false when the consumer
// crashed and must read no more.
//
// The delivery is recorded before the handler answers it, and an ack is
// recorded before it is sent: a test that sees the broker settle a message
// (WaitBacklog) then finds its delivery, acked, in Deliveries.
func (d *Driver) handle(inc *incarnation, m pulsar.Message) bool {
	key := MessageKey(m.ID())
	d.mu.Lock()
	attempt := d.attempts[key]
	d.attempts[key]++
	faults := d.opts.Faults.at(d.count)
	d.count++
	d.last = time.Now()
	idx := len(d.deliveries)
	d.deliveries = append(d.deliveries, Delivery{
		Consumer: inc.name, ID: key, Key: m.Key(), Payload: m.Payload(), Properties: maps.Clone(m.Properties()),
		RedeliveryCount: m.RedeliveryCount(), Attempt: attempt, Outcome: NoAnswer, Restarts: d.restarts,
	})
	d.lastOf[key] = idx
	d.mu.Unlock()
	outcome, acked := d.decide(inc, m, idx, attempt, crashes(faults))
	d.strike(inc, faults)
	d.mu.Lock()
	if outcome == NoAnswer || (outcome == Ack && !acked) {
		inc.held++
	}
	del := &d.deliveries[idx]
	del.Outcome, del.Acked = outcome, acked
	d.mu.Unlock()
	d.notify()
	if outcome == Crash {
		d.crashes <- inc
		return false
	}
	return true
}

// crashes reports whether a CrashConsumer fault is among faults.
func crashes(faults []ScheduledFault) bool {
	for _, f := range faults {
		if f.Kind == CrashConsumer {
			return true
		}
	}
	return false
}

// strike hands the faults scheduled at a delivery to inc, other than a
// crash, to Inject, once the delivery was handled.
func (d *Driver) strike(inc *incarnation, faults []ScheduledFault) {
	for _, f := range faults {
		if f.Kind != CrashConsumer && d.opts.Inject != nil {
			d.opts.Inject(f, inc.name)
		}
	}
}

// decide returns what becomes of delivery idx, and whether it was acked.
func (d *Driver) decide(inc *incarnation, m pulsar.Message, idx, attempt int, crash bool) (Outcome, bool) {
	switch {
	case crash:
		return Crash, false
	case d.opts.Handler != nil:
		return d.runHandler(inc, m, idx)
	}
	outcome := d.runScript(m, attempt)
	switch outcome {
	case Ack:
		d.mu.Lock()
		d.deliveries[idx].Outcome, d.deliveries[idx].Acked = Ack, true
		d.mu.Unlock()
		return Ack, inc.cons.Ack(m) == nil
	case Nack:
		inc.cons.Nack(m)
	}
	return outcome, false
}

// runScript asks the script for a delivery's outcome. A script that
// cannot say (a ScriptTable asked about a message without an index) fails
// the test, and the message is left unanswered.
func (d *Driver) runScript(m pulsar.Message, attempt int) (outcome Outcome) {
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(unindexed)
			if !ok {
				panic(r)
			}
			d.tb.Errorf("pulsarsim driver: %v", u)
			outcome = NoAnswer
		}
	}()
	return d.opts.Script(m, attempt)
}

func (d *Driver) notify() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// supervise replaces crashed consumers and releases idle held messages.
func (d *Driver) supervise() {
	defer d.wg.Done()
	var tick <-chan time.Time
	if d.opts.ReleaseIdle > 0 {
		t := time.NewTicker(d.opts.ReleaseIdle / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-d.stop:
			return
		case inc := <-d.crashes:
			if d.opts.Crash != nil {
				d.opts.Crash(inc.name)
			}
			d.replace(inc)
		case <-tick:
			d.mu.Lock()
			idle := time.Since(d.last) >= d.opts.ReleaseIdle
			var holding []*incarnation
			for _, inc := range d.slots {
				if idle && inc != nil && inc.held > 0 {
					holding = append(holding, inc)
				}
			}
			d.mu.Unlock()
			for _, inc := range holding {
				d.replace(inc)
			}
		}
	}
}

// replace ends an incarnation (its consumer closes, so the broker takes back
// whatever it held) and starts the next one, on a new client, in its slot.
//
// The old client stays open until the driver closes: closing a
// pulsar-client-go v0.19.0 client while its dead-letter producer is being
// created is a data race inside the client (newPartitionProducer against
// ConnectionClosed), so only the consumer closes here.
func (d *Driver) replace(inc *incarnation) {
	d.mu.Lock()
	current := d.slots[inc.slot] == inc
	d.mu.Unlock()
	if !current {
		// Replaced already: a consumer chosen for release can crash before
		// it stops, and then comes back through the crash channel.
		return
	}
	inc.halt()
	<-inc.done
	// Counted before the close: the broker hands what the old consumer held
	// to the others as it closes it, and their handlers can be done with it
	// before Close returns (it waits for the broker's answer and closes the
	// consumer's dead-letter producer too). Every delivery from the close
	// on, to any consumer, sees the count; the old consumer's reader has
	// stopped, so none of its own deliveries does.
	d.mu.Lock()
	d.restarts++
	d.mu.Unlock()
	inc.cons.Close()
	d.mu.Lock()
	d.retired = append(d.retired, inc.client)
	d.mu.Unlock()
	next, err := d.startRetrying(inc.slot)
	d.mu.Lock()
	switch {
	case err != nil:
		if !d.closed {
			d.tb.Errorf("pulsarsim driver: restart %s: %v", inc.name, err)
		}
		d.slots[inc.slot] = nil
		d.mu.Unlock()
	case d.closed:
		d.mu.Unlock()
		next.shutdown()
	default:
		d.slots[inc.slot] = next
		d.last = time.Now()
		d.mu.Unlock()
	}
}

// shutdown stops an incarnation's reader, then closes its client. The
// reader stops first, so that no handler is acking when its consumer
// closes: pulsar-client-go v0.19.0 leaves an ack that waits for the
// broker's response blocked for good when its consumer closes meanwhile.
func (inc *incarnation) shutdown() {
	inc.halt()
	<-inc.done
	inc.client.Close()
}

// Deliveries returns a copy of every delivery so far, in the order the
// handlers saw them.
func (d *Driver) Deliveries() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Delivery(nil), d.deliveries...)
}

// Restarts returns how many consumers the driver has begun to close so far
// to replace them (after a crash or to release unanswered messages): also
// those after the last delivery a handler saw, whose messages may have gone
// only to the dead-letter topic since.
func (d *Driver) Restarts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restarts
}

// Wait blocks until cond holds for the deliveries so far, failing the test
// with what when ctx ends first.
func (d *Driver) Wait(ctx context.Context, what string, cond func([]Delivery) bool) {
	d.tb.Helper()
	for !cond(d.Deliveries()) {
		select {
		case <-ctx.Done():
			d.tb.Fatalf("pulsarsim driver: waiting for %s: %v (after %d deliveries)", what, ctx.Err(), len(d.Deliveries()))
		case <-d.changed:
		case <-time.After(fallbackPoll):
		}
	}
}

// Close stops the driver and closes its consumers and clients.
func (d *Driver) Close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	d.wg.Wait()
	d.mu.Lock()
	slots := append([]*incarnation(nil), d.slots...)
	retired := d.retired
	d.mu.Unlock()
	for _, inc := range slots {
		if inc != nil {
			inc.shutdown()
		}
	}
	for _, c := range retired {
		c.Close()
	}
}
