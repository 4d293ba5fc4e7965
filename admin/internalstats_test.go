package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
)

// internalStatsConsumer subscribes with acknowledgements the broker
// confirms, so that the stats read after an Ack see it.
func internalStatsConsumer(t *testing.T, c pulsar.Client, topic, sub string, typ pulsar.SubscriptionType) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func TestInternalStatsShowTheCursorsAfterAcknowledgements(t *testing.T) {
	b, url := serveAdmin(t)
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/default/internal-stats"
	c := newClient(t, b)
	workers := internalStatsConsumer(t, c, topic, "workers", pulsar.Shared)
	audit := internalStatsConsumer(t, c, topic, "audit", pulsar.Exclusive)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 6 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(cons pulsar.Consumer, n int) []pulsar.Message {
		var out []pulsar.Message
		for range n {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	got := receive(workers, 6)
	for _, i := range []int{0, 1, 3, 5} { // 2 and 4 stay unacknowledged
		if err := workers.Ack(got[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := audit.AckCumulative(receive(audit, 3)[2]); err != nil {
		t.Fatal(err)
	}

	st, err := a.Topics().GetInternalStats(topicName(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	l := got[0].ID().LedgerID()
	pos := func(e int) string { return fmt.Sprintf("%d:%d", l, e) }
	if st.NumberOfEntries != 6 || st.EntriesAddedCounter != 6 || st.LastConfirmedEntry != pos(5) || st.State != "LedgerOpened" {
		t.Errorf("ledger: %d entries (%d added), last %s, %s; want 6, 6, %s, LedgerOpened",
			st.NumberOfEntries, st.EntriesAddedCounter, st.LastConfirmedEntry, st.State, pos(5))
	}
	w := st.Cursors["workers"]
	wantHoles := fmt.Sprintf("[(%s..%s],(%s..%s]]", pos(2), pos(3), pos(4), pos(5))
	if w.MarkDeletePosition != pos(1) || w.IndividuallyDeletedMessages != wantHoles ||
		w.TotalNonContiguousDeletedMessagesRange != 2 || w.MessagesConsumedCounter != 4 || w.ReadPosition != pos(6) {
		t.Errorf("workers: %+v; want mark-delete %s, deleted %s in 2 ranges, 4 consumed, reading %s",
			w, pos(1), wantHoles, pos(6))
	}
	if au := st.Cursors["audit"]; au.MarkDeletePosition != pos(2) || au.IndividuallyDeletedMessages != "[]" ||
		au.MessagesConsumedCounter != 3 {
		t.Errorf("audit: %+v; want mark-delete %s, nothing deleted beyond it, 3 consumed", au, pos(2))
	}

	// Acknowledging the holes moves the mark-delete position to the end.
	for _, i := range []int{2, 4} {
		if err := workers.Ack(got[i]); err != nil {
			t.Fatal(err)
		}
	}
	st, err = a.Topics().GetInternalStats(topicName(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	if w := st.Cursors["workers"]; w.MarkDeletePosition != pos(5) || w.IndividuallyDeletedMessages != "[]" ||
		w.MessagesConsumedCounter != 6 || w.NumberOfEntriesSinceFirstNotAckedMessage != 1 {
		t.Errorf("workers after every ack: %+v; want mark-delete %s, nothing else deleted, 6 consumed", w, pos(5))
	}

	_, err = a.Topics().GetInternalStats(topicName(t, "persistent://public/default/no-such-topic"))
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("internal stats of a topic that does not exist: %v", err)
	}
}
