package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func subscribe(t *testing.T, c pulsar.Client, o pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	return cons
}

// produce sends n messages built by msg with batching on, and waits for
// every receipt.
func produce(t *testing.T, c pulsar.Client, topic string, n int, msg func(i int) *pulsar.ProducerMessage) {
	t.Helper()
	produceWith(t, c, pulsar.ProducerOptions{Topic: topic}, n, msg)
}

// produceUnbatched sends n messages, one entry each.
func produceUnbatched(t *testing.T, c pulsar.Client, topic string, n int, msg func(i int) *pulsar.ProducerMessage) {
	t.Helper()
	produceWith(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true}, n, msg)
}

func produceWith(t *testing.T, c pulsar.Client, o pulsar.ProducerOptions, n int, msg func(i int) *pulsar.ProducerMessage) {
	t.Helper()
	p, err := c.CreateProducer(o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		p.SendAsync(context.Background(), msg(i), func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func numbered(i int) *pulsar.ProducerMessage {
	return &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(i))}
}

func receive(t *testing.T, ctx context.Context, c pulsar.Consumer) pulsar.Message {
	t.Helper()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatalf("%s: receive: %v", c.Name(), err)
	}
	return m
}

func TestSharedThreeConsumersEachMessageReachesExactlyOne(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	const n = 3000
	var consumers []pulsar.Consumer
	for i := 0; i < 3; i++ {
		consumers = append(consumers, subscribe(t, client, pulsar.ConsumerOptions{
			Topic: "shared3", SubscriptionName: "s", Type: pulsar.Shared, Name: fmt.Sprintf("c%d", i),
		}))
	}
	produce(t, client, "shared3", n, numbered)

	var mu sync.Mutex
	seen := map[string]string{}
	perConsumer := map[string]int{}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, c := range consumers {
		wg.Add(1)
		go func(c pulsar.Consumer) {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case m := <-c.Chan():
					mu.Lock()
					if prev, dup := seen[string(m.Payload())]; dup {
						t.Errorf("message %s reached %s and %s", m.Payload(), prev, c.Name())
					}
					seen[string(m.Payload())] = c.Name()
					perConsumer[c.Name()]++
					mu.Unlock()
					c.Ack(m)
				}
			}
		}(c)
	}
	b.WaitBacklog(ctx, "shared3", "s", 0)
	close(done)
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), n)
	}
	if len(perConsumer) != 3 {
		t.Fatalf("messages per consumer %v: all three should get some", perConsumer)
	}
}

func TestSharedNackComesBackWithCountOneTwoThree(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "nack", SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 50 * time.Millisecond})
	produce(t, client, "nack", 1, numbered)
	var counts []uint32
	for {
		m := receive(t, ctx, cons)
		counts = append(counts, m.RedeliveryCount())
		if len(counts) == 4 {
			cons.Ack(m)
			break
		}
		cons.Nack(m)
	}
	if fmt.Sprint(counts) != "[0 1 2 3]" {
		t.Fatalf("redelivery counts %v, want [0 1 2 3]", counts)
	}
	b.WaitBacklog(ctx, "nack", "s", 0)
}

func TestSharedDeadLetterAfterMaxDeliveries(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	const topic = "persistent://public/default/dlq-src"
	cons := subscribe(t, client, pulsar.ConsumerOptions{
		Topic: topic, SubscriptionName: "s", Type: pulsar.Shared, NackRedeliveryDelay: 50 * time.Millisecond,
		DLQ: &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: "dlq-target"},
	})
	produce(t, client, topic, 1, func(int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte("poison"), Properties: map[string]string{"k": "v"}}
	})
	var counts []uint32
	var firstID pulsar.MessageID
	for i := 0; i < 3; i++ {
		m := receive(t, ctx, cons)
		if i == 0 {
			firstID = m.ID()
		}
		counts = append(counts, m.RedeliveryCount())
		cons.Nack(m)
	}
	if fmt.Sprint(counts) != "[0 1 2]" {
		t.Fatalf("handler saw counts %v, want [0 1 2]", counts)
	}
	dead := b.WaitMessages(ctx, "dlq-target", 1)
	if len(dead) != 1 || string(dead[0].Payload) != "poison" {
		t.Fatalf("dead-letter topic holds %+v", dead)
	}
	props := dead[0].Properties
	if props["REAL_TOPIC"] != topic || props["k"] != "v" {
		t.Fatalf("dead-letter properties %v", props)
	}
	wantOrigin := fmt.Sprintf("%d:%d:%d", firstID.LedgerID(), firstID.EntryID(), firstID.PartitionIdx())
	if !strings.HasPrefix(props["ORIGIN_MESSAGE_ID"], wantOrigin) {
		t.Fatalf("ORIGIN_MESSAGE_ID %q, want %s", props["ORIGIN_MESSAGE_ID"], wantOrigin)
	}
	b.WaitBacklog(ctx, topic, "s", 0)
	// The handler never sees the copy that went to the dead-letter topic.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if m, err := cons.Receive(short); err == nil {
		t.Fatalf("handler got %q with count %d after dead-lettering", m.Payload(), m.RedeliveryCount())
	}
}

func TestExclusiveAndFailoverNackComesBackWithCountZero(t *testing.T) {
	for _, typ := range []pulsar.SubscriptionType{pulsar.Exclusive, pulsar.Failover} {
		t.Run(fmt.Sprint(typ), func(t *testing.T) {
			b := testkit.Start(t)
			client := b.Client()
			ctx := testCtx(t)
			cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "single", SubscriptionName: "s", Type: typ,
				NackRedeliveryDelay: 50 * time.Millisecond})
			produce(t, client, "single", 1, numbered)
			for i := 0; i < 3; i++ {
				m := receive(t, ctx, cons)
				if m.RedeliveryCount() != 0 {
					t.Fatalf("delivery %d carried count %d, want 0", i, m.RedeliveryCount())
				}
				if i < 2 {
					cons.Nack(m)
				} else {
					cons.Ack(m)
				}
			}
		})
	}
}

func TestSecondExclusiveConsumerIsRefused(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	subscribe(t, client, pulsar.ConsumerOptions{Topic: "excl", SubscriptionName: "s", Type: pulsar.Exclusive})
	_, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "excl", SubscriptionName: "s", Type: pulsar.Exclusive})
	if err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("second exclusive consumer: %v, want ConsumerBusy", err)
	}
	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: "excl", SubscriptionName: "s", Type: pulsar.Shared})
	if err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("subscription of another type: %v, want ConsumerBusy", err)
	}
}

func TestFailoverNextConsumerTakesOverEveryUnackedMessage(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	first := subscribe(t, client, pulsar.ConsumerOptions{Topic: "fo", SubscriptionName: "s", Type: pulsar.Failover, Name: "a"})
	second := subscribe(t, client, pulsar.ConsumerOptions{Topic: "fo", SubscriptionName: "s", Type: pulsar.Failover, Name: "b"})
	// Which one is active is the broker's choice (on a non-partitioned topic
	// Pulsar hashes the topic name); ask it.
	a, standby := first, second
	for _, c := range b.Sub("fo", "s").Consumers {
		if c.Active && c.Name == "b" {
			a, standby = second, first
		}
	}
	produceUnbatched(t, client, "fo", 10, numbered)
	for i := 0; i < 10; i++ {
		m := receive(t, ctx, a)
		if i < 4 {
			a.Ack(m)
		}
	}
	b.WaitFor(ctx, "four acks", func() bool { return b.Sub("fo", "s").MarkDelete.Entry == 3 })
	a.Close()
	for i := 4; i < 10; i++ {
		m := receive(t, ctx, standby)
		if string(m.Payload()) != strconv.Itoa(i) || m.RedeliveryCount() != 0 {
			t.Fatalf("standby got %s (count %d), want %d", m.Payload(), m.RedeliveryCount(), i)
		}
		standby.Ack(m)
	}
	b.WaitBacklog(ctx, "fo", "s", 0)
}

func TestClosedConsumersUnackedMessagesMoveOnWithTheirCount(t *testing.T) {
	for _, how := range []string{"close", "drop connection"} {
		t.Run(how, func(t *testing.T) {
			b := testkit.Start(t)
			ctx := testCtx(t)
			clientA, clientB := b.Client(), b.Client()
			opts := func(name string) pulsar.ConsumerOptions {
				return pulsar.ConsumerOptions{Topic: "move", SubscriptionName: "s", Type: pulsar.Shared, Name: name,
					NackRedeliveryDelay: 20 * time.Millisecond}
			}
			a, err := clientA.Subscribe(opts("a"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			produce(t, clientA, "move", 5, numbered)
			for i := 0; i < 5; i++ {
				a.Nack(receive(t, ctx, a))
			}
			for i := 0; i < 5; i++ { // back at a, the only consumer, with count 1
				if m := receive(t, ctx, a); m.RedeliveryCount() != 1 {
					t.Fatalf("count %d after one nack", m.RedeliveryCount())
				}
			}
			bc := subscribe(t, clientB, opts("b"))
			if how == "close" {
				a.Close()
			} else if !b.DropConsumerConnection("move", "s", "a") {
				t.Fatal("consumer a not found")
			}
			got := map[string]uint32{}
			for len(got) < 5 {
				var m pulsar.Message
				select {
				case m = <-bc.Chan():
					bc.Ack(m)
				case m = <-a.Chan(): // a may come back after a dropped connection
					a.Ack(m)
				case <-ctx.Done():
					t.Fatalf("got %v before the deadline", got)
				}
				got[string(m.Payload())] = m.RedeliveryCount()
			}
			for p, c := range got {
				if c != 1 {
					t.Fatalf("message %s came back with count %d, want 1 (unchanged)", p, c)
				}
			}
			b.WaitBacklog(ctx, "move", "s", 0)
		})
	}
}

func TestKeySharedKeysStickToOneConsumerAndMoveWhenItCloses(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	c1 := subscribe(t, client, pulsar.ConsumerOptions{Topic: "ks", SubscriptionName: "s", Type: pulsar.KeyShared, Name: "c1"})
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "ks", SubscriptionName: "s", Type: pulsar.KeyShared, Name: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	msg := func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: keys[i%len(keys)], Payload: []byte(strconv.Itoa(i))}
	}
	// Key-based batching, as Pulsar asks of a Key_Shared producer: a batch is
	// dispatched by its first message's key, so a batch of mixed keys may
	// carry a key to the consumer that does not own it (the default batcher
	// splits the 80 messages wherever its 10 ms flush timer falls).
	keyBatched := pulsar.ProducerOptions{Topic: "ks", BatcherBuilderType: pulsar.KeyBasedBatchBuilder}
	produceWith(t, client, keyBatched, 80, msg)
	owner := map[string]string{}
	lastSeq := map[string]int{}
	for n := 0; n < 80; n++ {
		var m pulsar.Message
		var who pulsar.Consumer
		select {
		case m = <-c1.Chan():
			who = c1
		case m = <-c2.Chan():
			who = c2
		case <-ctx.Done():
			t.Fatal("timed out")
		}
		if o, ok := owner[m.Key()]; ok && o != who.Name() {
			t.Fatalf("key %s went to %s and %s", m.Key(), o, who.Name())
		}
		owner[m.Key()] = who.Name()
		i, _ := strconv.Atoi(string(m.Payload()))
		if prev, ok := lastSeq[m.Key()]; ok && i < prev {
			t.Fatalf("key %s out of order: %d after %d", m.Key(), i, prev)
		}
		lastSeq[m.Key()] = i
		who.Ack(m)
	}
	owners := map[string]bool{}
	for _, o := range owner {
		owners[o] = true
	}
	if len(owners) != 2 {
		t.Fatalf("the keys went to %v only, want both consumers", owner)
	}
	// c2 closes: all keys now go to c1.
	c2.Close()
	produceWith(t, client, keyBatched, 16, msg)
	for n := 0; n < 16; n++ {
		m := receive(t, ctx, c1)
		c1.Ack(m)
	}
	b.WaitBacklog(ctx, "ks", "s", 0)
}

func TestKeySharedReplayOfAKeyGoesBeforeItsNewMessages(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	var mu sync.Mutex
	var events []broker.Event
	b.OnEvent(func(e broker.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "ks-order", SubscriptionName: "s", Type: pulsar.KeyShared,
		NackRedeliveryDelay: 20 * time.Millisecond, ReceiverQueueSize: 4})
	const n = 20
	produceUnbatched(t, client, "ks-order", n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Key: "k", Payload: []byte(strconv.Itoa(i))}
	})
	got := map[string]int{}
	nacked := false
	for len(got) < n {
		m := receive(t, ctx, cons)
		if string(m.Payload()) == "0" && !nacked {
			nacked = true
			cons.Nack(m)
			continue
		}
		got[string(m.Payload())]++
		cons.Ack(m)
	}
	b.WaitBacklog(ctx, "ks-order", "s", 0)
	// On the wire: the first delivery after the redelivery request is the
	// replayed message 0, not a newer message of the same key.
	mu.Lock()
	defer mu.Unlock()
	asked := -1
	for i, e := range events {
		if e.Kind == broker.EventRedeliveryAsked {
			asked = i
			break
		}
	}
	if asked < 0 {
		t.Fatal("no redelivery request in the trace")
	}
	for _, e := range events[asked+1:] {
		if e.Kind == broker.EventDelivered {
			if e.ID.Entry != 0 || e.RedeliveryCount != 1 {
				t.Fatalf("first delivery after the nack: entry %d count %d, want the replay of entry 0 with count 1",
					e.ID.Entry, e.RedeliveryCount)
			}
			return
		}
	}
	t.Fatal("no delivery after the redelivery request")
}

func TestCumulativeAckOnExclusiveMovesCursorPastEarlierMessages(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "cumul", SubscriptionName: "s", Type: pulsar.Exclusive})
	produceUnbatched(t, client, "cumul", 10, numbered)
	var seventh pulsar.Message
	for i := 0; i < 10; i++ {
		m := receive(t, ctx, cons)
		if i == 6 {
			seventh = m
		}
	}
	if err := cons.AckCumulative(seventh); err != nil {
		t.Fatal(err)
	}
	b.WaitBacklog(ctx, "cumul", "s", 3)
	if md := b.Sub("cumul", "s").MarkDelete; md.Entry != seventh.ID().EntryID() {
		t.Fatalf("mark-delete at %+v, want entry %d", md, seventh.ID().EntryID())
	}
}

func TestBatchIndexAckRedeliversOnlyTheUnackedHalf(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithBatchIndexAck(true)))
	client := b.Client()
	ctx := testCtx(t)
	// Acks go out at once (no grouping), so the partial acks reach the broker
	// before the redelivery request of the nacks, on the same connection.
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "bia", SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true, NackRedeliveryDelay: 20 * time.Millisecond,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "bia", BatchingMaxMessages: 10,
		BatchingMaxPublishDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		p.SendAsync(ctx, numbered(i), func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for i := 0; i < 10; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := b.Topic("bia"); st.Entries != 1 {
		t.Fatalf("the 10 messages made %d entries, want one batch", st.Entries)
	}
	for i := 0; i < 10; i++ {
		m := receive(t, ctx, cons)
		if i%2 == 0 {
			cons.Ack(m)
		} else {
			cons.Nack(m)
		}
	}
	var back []string
	for i := 0; i < 5; i++ {
		m := receive(t, ctx, cons)
		back = append(back, string(m.Payload()))
		cons.Ack(m)
	}
	if fmt.Sprint(back) != "[1 3 5 7 9]" {
		t.Fatalf("redelivered %v, want only the nacked half [1 3 5 7 9]", back)
	}
	b.WaitBacklog(ctx, "bia", "s", 0)
}

func TestWithoutBatchIndexAckAPartlyAckedBatchComesBackWhole(t *testing.T) {
	b := testkit.Start(t) // Pulsar 4.0's default: batch-index acks off
	client := b.Client()
	ctx := testCtx(t)
	// Acks with response: the client keeps no pending acks that would make it
	// drop the redelivered indexes as duplicates itself.
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "bia-off", SubscriptionName: "s", Type: pulsar.Shared,
		EnableBatchIndexAcknowledgment: true, AckWithResponse: true, NackRedeliveryDelay: 20 * time.Millisecond})
	produceWith(t, client, pulsar.ProducerOptions{Topic: "bia-off", BatchingMaxMessages: 4,
		BatchingMaxPublishDelay: time.Second}, 4, numbered)
	for i := 0; i < 4; i++ {
		m := receive(t, ctx, cons)
		if i%2 == 0 {
			cons.Ack(m)
		} else {
			cons.Nack(m)
		}
	}
	// The acks of single indexes were ignored: all four come back.
	var back []string
	for i := 0; i < 4; i++ {
		m := receive(t, ctx, cons)
		back = append(back, string(m.Payload()))
		cons.Ack(m)
	}
	if fmt.Sprint(back) != "[0 1 2 3]" {
		t.Fatalf("redelivered %v, want the whole batch [0 1 2 3]", back)
	}
	b.WaitBacklog(ctx, "bia-off", "s", 0)
}
