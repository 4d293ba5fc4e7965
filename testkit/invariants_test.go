package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// TestCheckInvariantsHoldAfterDeadLettersFromAPartitionedTopic dead-letters
// messages of a partitioned topic with pulsar-client-go, whose copies name
// a partition in REAL_TOPIC, and finds the broker's state and history
// sound.
func TestCheckInvariantsHoldAfterDeadLettersFromAPartitionedTopic(t *testing.T) {
	b := testkit.Start(t, testkit.WithInvariants())
	b.CreatePartitionedTopic("orders", 2)
	ctx := ctxFor(t)
	cons, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "orders", SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 10 * time.Millisecond, DLQ: &pulsar.DLQPolicy{MaxDeliveries: 2, DeadLetterTopic: "orders-dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	go func() {
		for cm := range cons.Chan() {
			cons.Nack(cm.Message)
		}
	}()
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "orders", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 4 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint(i), Payload: []byte("o")}); err != nil {
			t.Fatal(err)
		}
	}
	dead := b.WaitMessages(ctx, "orders-dlq", 4)
	if real := dead[0].Properties["REAL_TOPIC"]; !strings.Contains(real, "-partition-") {
		t.Fatalf("REAL_TOPIC %q names no partition: the case this test is for did not happen", real)
	}
	if err := b.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckInvariantsReportsACopyThatNamesNoPublishedMessage publishes, as
// a client could, copies whose REAL_TOPIC and ORIGIN_MESSAGE_ID name a
// message in each client's format: the ones that name a real message pass,
// the others are reported.
func TestCheckInvariantsReportsACopyThatNamesNoPublishedMessage(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	send(t, b.Client(), "orig", "a")
	batch, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "orig", BatchingMaxMessages: 2, BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	batch.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("b0")}, nil)
	batch.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("b1")}, nil)
	if err := batch.Flush(); err != nil {
		t.Fatal(err)
	}
	ms := b.Messages("orig")
	one, two := ms[0].ID, ms[1].ID // the single message and the batch of 2
	real := "persistent://public/default/orig"
	copies := []map[string]string{
		{"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1", one.Ledger, one.Entry)},     // Go
		{"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": fmt.Sprintf("(%d,%d,-1,1)", two.Ledger, two.Entry)}, // C++
		{"REAL_TOPIC": "orig", "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1:0", two.Ledger, two.Entry)}, // Java
		{"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1", one.Ledger+7, one.Entry)},   // no such ledger
		{"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1:5", two.Ledger, two.Entry)},   // index 5 of 2
		{"REAL_TOPIC": "persistent://public/default/other", "ORIGIN_MESSAGE_ID": fmt.Sprintf("%d:%d:-1", one.Ledger, one.Entry)},
		{"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": "garbage"},
	}
	p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: "copies", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, props := range copies {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("copy"), Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	var ie *testkit.InvariantError
	if err := b.CheckInvariants(); !errors.As(err, &ie) {
		t.Fatalf("CheckInvariants() = %v, want an InvariantError", err)
	}
	var got []string
	for _, v := range ie.Violations {
		if v.Rule != testkit.RuleDeadLetterOrigin || v.Topic != "persistent://public/default/copies" {
			t.Errorf("unexpected violation %v", v)
		}
		got = append(got, fmt.Sprint(v.Entry))
	}
	if strings.Join(got, " ") != "3 4 5 6" {
		t.Fatalf("violations at entries %v of the copies, want 3 4 5 6:\n%v", got, ie)
	}
	t.Log(ie)
}

// recordingTB is a test whose errors and cleanups are recorded, so that a
// test can check what a cleanup reports.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Failed() bool { return false }
func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestWithInvariantsFailsTheTestAtCleanup(t *testing.T) {
	for _, on := range []bool{false, true} {
		rec := &recordingTB{TB: t}
		var opts []testkit.Option
		if on {
			opts = append(opts, testkit.WithInvariants())
		}
		b := testkit.Start(rec, opts...)
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: log.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		send(t, client, "copies", "x")
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "forged"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("copy"),
			Properties: map[string]string{"REAL_TOPIC": "copies", "ORIGIN_MESSAGE_ID": "424242:0:-1"}})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		client.Close()
		rec.runCleanups()
		switch {
		case !on && len(rec.errs) > 0:
			t.Errorf("without WithInvariants the cleanup reported %v", rec.errs)
		case on && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "dead-letter-origin")):
			t.Errorf("with WithInvariants the cleanup reported %v, want the forged copy", rec.errs)
		}
	}
}
