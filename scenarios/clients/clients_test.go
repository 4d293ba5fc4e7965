// Package clients_test runs the seed's settlement scenarios with real Pulsar
// clients other than Go's, each through a small driver in this folder: the
// Rust `pulsar` crate, the Java client and the Python client (which wraps the
// C++ one). Each driver connects to a pulsarsim started by the test, produces
// the scenario's messages, answers each delivery as the scenario's script
// says and prints a JSON-lines trace; the test checks the trace and what the
// broker saw against what spec/clients.md says of each client.
//
// The drivers build from the registries (cargo, Maven, pip) into a cache
// folder, so the tests are off unless PULSARSIM_CLIENTS=1.
package clients_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// nackPrecision is how early a Java or C++ nack may come back: both clients
// round a nack's due time down to 2^8 ms buckets by default
// (negativeAckRedeliveryDelayPrecision / precision bits 8).
const nackPrecision = 256 * time.Millisecond

// driverRole is the role of the drivers' token in the secure scenario.
const driverRole = "driver"

// scenario is one settlement scenario, run with each client it applies to.
type scenario struct {
	name     string
	subType  string
	messages int
	script   map[string][]string
	// ackTimeout per client name; absent means no ack timeout.
	ackTimeout map[string]time.Duration
	nackDelay  time.Duration
	maxRedeliv int // dead-letter policy when > 0
	// secure runs it over pulsar+ssl with host name verification and a
	// token, against a broker that enforces authorization.
	secure bool
	// txn runs it against a broker with transactions, with an output
	// topic for the handler's "txn-commit" and "txn-abort"; only the
	// clients listed run it (the drivers that have those actions).
	txn     bool
	clients []string
	check   func(t *testing.T, r *result)
}

// result is what one run of a driver left: its trace and the broker's view.
type result struct {
	client   string
	sc       *scenario
	b        *testkit.Broker
	topic    string
	sub      string
	dlq      string
	output   string // the txn scenario's output topic
	trace    []traceLine
	events   []broker.Event
	entryOf  map[int]int64 // message index → entry id, from the "produced" lines
	ackWait  time.Duration
	received []traceLine
	conns    []broker.ConnectionSnapshot // the driver's connections once settled
}

func (r *result) counted() bool { return r.sc.subType == "Shared" || r.sc.subType == "Key_Shared" }

// seen returns the handler's deliveries of message i, in order.
func (r *result) seen(i int) []traceLine {
	var out []traceLine
	for _, l := range r.received {
		if l.I == i {
			out = append(out, l)
		}
	}
	return out
}

// delivered returns the broker's deliveries of message i on the subscription.
func (r *result) delivered(i int) []broker.Event {
	var out []broker.Event
	for _, e := range r.events {
		if e.Kind == broker.EventDelivered && e.Subscription == r.sub && e.ID.Entry == r.entryOf[i] && sameTopic(e.Topic, r.topic) {
			out = append(out, e)
		}
	}
	return out
}

// firstRedelivery returns the first redelivery request of the subscription.
func (r *result) firstRedelivery(t *testing.T) broker.Event {
	t.Helper()
	for _, e := range r.events {
		if e.Kind == broker.EventRedeliveryAsked && e.Subscription == r.sub && sameTopic(e.Topic, r.topic) {
			return e
		}
	}
	t.Fatalf("%s: the broker saw no redelivery request", r.client)
	return broker.Event{}
}

func (r *result) ackedEvent(i int) (broker.Event, bool) {
	for _, e := range r.events {
		if e.Kind == broker.EventAcked && e.Subscription == r.sub && e.ID.Entry == r.entryOf[i] && sameTopic(e.Topic, r.topic) {
			return e, true
		}
	}
	return broker.Event{}, false
}

func sameTopic(a, b string) bool {
	return strings.TrimPrefix(a, "persistent://public/default/") == strings.TrimPrefix(b, "persistent://public/default/")
}

func counts(evs []broker.Event) []int32 {
	out := []int32{}
	for _, e := range evs {
		out = append(out, e.RedeliveryCount)
	}
	return out
}

func handlerCounts(ls []traceLine) []int {
	out := []int{}
	for _, l := range ls {
		if l.RedeliveryCount != nil {
			out = append(out, *l.RedeliveryCount)
		}
	}
	return out
}

func entriesOf(ids []broker.MessageID) []int64 {
	out := []int64{}
	for _, id := range ids {
		out = append(out, id.Entry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func scenarios() []*scenario {
	var list []*scenario
	checkAck := func(t *testing.T, r *result) {
		for i := 0; i < 3; i++ {
			if n := len(r.seen(i)); n != 1 {
				t.Errorf("%s: message %d reached the handler %d times, want 1", r.client, i, n)
			}
		}
		for _, e := range r.events {
			if e.Kind == broker.EventRedeliveryAsked {
				t.Errorf("%s: redelivery asked with every message acked: %+v", r.client, e)
			}
		}
	}
	list = append(list, &scenario{name: "ack", subType: "Shared", messages: 3, check: checkAck})
	list = append(list, &scenario{name: "ack-tls-token", subType: "Shared", messages: 3, secure: true,
		check: func(t *testing.T, r *result) {
			checkAck(t, r)
			conns := r.conns
			if len(conns) == 0 {
				t.Errorf("%s: no connection left to inspect", r.client)
			}
			for _, c := range conns {
				if !c.TLS || c.Role != driverRole || c.AuthMethod != "token" {
					t.Errorf("%s: connection %+v, want TLS with the token of %q", r.client, c, driverRole)
				}
			}
		}})
	for _, typ := range []string{"Exclusive", "Failover", "Shared", "Key_Shared"} {
		list = append(list, &scenario{
			name: "nack-" + typ, subType: typ, messages: 3,
			script:    map[string][]string{"1": {"nack"}},
			nackDelay: time.Second,
			check:     checkNack,
		})
	}
	for _, typ := range []string{"Shared", "Exclusive"} {
		list = append(list, &scenario{
			name: "ack-timeout-" + typ, subType: typ, messages: 2,
			script: map[string][]string{"0": {"none"}},
			// Java refuses less than 1 s, C++ (and so Python) less than 10 s.
			ackTimeout: map[string]time.Duration{"rust": time.Second, "java": time.Second, "python": 10 * time.Second},
			check:      checkAckTimeout,
		})
	}
	list = append(list, &scenario{
		name: "txn-consume-transform-produce", subType: "Shared", messages: 3, txn: true, clients: []string{"java"},
		script: map[string][]string{"1": {"txn-abort"}, "*": {"txn-commit"}},
		check:  checkTransform,
	})
	list = append(list, &scenario{
		name: "dead-letter", subType: "Shared", messages: 2,
		script:     map[string][]string{"0": {"nack", "nack", "nack", "nack", "nack", "nack"}},
		nackDelay:  300 * time.Millisecond,
		maxRedeliv: 2,
		check:      checkDeadLetter,
	})
	return list
}

// checkCounts checks the rule of every scenario: redelivery counts exist on
// Shared and Key_Shared only, and the count the handler saw is one the broker
// sent.
func checkCounts(t *testing.T, r *result) {
	t.Helper()
	for _, e := range r.events {
		if e.Kind == broker.EventDelivered && e.Subscription == r.sub && !r.counted() && e.RedeliveryCount != 0 {
			t.Errorf("%s: %s delivery of entry %d with count %d, want 0", r.client, r.sc.subType, e.ID.Entry, e.RedeliveryCount)
		}
	}
	for i := 0; i < r.sc.messages; i++ {
		sent := map[int32]bool{}
		for _, e := range r.delivered(i) {
			sent[e.RedeliveryCount] = true
		}
		for _, l := range r.seen(i) {
			if l.RedeliveryCount == nil {
				continue // the Rust crate does not hand the count to the application
			}
			if !sent[int32(*l.RedeliveryCount)] {
				t.Errorf("%s: handler saw message %d with count %d, which the broker never sent (%v)", r.client, i, *l.RedeliveryCount, counts(r.delivered(i)))
			}
			if !r.counted() && *l.RedeliveryCount != 0 {
				t.Errorf("%s: handler saw count %d on %s", r.client, *l.RedeliveryCount, r.sc.subType)
			}
		}
	}
}

// checkNack: message 1 is nacked once, then acked.
func checkNack(t *testing.T, r *result) {
	seen := r.seen(1)
	if len(seen) < 2 || seen[0].Action != "nack" {
		t.Fatalf("%s: message 1 reached the handler %d times, want a nack then a redelivery", r.client, len(seen))
	}
	if r.counted() {
		if len(seen) != 2 {
			t.Errorf("%s: message 1 reached the handler %d times, want 2", r.client, len(seen))
		}
		if got := counts(r.delivered(1)); fmt.Sprint(got) != "[0 1]" {
			t.Errorf("%s: broker delivered message 1 with counts %v, want [0 1]", r.client, got)
		}
		if hc := handlerCounts(seen); r.client != "rust" && fmt.Sprint(hc) != "[0 1]" {
			t.Errorf("%s: handler saw counts %v, want [0 1]", r.client, hc)
		}
		for _, i := range []int{0, 2} {
			if n := len(r.seen(i)); n != 1 {
				t.Errorf("%s: message %d reached the handler %d times, want 1", r.client, i, n)
			}
		}
	}
	req := r.firstRedelivery(t)
	// What the redelivery request holds: Rust always names the nacked id;
	// Java and C++ name ids on Shared and Key_Shared and ask for everything
	// (no ids) on Exclusive and Failover.
	wantAll := r.client != "rust" && !r.counted()
	if wantAll {
		if len(req.IDs) != 0 {
			t.Errorf("%s: redelivery request on %s names %v, want none (redeliver all)", r.client, r.sc.subType, entriesOf(req.IDs))
		}
	} else if got := entriesOf(req.IDs); fmt.Sprint(got) != fmt.Sprint([]int64{r.entryOf[1]}) {
		t.Errorf("%s: redelivery request names entries %v, want [%d]", r.client, got, r.entryOf[1])
	}
	first := r.delivered(1)[0]
	switch r.client {
	case "rust":
		// At once: the handler nacks message 1 before it acks message 2, and
		// the request reaches the broker before that ack.
		ack2, ok := r.ackedEvent(2)
		if !ok {
			t.Fatalf("%s: no ack of message 2", r.client)
		}
		if req.Seq > ack2.Seq {
			t.Errorf("%s: redelivery request (event %d) came after the ack of the next message (event %d): the nack was not sent at once", r.client, req.Seq, ack2.Seq)
		}
	default:
		// Java and C++ wait negativeAckRedeliveryDelay (rounded down to the
		// nack tracker's precision) before they ask.
		if waited := req.Time.Sub(first.Time); waited < r.sc.nackDelay-nackPrecision {
			t.Errorf("%s: redelivery asked %v after the delivery, want at least the nack delay %v (less %v precision)", r.client, waited, r.sc.nackDelay, nackPrecision)
		} else {
			t.Logf("%s: nack delay %v, redelivery asked %v after the delivery", r.client, r.sc.nackDelay, waited.Round(time.Millisecond))
		}
	}
}

// checkAckTimeout: message 0 gets no answer, then is acked on its redelivery.
func checkAckTimeout(t *testing.T, r *result) {
	seen := r.seen(0)
	if len(seen) < 2 || seen[0].Action != "none" {
		t.Fatalf("%s: message 0 reached the handler %d times, want an unanswered delivery then a redelivery", r.client, len(seen))
	}
	if r.counted() {
		if got := counts(r.delivered(0)); fmt.Sprint(got) != "[0 1]" {
			t.Errorf("%s: broker delivered message 0 with counts %v, want [0 1]", r.client, got)
		}
	}
	req := r.firstRedelivery(t)
	first := r.delivered(0)[0]
	if waited := req.Time.Sub(first.Time); waited < r.ackWait {
		t.Errorf("%s: redelivery asked %v after the delivery, before the ack timeout %v", r.client, waited, r.ackWait)
	} else {
		t.Logf("%s: ack timeout %v, redelivery asked %v after the delivery", r.client, r.ackWait, waited.Round(time.Millisecond))
	}
	wantAll := r.client != "rust" && !r.counted()
	if wantAll {
		if len(req.IDs) != 0 {
			t.Errorf("%s: ack-timeout redelivery request on %s names %v, want none (redeliver all)", r.client, r.sc.subType, entriesOf(req.IDs))
		}
	} else if got := entriesOf(req.IDs); fmt.Sprint(got) != fmt.Sprint([]int64{r.entryOf[0]}) {
		t.Errorf("%s: ack-timeout redelivery request names entries %v, want [%d]", r.client, got, r.entryOf[0])
	}
}

// checkDeadLetter: message 0 is always nacked, with max_redeliver_count 2.
func checkDeadLetter(t *testing.T, r *result) {
	max := r.sc.maxRedeliv
	seen := r.seen(0)
	// Rust (like Go) moves the delivery that arrives with count == max aside
	// before the handler sees it; Java and C++ still hand it over and move it
	// on its next nack, so their handler sees one delivery more.
	want := max
	if r.client != "rust" {
		want = max + 1
	}
	if len(seen) != want {
		t.Errorf("%s: message 0 reached the handler %d times, want %d", r.client, len(seen), want)
	}
	if hc := handlerCounts(seen); r.client != "rust" {
		wantCounts := []int{}
		for c := 0; c < want; c++ {
			wantCounts = append(wantCounts, c)
		}
		if fmt.Sprint(hc) != fmt.Sprint(wantCounts) {
			t.Errorf("%s: handler saw counts %v, want %v", r.client, hc, wantCounts)
		}
	}
	bc := counts(r.delivered(0))
	t.Logf("%s: broker delivered message 0 with counts %v", r.client, bc)
	switch {
	case r.client == "rust" && (len(bc) == 0 || bc[len(bc)-1] != int32(max)):
		// The delivery with count == max is the one moved aside.
		t.Errorf("%s: broker delivered message 0 with counts %v, want the last at %d", r.client, bc, max)
	case r.client != "rust" && !slices.Contains(bc, int32(max)):
		// The handler saw count == max; Java 4.0.13 may also ask for one more
		// redelivery of it while it moves it aside (count max+1, never
		// handed over), which is why the last count is not checked.
		t.Errorf("%s: broker delivered message 0 with counts %v, want one at %d", r.client, bc, max)
	}
	if _, ok := r.ackedEvent(0); !ok {
		t.Errorf("%s: the original of message 0 was never acked", r.client)
	}
	dl := r.b.Messages(r.dlq)
	if len(dl) != 1 {
		t.Fatalf("%s: dead-letter topic holds %d messages, want 1", r.client, len(dl))
	}
	m := dl[0]
	if string(m.Payload) != "m0" || m.Properties["i"] != "0" {
		t.Errorf("%s: dead letter is %q with properties %v, want m0 with i=0", r.client, m.Payload, m.Properties)
	}
	if real := m.Properties["REAL_TOPIC"]; !sameTopic(real, r.topic) {
		t.Errorf("%s: REAL_TOPIC = %q, want %s", r.client, real, r.topic)
	}
	origin := m.Properties["ORIGIN_MESSAGE_ID"]
	if !strings.Contains(origin, strconv.FormatInt(r.entryOf[0], 10)) || origin == "" {
		t.Errorf("%s: ORIGIN_MESSAGE_ID = %q, want the original's id (entry %d)", r.client, origin, r.entryOf[0])
	}
	if m.BatchSize != 0 {
		t.Errorf("%s: dead letter was sent in a batch of %d", r.client, m.BatchSize)
	}
	t.Logf("%s: dead letter properties %v", r.client, m.Properties)
}

// checkTransform: each message is consumed, transformed and produced in a
// transaction; message 1's first transaction aborts, so it comes back (count
// 1 on Shared) and its second one commits. The output topic is read to a
// sentinel by a Go reader: each output once, the aborted one never (the
// Java client puts the transaction in its messages' metadata, where Pulsar's
// dispatcher looks).
func checkTransform(t *testing.T, r *result) {
	seen := r.seen(1)
	if len(seen) != 2 || seen[0].Action != "txn-abort" || seen[1].Action != "txn-commit" {
		t.Fatalf("%s: message 1 reached the handler as %+v, want an aborted then a committed transaction", r.client, seen)
	}
	if hc := handlerCounts(seen); fmt.Sprint(hc) != "[0 1]" {
		t.Errorf("%s: handler saw message 1 with counts %v, want [0 1]", r.client, hc)
	}
	var outcomes []string
	for _, l := range r.trace {
		if l.Event == "txn" {
			outcomes = append(outcomes, fmt.Sprintf("m%d:%s", l.I, l.Outcome))
		}
	}
	if want := "[m0:committed m1:aborted m2:committed m1:committed]"; fmt.Sprint(outcomes) != want {
		t.Errorf("%s: transactions %v, want %s", r.client, outcomes, want)
	}
	stored := r.b.Messages(r.output)
	aborted := 0
	for _, m := range stored {
		if m.Txn == nil {
			t.Errorf("%s: output %q carries no transaction in its metadata", r.client, m.Payload)
		}
	}
	for _, tr := range r.b.Transactions() {
		if tr.Status == "ABORTED" {
			aborted++
		}
	}
	if aborted != 1 || len(stored) != 4 {
		t.Errorf("%s: %d outputs stored and %d transactions aborted, want 4 and 1", r.client, len(stored), aborted)
	}
	got := readToSentinel(t, r.b, r.output)
	if want := "[out-m0 out-m2 out-m1]"; fmt.Sprint(got) != want {
		t.Errorf("%s: a reader of the output topic got %v, want %s", r.client, got, want)
	}
}

// run runs one scenario with one client against a fresh broker.
func run(t *testing.T, c *client, argv []string, sc *scenario) {
	var b *testkit.Broker
	switch {
	case sc.secure:
		b = testkit.Start(t, testkit.WithInvariants(), testkit.WithTLS(), testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
		b.GrantNamespace("public/default", driverRole, "produce", "consume")
	case sc.txn:
		b = testkit.Start(t, testkit.WithInvariants(), testkit.WithTransactions())
	default:
		b = testkit.Start(t, testkit.WithInvariants())
	}
	var mu sync.Mutex
	var events []broker.Event
	cancel := b.OnEvent(func(e broker.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	defer cancel()

	r := &result{client: c.name, sc: sc, b: b, sub: "sub",
		topic: "persistent://public/default/" + sc.name + "-" + c.name, entryOf: map[int]int64{}}
	spec := map[string]any{
		"service_url":       b.URL(),
		"topic":             r.topic,
		"subscription":      r.sub,
		"subscription_type": sc.subType,
		"messages":          sc.messages,
		"script":            sc.script,
		"default":           "ack",
		"stop":              map[string]any{"stdin_eof": true},
		"deadline_ms":       120000,
	}
	if d, ok := sc.ackTimeout[c.name]; ok {
		spec["ack_timeout_ms"] = d.Milliseconds()
		r.ackWait = d
	}
	if sc.nackDelay > 0 {
		spec["nack_delay_ms"] = sc.nackDelay.Milliseconds()
	}
	if sc.maxRedeliv > 0 {
		r.dlq = r.topic + "-DLQ"
		spec["dead_letter"] = map[string]any{"max_redeliver_count": sc.maxRedeliv, "topic": r.dlq}
	}
	if sc.script == nil {
		spec["script"] = map[string][]string{}
	}
	if sc.txn {
		r.output = r.topic + "-out"
		spec["output_topic"] = r.output
		spec["default"] = "txn-commit"
	}
	if sc.secure {
		spec["service_url"] = b.TLSURL()
		spec["tls_trust_certs_file"] = b.CAFile()
		spec["tls_validate_hostname"] = true
		spec["auth_token"] = b.Token(driverRole)
	}
	js, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(file, js, 0o644); err != nil {
		t.Fatal(err)
	}

	p := startDriver(t, argv, file)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("scenario:\n%s\ndriver output:\n%s", js, p.dump())
		}
	})

	// Settled: every message produced, the backlog back to 0 and, with a
	// dead-letter policy, the dead letter stored. With nothing left
	// unacknowledged, nothing can come back, so the trace is complete.
	gap, isGap := brokerGaps[c.name+"/"+sc.name]
	settleWithin := 90 * time.Second
	if isGap {
		settleWithin = 12 * time.Second
	}
	settled := waitUntil(settleWithin, func() bool {
		if p.hasExited() {
			return true
		}
		produced := 0
		for _, l := range p.snapshot() {
			if l.Event == "produced" {
				produced++
			}
		}
		if produced < sc.messages {
			return false
		}
		s, ok := b.Subscription(r.topic, r.sub)
		if !ok || s.Backlog != 0 {
			return false
		}
		if r.dlq != "" {
			if ts, ok := b.Topic(r.dlq); !ok || ts.Entries == 0 {
				return false
			}
		}
		return true
	})
	if !settled {
		if isGap {
			t.Skipf("known pulsarsim gap, the scenario did not settle: %s", gap)
		}
		t.Fatalf("%s: the scenario did not settle within %v (backlog 0, every message produced, dead letter stored)", c.name, settleWithin)
	}
	if isGap {
		defer func() {
			if !t.Failed() {
				t.Errorf("known pulsarsim gap %q no longer shows: remove %s/%s from brokerGaps and update the README table", gap, c.name, sc.name)
			}
		}()
	}
	r.conns = b.Connections()
	exitCtx, stopExit := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopExit()
	if err := p.stop(exitCtx); err != nil {
		t.Fatalf("%s driver: %v", c.name, err)
	}

	r.trace = p.snapshot()
	b.DeliverEvents()
	mu.Lock()
	r.events = append([]broker.Event(nil), events...)
	mu.Unlock()

	var done bool
	for _, l := range r.trace {
		switch l.Event {
		case "start":
			if l.Version != c.version {
				t.Errorf("%s driver runs client version %q, want %q", c.name, l.Version, c.version)
			}
		case "error":
			t.Fatalf("%s driver reported an error: %s", c.name, l.Message)
		case "produced":
			_, entry, ok := parseID(l.ID)
			if !ok {
				t.Fatalf("%s: produced message %d has id %q", c.name, l.I, l.ID)
			}
			r.entryOf[l.I] = entry
		case "received":
			r.received = append(r.received, l)
		case "done":
			done = true
		}
	}
	if !done {
		t.Fatalf("%s driver printed no done line", c.name)
	}
	if s := mustSub(t, b, r.topic, r.sub); s.Backlog != 0 {
		t.Errorf("%s: backlog %d at the end, want 0", c.name, s.Backlog)
	}
	// Every message that did not go to the dead-letter topic was acked by
	// the handler.
	for i := 0; i < sc.messages; i++ {
		if sc.maxRedeliv > 0 && i == 0 {
			continue
		}
		acked := false
		for _, l := range r.seen(i) {
			acked = acked || l.Action == "ack" || l.Action == "txn-commit"
		}
		if !acked {
			t.Errorf("%s: the handler never acked message %d", c.name, i)
		}
	}
	for _, l := range r.received {
		if _, entry, ok := parseID(l.ID); !ok || entry != r.entryOf[l.I] || l.Payload != "m"+strconv.Itoa(l.I) {
			t.Errorf("%s: delivery %+v does not match the produced message %d (entry %d)", c.name, l, l.I, r.entryOf[l.I])
		}
	}
	checkCounts(t, r)
	sc.check(t, r)
}

// brokerGaps lists the runs that fail because of a known pulsarsim gap, with
// the gap. Such a run is skipped when it shows the gap and fails when it no
// longer does, so that this list and the README table stay true.
var brokerGaps = map[string]string{}

// waitUntil polls cond until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parseID reads "ledger:entry:partition:batch".
func parseID(s string) (ledger, entry int64, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return 0, 0, false
	}
	l, err1 := strconv.ParseInt(parts[0], 10, 64)
	e, err2 := strconv.ParseInt(parts[1], 10, 64)
	return l, e, err1 == nil && err2 == nil
}

// TestRealClients runs every scenario with every client: clients one after
// the other, the scenarios of one client in parallel.
func TestRealClients(t *testing.T) {
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("real-client scenarios (Rust, Java, Python) are off: their first build fetches from crates.io, Maven Central and PyPI and takes minutes. Run them with: %s", runCommand)
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			argv := c.ensure(t)
			for _, sc := range scenarios() {
				if sc.clients != nil && !slices.Contains(sc.clients, c.name) {
					continue
				}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					run(t, c, argv, sc)
				})
			}
		})
	}
}

// readToSentinel stores a sentinel on topic and reads the topic from the
// start up to it with a Go reader, returning the payloads before it.
func readToSentinel(t *testing.T, b *testkit.Broker, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.Publish(topic, broker.ProducerMessage{Payload: []byte("sentinel")})
	r, err := b.Client().CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("reading %s up to the sentinel: %v (have %v)", topic, err, out)
		}
		if string(m.Payload()) == "sentinel" {
			return out
		}
		out = append(out, string(m.Payload()))
	}
}

// mustSub returns a subscription's snapshot, failing the test when it does
// not exist.
func mustSub(t testing.TB, b *testkit.Broker, topic, name string) testkit.SubscriptionSnapshot {
	t.Helper()
	s, ok := b.Subscription(topic, name)
	if !ok {
		t.Fatalf("no subscription %s on %s", name, topic)
	}
	return s
}
