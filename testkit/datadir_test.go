package testkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/durable"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// produceN sends n messages to topic with pulsar-client-go, each with a
// property and a key, and returns their ids in order (each receipted).
func produceN(t *testing.T, c pulsar.Client, topic string, n int) []pulsar.MessageID {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []pulsar.MessageID
	for i := range n {
		id, err := p.Send(ctxFor(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m%d", i)),
			Key: fmt.Sprintf("k%d", i%3), Properties: map[string]string{"i": fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// receiveAll receives until n messages came, and returns their payloads.
func receiveN(t *testing.T, cons pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	var got []pulsar.Message
	for len(got) < n {
		m, err := cons.Receive(ctxFor(t))
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(got), n, err)
		}
		got = append(got, m)
	}
	return got
}

func payloads(ms []pulsar.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Payload()))
	}
	slices.Sort(out)
	return out
}

func subscribe(t *testing.T, c pulsar.Client, topic, sub string) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Shared,
		AckWithResponse: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func TestARestartOnTheDataDirGivesBackMessagesCursorsAndMetadata(t *testing.T) {
	dir := t.TempDir()
	b := testkit.Start(t, testkit.WithDataDir(dir), testkit.WithBroker(broker.WithBatchIndexAck(true)))
	b.CreateTenant("acme")
	b.CreateNamespace("acme/orders")
	ttl := 3600
	b.SetNamespacePolicies("acme/orders", testkit.Policies{MessageTTLSeconds: &ttl})
	bundles := b.SplitBundle("acme/orders", b.Bundles("acme/orders")[0])
	topic := "persistent://acme/orders/t"
	c := b.Client()
	cons := subscribe(t, c, topic, "s")
	ids := produceN(t, c, topic, 10)
	got := receiveN(t, cons, 10)
	// Acknowledge 0, 1, 2, 5 and 7: the cursor's mark-delete is at 2 and 5,
	// 7 are individually acknowledged.
	for _, m := range got {
		if i := slices.IndexFunc(ids, func(id pulsar.MessageID) bool { return id.EntryID() == m.ID().EntryID() }); i == 0 || i == 1 || i == 2 || i == 5 || i == 7 {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A batch of 4, of which indexes 1 and 3 are acknowledged.
	batched := "persistent://acme/orders/batched"
	bcons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: batched, SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	bp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: batched, BatchingMaxMessages: 4, BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 4)
	for i := range 4 {
		bp.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("b%d", i))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := bp.FlushWithCtx(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range receiveN(t, bcons, 4) {
		if s := string(m.Payload()); s == "b1" || s == "b3" {
			if err := bcons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	bp.Close()
	bcons.Close()
	cons.Close()
	schemaTopic := "persistent://acme/orders/typed"
	sp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: schemaTopic, Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	sp.Close()
	c.Close()

	b.Restart()

	if !slices.Contains(b.Tenants(), "acme") || !slices.Contains(b.Namespaces("acme"), "acme/orders") {
		t.Fatalf("after the restart: tenants %v, namespaces %v", b.Tenants(), b.Namespaces("acme"))
	}
	if p := b.AppliedPolicies(topic); p.MessageTTLSeconds == nil || *p.MessageTTLSeconds != ttl {
		t.Fatalf("the namespace's message TTL after the restart: %v", p.MessageTTLSeconds)
	}
	if got := b.Bundles("acme/orders"); !slices.Equal(got[:len(bundles)], bundles) {
		t.Fatalf("the namespace's bundles after the restart %v, want the split's %v first", got, bundles)
	}
	if s := b.Schema(schemaTopic, -1); s.Type != "STRING" {
		t.Fatalf("the schema after the restart: %+v", s)
	}
	c = b.Client()
	cons = subscribe(t, c, topic, "s")
	back := receiveN(t, cons, 5)
	if got, want := payloads(back), []string{"m3", "m4", "m6", "m8", "m9"}; !slices.Equal(got, want) {
		t.Fatalf("redelivered after the restart %v, want %v", got, want)
	}
	for _, m := range back {
		i := slices.IndexFunc(ids, func(id pulsar.MessageID) bool { return id.EntryID() == m.ID().EntryID() })
		if i < 0 || ids[i].LedgerID() != m.ID().LedgerID() || m.Properties()["i"] != fmt.Sprint(i) || m.Key() != fmt.Sprintf("k%d", i%3) {
			t.Fatalf("message %s came back with id %v, properties %v, key %q", m.Payload(), m.ID(), m.Properties(), m.Key())
		}
		if m.RedeliveryCount() != 0 {
			t.Fatalf("message %s came back with redelivery count %d: the counters are the broker's memory", m.Payload(), m.RedeliveryCount())
		}
	}
	if st := b.Stats(topic); st.Subscriptions["s"].MsgBacklog != 5 {
		t.Fatalf("backlog after the restart %d, want 5", st.Subscriptions["s"].MsgBacklog)
	}
	bcons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: batched, SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bcons.Close()
	if got, want := payloads(receiveN(t, bcons, 2)), []string{"b0", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("the batch after the restart gave %v, want %v (indexes 1 and 3 stay acknowledged)", got, want)
	}
}

func TestACrashKeepsEveryReceiptedMessageAndTheCursorAsLastPersisted(t *testing.T) {
	for _, policy := range []durable.Sync{durable.SyncFsync, durable.SyncWrite} {
		t.Run(string(policy), func(t *testing.T) {
			b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithDataSync(policy))
			topic := "persistent://public/default/crash"
			c := b.Client()
			cons := subscribe(t, c, topic, "s")
			produceN(t, c, topic, 6)
			got := receiveN(t, cons, 6)
			byPayload := map[string]pulsar.Message{}
			for _, m := range got {
				byPayload[string(m.Payload())] = m
			}
			ack := func(p string) {
				if err := cons.Ack(byPayload[p]); err != nil {
					t.Fatal(err)
				}
			}
			// The first change of a cursor is persisted at once; one within
			// the next second of broker time is not (the mark-delete rate
			// limit), until a change after it.
			ack("m0")
			ack("m1")
			b.Advance(2 * time.Second)
			ack("m3") // persisted, with m1
			// A receipt comes once everything queued before it is durable:
			// the cursor written for m3 too.
			produceN(t, c, "persistent://public/default/other", 1)
			ack("m4") // within the second: lost at the crash
			// Closed first: its consumer would come back to the new broker
			// too, and a close that reaches no broker waits for a timeout.
			c.Close()
			b.Crash()
			b.Restart()
			c = b.Client()
			cons = subscribe(t, c, topic, "s")
			if got, want := payloads(receiveN(t, cons, 3)), []string{"m2", "m4", "m5"}; !slices.Equal(got, want) {
				t.Fatalf("after the crash the subscription gave %v, want %v", got, want)
			}
			if n := len(b.Messages(topic)); n != 6 {
				t.Fatalf("%d messages stored after the crash, want the 6 receipted", n)
			}
		})
	}
}

func TestARestartAfterATornWriteServesTheLogUpToTheLastWholeEntry(t *testing.T) {
	dir := t.TempDir()
	b := testkit.Start(t, testkit.WithDataDir(dir))
	topic := "persistent://public/default/torn"
	c := b.Client()
	cons := subscribe(t, c, topic, "s")
	produceN(t, c, topic, 5)
	cons.Close()
	c.Close()
	b.Crash()
	// Damage the last entry's bytes where they lie in the file, as a write
	// torn by a power loss would leave them.
	path := filepath.Join(dir, durable.FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("m4")) {
		t.Fatal("the last entry is not in the file")
	}
	raw = bytes.ReplaceAll(raw, []byte("m4"), []byte("X4"))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	ms := b.Messages(topic)
	if len(ms) != 4 || string(ms[3].Payload) != "m3" {
		t.Fatalf("after the torn write the topic holds %d messages", len(ms))
	}
}

func TestACrashKeepsTheDeduplicationStateOfEveryReceiptedMessage(t *testing.T) {
	b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithDeduplication())
	topic := "persistent://public/default/dedup"
	c := b.Client()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "orders", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := p.Send(ctxFor(t), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	c.Close()
	b.Crash()
	b.Restart()
	c = b.Client()
	p, err = c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "orders", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// A resend of sequence id 1 is a duplicate: receipted, not stored.
	if _, err := p.Send(ctxFor(t), &pulsar.ProducerMessage{Payload: []byte("again"), SequenceID: new(int64(1))}); err != nil {
		t.Fatal(err)
	}
	if n := len(b.Messages(topic)); n != 3 {
		t.Fatalf("%d messages stored after a resend, want 3", n)
	}
	// The producer goes on after the last sequence id stored before the crash.
	if _, err := p.Send(ctxFor(t), &pulsar.ProducerMessage{Payload: []byte("next")}); err != nil {
		t.Fatal(err)
	}
	if got := p.LastSequenceID(); got != 3 {
		t.Fatalf("the next message got sequence id %d, want 3", got)
	}
	if n := len(b.Messages(topic)); n != 4 {
		t.Fatalf("%d messages stored, want 4", n)
	}
}

func TestACrashKeepsWhatTheLedgerWritesAtOnce(t *testing.T) {
	b := testkit.Start(t, testkit.WithDataDir(t.TempDir()))
	compacted := "persistent://public/default/table"
	terminated := "persistent://public/default/ended"
	c := b.Client()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: compacted, SubscriptionName: "s",
		SubscriptionProperties: map[string]string{"team": "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: compacted, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a", "b", "a", "b", "a"} {
		if _, err := p.Send(ctxFor(t), &pulsar.ProducerMessage{Key: k, Payload: []byte(fmt.Sprintf("%s%d", k, i))}); err != nil {
			t.Fatal(err)
		}
	}
	b.Compact(compacted)
	produceN(t, c, terminated, 2)
	b.TerminateTopic(terminated)
	// A receipt after them: what was written before it is durable.
	produceN(t, c, "persistent://public/default/after", 1)
	cons.Close()
	p.Close()
	c.Close()
	b.Crash()
	b.Restart()

	c = b.Client()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: compacted, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for r.HasNext() {
		m, err := r.Next(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.Payload()))
	}
	if want := []string{"b3", "a4"}; !slices.Equal(got, want) {
		t.Fatalf("the compacted view after the crash gave %v, want %v", got, want)
	}
	if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: terminated}); !errors.Is(err, pulsar.ErrTopicTerminated) && (err == nil || !strings.Contains(err.Error(), "TopicTerminated")) {
		t.Fatalf("a producer of a topic terminated before the crash: %v, want TopicTerminated", err)
	}
	resp, err := http.Get(b.AdminURL() + "/admin/v2/persistent/public/default/table/subscription/s/properties")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var props map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&props); err != nil || props["team"] != "billing" {
		t.Fatalf("the subscription's properties after the crash: %v (%v)", props, err)
	}
}

// A crash keeps a committed transaction's messages, never delivers an
// aborted one's, and keeps an open transaction open (its coordinator's log
// is kept): its message holds back what follows until it is aborted, then
// never comes.
func TestACrashKeepsCommittedTransactionsMessagesAndTheOpenOnesOpen(t *testing.T) {
	b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithTransactions())
	topic := "persistent://public/default/txns"
	b.CreateSubscription(topic, "s", testkit.Earliest)
	committed := b.NewTransaction(time.Hour)
	aborted := b.NewTransaction(time.Hour)
	open := b.NewTransaction(time.Hour)
	b.PublishInTransaction(committed, topic, testkit.ProducerMessage{Payload: []byte("committed")})
	b.PublishInTransaction(aborted, topic, testkit.ProducerMessage{Payload: []byte("aborted")})
	b.PublishInTransaction(open, topic, testkit.ProducerMessage{Payload: []byte("open")})
	b.CommitTransaction(committed)
	b.AbortTransaction(aborted)
	b.Publish(topic, testkit.ProducerMessage{Payload: []byte("plain")})
	b.Crash()
	b.Restart()
	c := b.Client()
	cons := subscribe(t, c, topic, "s")
	if got, want := payloads(receiveN(t, cons, 1)), []string{"committed"}; !slices.Equal(got, want) {
		t.Fatalf("after the restart the subscription gave %v, want %v", got, want)
	}
	if st := b.Stats(topic); st.Subscriptions["s"].MsgBacklog == 0 {
		t.Fatalf("nothing left in the backlog behind the open transaction: %+v", st.Subscriptions["s"])
	}
	b.AbortTransaction(open)
	// Then "plain", and the next message is one published now: the aborted
	// transactions' messages never come.
	if got := payloads(receiveN(t, cons, 1)); got[0] != "plain" {
		t.Fatalf("after the abort the subscription gave %q, want plain", got[0])
	}
	b.Publish(topic, testkit.ProducerMessage{Payload: []byte("last")})
	if got := payloads(receiveN(t, cons, 1)); got[0] != "last" {
		t.Fatalf("after the restart the subscription gave %q before the message published last", got[0])
	}
}

func TestDataDirStatsCountTheCommitsThatCarriedReceiptedMessages(t *testing.T) {
	memory := testkit.Start(t)
	if s := memory.DataDirStats(); s != (durable.Stats{}) {
		t.Fatalf("a broker without a data directory reports %+v", s)
	}
	b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithDataSync(durable.SyncWrite))
	before := b.DataDirStats()
	produceN(t, b.Client(), "persistent://public/default/stats", 10)
	after := b.DataDirStats()
	// Each Send waits for its receipt, so each entry has a commit of its
	// own, with whatever the broker queued beside it.
	if changes := after.Changes - before.Changes; changes < 10 {
		t.Fatalf("%d changes committed for 10 receipted messages", changes)
	}
	if commits := after.Commits - before.Commits; commits < 10 || commits > after.Changes-before.Changes {
		t.Fatalf("%d commits for 10 messages sent one after the other (%d changes)", commits, after.Changes-before.Changes)
	}
}
