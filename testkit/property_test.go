package testkit_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"

	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestGeneratorsDrawEveryOutcomeAndFaultKind(t *testing.T) {
	outcomes, kinds, types := map[testkit.Outcome]bool{}, map[testkit.FaultKind]bool{}, map[pulsar.SubscriptionType]bool{}
	dlqCuts := 0
	for i := range 300 {
		for _, row := range testkit.Scripts().Example(i) {
			for _, o := range row {
				outcomes[o] = true
			}
		}
		for _, f := range testkit.FaultSchedules().Example(i) {
			kinds[f.Kind] = true
		}
		c := testkit.HandlerCases().Example(i)
		types[c.Type] = true
		for _, f := range c.Faults {
			if c.MaxDeliveries > 0 && (f.Kind == testkit.CutConnection || f.Kind == testkit.DropConnections) {
				dlqCuts++
			}
		}
	}
	if len(outcomes) != 4 || len(kinds) != 6 || len(types) != 4 {
		t.Errorf("300 draws gave outcomes %v, fault kinds %v, types %v", outcomes, kinds, types)
	}
	if dlqCuts > 0 {
		t.Errorf("%d cases with a dead-letter policy cut connections", dlqCuts)
	}
}

func TestScriptTableAcksPastItsRowsAndFlakyFollowsIt(t *testing.T) {
	s := testkit.ScriptTable{{testkit.Nack, testkit.NoAnswer}, nil, {testkit.Crash}}
	for _, c := range []struct {
		i, attempt int
		want       testkit.Outcome
	}{{0, 0, testkit.Nack}, {0, 1, testkit.NoAnswer}, {0, 2, testkit.Ack}, {1, 0, testkit.Ack}, {2, 0, testkit.Crash}, {9, 0, testkit.Ack}, {-1, 0, testkit.Ack}} {
		if got := s.Outcome(c.i, c.attempt); got != c.want {
			t.Errorf("Outcome(%d, %d) = %v, want %v", c.i, c.attempt, got, c.want)
		}
	}
	if got := fmt.Sprintf("%#v", s); !strings.Contains(got, "testkit.Nack, testkit.NoAnswer") {
		t.Errorf("a table prints as %s", got)
	}
}

// failingTB records a case's failure and ends the goroutine that runs it,
// as a test's Fatalf does.
type failingTB struct {
	rapid.TB
	mu     sync.Mutex
	failed []string
}

func (f *failingTB) Helper() {}
func (f *failingTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *failingTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}
func (f *failingTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.failed) > 0
}

// checkHandlerFails runs CheckHandler and returns what it failed with.
func checkHandlerFails(t *testing.T, b *testkit.Broker, c testkit.HandlerCase, h testkit.Handler) []string {
	ft := &failingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.CheckHandler(ft, c, h)
	}()
	<-done
	return ft.failed
}

// TestCheckHandlerFindsAMessageACumulativeAckLost runs a Failover handler
// that acks cumulatively after each message it saved: when the store fails
// on a message and the next one succeeds, the failed one is acked with it
// without ever being saved, and CheckHandler reports it lost.
func TestCheckHandlerFindsAMessageACumulativeAckLost(t *testing.T) {
	b := testkit.Start(t)
	c := testkit.HandlerCase{Type: pulsar.Failover, Consumers: 1, Messages: 4,
		Script: testkit.ScriptTable{nil, {testkit.Nack, testkit.Nack}}}
	store := c.Script.Flaky()
	failed := checkHandlerFails(t, b, c, func(cons pulsar.Consumer, m pulsar.Message) {
		if store.Do(m) == nil {
			cons.AckCumulative(m)
		}
	})
	if len(failed) != 1 || !strings.Contains(failed[0], "message 1 lost") {
		t.Fatalf("CheckHandler failed with %q, want message 1 lost", failed)
	}
}

// TestCheckHandlerAcceptsACorrectHandlerUnderEveryFault runs a correct
// handler through each kind of scheduled fault, one run each, and checks
// in the broker's events that the fault struck: consumers closed with the
// right reason, the SUBSCRIBE that failed. (A scheduled fault strikes what
// is there at that moment: a consumer still subscribing is not cut.)
func TestCheckHandlerAcceptsACorrectHandlerUnderEveryFault(t *testing.T) {
	b := testkit.Start(t)
	subscribes := b.Fault(testkit.Fault{Command: "SUBSCRIBE", Observe: true})
	notReady := testkit.ServerErrorServiceNotReady
	for _, tc := range []struct {
		faults                       testkit.FaultSchedule
		crashes, byBroker, cut, fail int
	}{
		{faults: testkit.FaultSchedule{{After: 3, Kind: testkit.CrashConsumer}}, crashes: 1, cut: 1},
		{faults: testkit.FaultSchedule{{After: 3, Kind: testkit.CutConnection}}, cut: 1},
		{faults: testkit.FaultSchedule{{After: 3, Kind: testkit.DropConnections}}, cut: 1}, // every consumer attached by then
		{faults: testkit.FaultSchedule{{After: 3, Kind: testkit.CloseConsumer}}, byBroker: 1},
		{faults: testkit.FaultSchedule{{After: 3, Kind: testkit.DelayCommand, Command: "ACK", Count: 2, Delay: 10 * time.Millisecond}}},
		{faults: testkit.FaultSchedule{{After: 2, Kind: testkit.FailCommand, Command: "SUBSCRIBE", Count: 1, Error: notReady},
			{After: 3, Kind: testkit.CrashConsumer}}, crashes: 1, cut: 1, fail: 1},
	} {
		before := subscribes.Fired()
		c := testkit.HandlerCase{Type: pulsar.Shared, Consumers: 2, Messages: 8, Faults: tc.faults}
		run := b.CheckHandler(t, c, func(cons pulsar.Consumer, m pulsar.Message) { cons.Ack(m) })
		reasons, opened := map[string]int{}, 0
		for _, e := range b.Events() {
			switch {
			case e.Topic != run.Topic:
			case e.Kind == testkit.EventConsumerClosed:
				reasons[e.Reason]++
			case e.Kind == testkit.EventConsumerOpened:
				opened++
			}
		}
		crashes := 0
		for _, d := range run.Deliveries {
			if d.Outcome == testkit.Crash {
				crashes++
			}
		}
		failed := subscribes.Fired() - before - opened
		if crashes != tc.crashes || reasons["broker"] != tc.byBroker || reasons["disconnect"] < tc.cut || failed != tc.fail {
			t.Errorf("%v: %d crashes, consumers closed by reason %v, %d SUBSCRIBEs failed; want %d crashes, %d closed by the broker, at least %d cut, %d failed",
				tc.faults, crashes, reasons, failed, tc.crashes, tc.byBroker, tc.cut, tc.fail)
		}
	}
}
