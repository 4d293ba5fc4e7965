package testkit_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// sameID reports whether a client's message id is the broker's id.
// (pulsar-client-go gives an unbatched message batch index 0, the broker -1.)
func sameID(got pulsar.MessageID, want testkit.MessageID) bool {
	return got.LedgerID() == want.Ledger && got.EntryID() == want.Entry &&
		(want.BatchIndex < 0 || got.BatchIdx() == want.BatchIndex)
}

func TestPublishedMessagesReachAConsumerAndAReader(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c := b.Client()
	const topic = "persistent://public/default/seeded"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	eventTime := time.UnixMilli(1_700_000_000_123)
	sent := []testkit.ProducerMessage{
		{Payload: []byte("first"), Key: "k1", Properties: map[string]string{"kind": "new"}, EventTime: eventTime},
		{Payload: []byte("second"), Key: "k2", Properties: map[string]string{"kind": "old", "n": "2"}},
	}
	ids := b.Publish(topic, sent...)
	if len(ids) != 2 {
		t.Fatalf("ids %v, want 2", ids)
	}
	check := func(who string, m pulsar.Message, i int) {
		t.Helper()
		want := sent[i]
		if string(m.Payload()) != string(want.Payload) || m.Key() != want.Key || !maps.Equal(m.Properties(), want.Properties) {
			t.Fatalf("%s got %q key %q props %v, want %q key %q props %v", who, m.Payload(), m.Key(), m.Properties(),
				want.Payload, want.Key, want.Properties)
		}
		wantMs := int64(0) // the client shows no event time as the epoch
		if !want.EventTime.IsZero() {
			wantMs = want.EventTime.UnixMilli()
		}
		if m.EventTime().UnixMilli() != wantMs {
			t.Fatalf("%s got event time %v, want %v", who, m.EventTime(), want.EventTime)
		}
		if !sameID(m.ID(), ids[i]) {
			t.Fatalf("%s got id %v, want %+v", who, m.ID(), ids[i])
		}
	}
	for i := range sent {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check("consumer", m, i)
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for i := range sent {
		m, err := reader.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check("reader", m, i)
	}
	if st := b.Stats(topic); st.MsgInCounter != 2 {
		t.Fatalf("stats count %d messages in, want 2", st.MsgInCounter)
	}
	published := 0
	for _, e := range b.Events() {
		if e.Kind == testkit.EventPublished && e.Topic == topic {
			published++
		}
	}
	if published != 2 {
		t.Fatalf("%d published events, want 2", published)
	}
}

func TestPublishedBatchArrivesAsItsMessages(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	const topic = "persistent://public/default/seeded-batch"
	cons, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ids := b.PublishBatch(topic,
		testkit.ProducerMessage{Payload: []byte("a"), Key: "x"},
		testkit.ProducerMessage{Payload: []byte("b"), Properties: map[string]string{"i": "1"}},
		testkit.ProducerMessage{Payload: []byte("c")},
	)
	for i, want := range []string{"a", "b", "c"} {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != want || !sameID(m.ID(), ids[i]) || ids[i].BatchIndex != int32(i) {
			t.Fatalf("message %d: %q id %v, want %q id %+v", i, m.Payload(), m.ID(), want, ids[i])
		}
	}
	e := b.Entry(topic, ids[0])
	if e.BatchSize != 3 || len(e.Messages) != 3 || e.Messages[1].Properties["i"] != "1" {
		t.Fatalf("entry %+v", e)
	}
}

func TestPublishedDelayedMessageWaitsForTheBrokerClock(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	const topic = "persistent://public/default/seeded-delayed"
	cons, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	// As in Pulsar, the dispatcher reads (and so sets delayed messages
	// aside) only for a consumer with permits.
	b.WaitFor(ctx, "the consumer's permits", func() bool {
		s, ok := b.Subscription(topic, "s")
		return ok && len(s.Consumers) == 1 && s.Consumers[0].Permits > 0
	})
	b.Publish(topic, testkit.ProducerMessage{Payload: []byte("later"), DeliverAt: b.Clock().Now().Add(time.Hour)})
	if ss := b.Stats(topic).Subscriptions["s"]; ss.MsgDelayed != 1 || ss.MsgOutCounter != 0 {
		t.Fatalf("before its time: %d delayed, %d delivered; want 1 and 0", ss.MsgDelayed, ss.MsgOutCounter)
	}
	b.Advance(2 * time.Hour)
	m, err := cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "later" {
		t.Fatalf("after the clock passed: %v, %v", m, err)
	}
}

func TestSubscriptionCreatedAtAMessageStartsThere(t *testing.T) {
	b := testkit.Start(t)
	ctx := ctxFor(t)
	c := b.Client()
	const topic = "persistent://public/default/positions"
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []pulsar.MessageID
	for _, pl := range []string{"m0", "m1", "m2", "m3"} {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	b.CreateSubscription(topic, "from-2", testkit.AtMessage(testkit.MessageID{Ledger: ids[2].LedgerID(), Entry: ids[2].EntryID()}))
	b.CreateSubscription(topic, "early", testkit.Earliest)
	b.CreateSubscription(topic, "late", testkit.Latest)
	for sub, want := range map[string]int64{"from-2": 2, "early": 4, "late": 0} {
		if got := mustSub(t, b, topic, sub).Backlog; got != want {
			t.Fatalf("subscription %s: backlog %d, want %d", sub, got, want)
		}
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "from-2"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for _, want := range []string{"m2", "m3"} {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != want {
			t.Fatalf("got %q, want %q", m.Payload(), want)
		}
	}
}

func TestPoliciesSetForTheTestApply(t *testing.T) {
	b := testkit.Start(t)
	const topic = "persistent://public/default/policies"
	b.CreateTopic(topic)
	b.SetNamespacePolicies("public/default", testkit.Policies{MessageTTLSeconds: new(60)})
	if got := *b.AppliedPolicies(topic).MessageTTLSeconds; got != 60 {
		t.Fatalf("TTL from the namespace: %d, want 60", got)
	}
	b.SetTopicPolicies(topic, testkit.Policies{MessageTTLSeconds: new(5)})
	if got := *b.AppliedPolicies(topic).MessageTTLSeconds; got != 5 {
		t.Fatalf("TTL from the topic: %d, want 5", got)
	}
	b.UpdateTopicPolicies(topic, func(p *testkit.Policies) { p.MessageTTLSeconds = nil })
	if got := *b.AppliedPolicies(topic).MessageTTLSeconds; got != 60 {
		t.Fatalf("TTL after the topic's was removed: %d, want 60", got)
	}
}

func TestAdminURLServesThisBrokersAPIUntilTheTestEnds(t *testing.T) {
	var url string
	t.Run("test", func(t *testing.T) {
		b := testkit.Start(t)
		b.Publish("served", testkit.ProducerMessage{Payload: []byte("m")})
		url = b.AdminURL()
		if again := b.AdminURL(); again != url {
			t.Fatalf("second AdminURL %q, first %q", again, url)
		}
		resp, err := http.Get(url + "/admin/v2/persistent/public/default/served/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			MsgInCounter int64 `json:"msgInCounter"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK || st.MsgInCounter != 1 {
			t.Fatalf("stats: %d %+v %v", resp.StatusCode, st, err)
		}
	})
	// The test's cleanup closed the server.
	c := http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(url + "/admin/v2/tenants"); err == nil {
		resp.Body.Close()
		t.Fatalf("the admin API still answers after the test ended: %s", resp.Status)
	}
}
