package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/broker"
)

// backlogOf returns the msgBacklog of a subscription from the topic's stats.
func backlogOf(t *testing.T, a padmin.Client, topic, sub string) int64 {
	t.Helper()
	st, err := a.Topics().GetStats(topicName(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := st.Subscriptions[sub]
	if !ok {
		t.Fatalf("no subscription %s in %+v", sub, st.Subscriptions)
	}
	return ss.MsgBacklog
}

// receiveText returns the payload of the consumer's next message.
func receiveText(t *testing.T, c pulsar.Consumer) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(m.Payload())
}

// receiveUntil receives until a message with payload want, failing after n
// others.
func receiveUntil(t *testing.T, c pulsar.Consumer, want string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		got := receiveText(t, c)
		if got == want {
			return
		}
		if i == n {
			t.Fatalf("no %s after %d messages (last %q)", want, n, got)
		}
	}
}

func TestAdminCursorMovesAreWhatAConsumerReadsNext(t *testing.T) {
	clk := broker.NewManualClock(time.Now())
	b, url := serveAdmin(t, broker.WithClock(clk))
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/default/cursor-moves"
	tn := topicName(t, topic)
	if err := a.Subscriptions().Create(tn, "s", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Topics().GetStats(tn); err != nil || st.Subscriptions["s"].SubType != "None" {
		t.Fatalf("stats of a subscription no consumer joined yet: %+v, %v", st.Subscriptions, err)
	}
	c := newClient(t, b)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []string{"m0", "m1", "m2", "m3", "m4"} {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Subscriptions().SkipMessages(tn, "s", 2); err != nil {
		t.Fatal(err)
	}
	if got := backlogOf(t, a, topic, "s"); got != 3 {
		t.Fatalf("backlog after skipping 2 of 5: %d", got)
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if got := receiveText(t, cons); got != "m2" {
		t.Fatalf("first message after skipping 2: %q", got)
	}

	// A reset disconnects the consumer, which comes back reading from the
	// start (after what it had received already: m3 and m4).
	if err := a.Subscriptions().ResetCursorToTimestamp(tn, "s", 0); err != nil {
		t.Fatal(err)
	}
	if got := backlogOf(t, a, topic, "s"); got != 5 {
		t.Fatalf("backlog after a reset to time 0: %d", got)
	}
	receiveUntil(t, cons, "m0", 3)

	// An age of 0 is no TTL; a connected, almost caught-up subscription
	// whose oldest message has not expired is refused with 409.
	wantStatus(t, a.Subscriptions().ExpireMessages(tn, "s", 0), http.StatusConflict)
	wantStatus(t, a.Subscriptions().ExpireMessages(tn, "s", 30), http.StatusConflict)
	clk.Advance(time.Minute)
	if err := a.Subscriptions().ExpireMessages(tn, "s", 30); err != nil {
		t.Fatal(err)
	}
	if got := backlogOf(t, a, topic, "s"); got != 0 {
		t.Fatalf("backlog after expiring everything: %d", got)
	}
	wantStatus(t, a.Subscriptions().ExpireMessages(tn, "s", 30), http.StatusConflict)

	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m5")}); err != nil {
		t.Fatal(err)
	}
	// The consumer had m0 to m4 in its queue already (Pulsar does not recall
	// them).
	receiveUntil(t, cons, "m5", 6)
	if err := a.Subscriptions().ResetCursorToMessageID(tn, "s", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscriptions().ClearBacklog(tn, "s"); err != nil {
		t.Fatal(err)
	}
	if got := backlogOf(t, a, topic, "s"); got != 0 {
		t.Fatalf("backlog after clearing it: %d", got)
	}

	wantStatus(t, a.Subscriptions().SkipMessages(tn, "none", 1), http.StatusNotFound)
	wantStatus(t, a.Subscriptions().ClearBacklog(topicName(t, "persistent://public/default/no-topic"), "s"),
		http.StatusNotFound)
}
