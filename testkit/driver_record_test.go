package testkit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestADeliveryIsRecordedAckedOnceTheBrokerSettlesIt(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.Publish("recorded", testkit.ProducerMessage{Payload: []byte("one"), Properties: testkit.Index(0)})
	release := make(chan struct{})
	d := b.Drive(testkit.DriverOptions{
		Consumer: pulsar.ConsumerOptions{Topic: "recorded", SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest},
		Handler: func(c pulsar.Consumer, m pulsar.Message) {
			c.Ack(m)
			<-release // the handler goes on after its ack
		},
	})
	defer close(release)
	b.WaitBacklog(ctx, "recorded", "s", 0)
	ds := d.Deliveries()
	if len(ds) != 1 || ds[0].Outcome != testkit.Ack || !ds[0].Acked {
		t.Fatalf("after the broker settled the message, the driver shows %v", ds)
	}
}

// errorTB records what its Errorf reports instead of failing the test.
type errorTB struct {
	testing.TB
	errors chan string
}

func (e *errorTB) Helper() {}

func (e *errorTB) Errorf(format string, args ...any) {
	select {
	case e.errors <- fmt.Sprintf(format, args...):
	default:
	}
}

func TestAScriptTableAskedAboutAMessageWithoutIndexFailsTheTest(t *testing.T) {
	tb := &errorTB{TB: t, errors: make(chan string, 8)}
	b := testkit.Start(tb)
	b.Publish("unnumbered", testkit.ProducerMessage{Payload: []byte("no index")})
	b.Drive(testkit.DriverOptions{
		Consumer: pulsar.ConsumerOptions{Topic: "unnumbered", SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest},
		Script: testkit.ScriptTable{{testkit.Nack}}.Script(),
	})
	select {
	case msg := <-tb.errors:
		if !strings.Contains(msg, `has no index property "i"`) {
			t.Errorf("the test failed with %q", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a message without an index was handled as if the table had said ack")
	}
}

// failedTB is a test that has failed: it records what the test kit logs
// about the failure.
type failedTB struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (f *failedTB) Failed() bool { return true }

func (f *failedTB) Logf(format string, args ...any) {
	f.mu.Lock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func TestAFailedTestWithoutMessagesSaysTheBrokerSawNone(t *testing.T) {
	t.Setenv(testkit.ReportDirEnv, t.TempDir())
	tb := &failedTB{TB: t}
	t.Cleanup(func() { // runs after the broker's cleanup
		log := strings.Join(tb.logs, "\n")
		if !strings.Contains(log, "pulsarsim: the broker saw no message") || strings.Contains(log, "what the broker saw") {
			t.Errorf("a failed test without messages logged:\n%s", log)
		}
	})
	testkit.Start(tb)
}

func TestAReadersDeliveriesNameItsConsumer(t *testing.T) {
	b := testkit.Start(t)
	ids := b.Publish("read", testkit.ProducerMessage{Payload: []byte("one")})
	r, err := b.Client().CreateReader(pulsar.ReaderOptions{Topic: "read", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.Next(ctx); err != nil {
		t.Fatal(err)
	}
	tl := b.Timeline("read", ids[0])
	if !strings.Contains(tl, "delivered to unnamed consumer ") || strings.Contains(tl, "to  on") {
		t.Errorf("the reader's delivery reads:\n%s", tl)
	}
}
