package broker_test

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestUnsubscribeWithOtherConsumersGetsMetadataErrorUnlessItIsTheLast(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	a := subscribe(t, client, pulsar.ConsumerOptions{Topic: "unsub", SubscriptionName: "s", Type: pulsar.Shared})
	other, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "unsub", SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unsubscribe(); err == nil || !strings.Contains(err.Error(), "MetadataError") {
		t.Fatalf("unsubscribe beside another consumer: %v, want MetadataError", err)
	}
	other.Close()
	if err := a.Unsubscribe(); err != nil {
		t.Fatalf("unsubscribe as the only consumer: %v", err)
	}
	if _, ok := b.Subscription("unsub", "s"); ok {
		t.Fatal("the subscription survived its unsubscribe")
	}
}

func TestDurableSubscriptionOutlivesItsConsumersAndNonDurableGoesWithTheLast(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	d, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "life", SubscriptionName: "durable"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: "life", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := b.Topic("life")
	if len(ts.Subscriptions) != 2 {
		t.Fatalf("subscriptions %v, want the durable one and the reader's", ts.Subscriptions)
	}
	d.Close()
	r.Close()
	ctx := testCtx(t)
	b.WaitFor(ctx, "the reader's subscription to go", func() bool {
		ts, _ := b.Topic("life")
		return len(ts.Subscriptions) == 1 && ts.Subscriptions[0] == "durable"
	})
}

func TestKeySharedStickyOverlappingRangesAreRefused(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	first, err := pulsar.NewKeySharedPolicySticky([]int{0, 30000})
	if err != nil {
		t.Fatal(err)
	}
	subscribe(t, client, pulsar.ConsumerOptions{Topic: "sticky", SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: first})
	overlap, _ := pulsar.NewKeySharedPolicySticky([]int{20000, 40000})
	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: "sticky", SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: overlap})
	if err == nil || !strings.Contains(err.Error(), "ConsumerAssignError") {
		t.Fatalf("overlapping sticky range: %v, want ConsumerAssignError", err)
	}
	rest, _ := pulsar.NewKeySharedPolicySticky([]int{30001, 65535})
	subscribe(t, client, pulsar.ConsumerOptions{Topic: "sticky", SubscriptionName: "s", Type: pulsar.KeyShared,
		KeySharedPolicy: rest})
}

func TestGetLastMessageIDReportsTheLastBatchIndex(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	cons := subscribe(t, client, pulsar.ConsumerOptions{Topic: "last", SubscriptionName: "s"})
	ids, err := cons.GetLastMessageIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0].EntryID() != -1 {
		t.Fatalf("empty topic: last ids %v, want entry -1", ids)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "last", BatchingMaxPublishDelay: time.Second,
		BatchingMaxMessages: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan error, 5)
	for range 5 {
		p.SendAsync(testCtx(t), &pulsar.ProducerMessage{Payload: []byte("m")},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ids, err = cons.GetLastMessageIDs()
	if err != nil {
		t.Fatal(err)
	}
	if ids[0].EntryID() != 0 || ids[0].BatchIdx() != 4 {
		t.Fatalf("last id %v, want entry 0 batch index 4", ids[0])
	}
}

func TestReaderStartsAtTheGivenMessage(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	produceUnbatched(t, client, "reader", 5, numbered)
	stored := b.Messages("reader")
	start := stored[2].ID
	startID, _ := findID(t, client, "reader", start.Entry)
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: "reader", StartMessageID: startID,
		StartMessageIDInclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for want := 2; want < 5; want++ {
		m, err := r.Next(ctx)
		if err != nil || string(m.Payload()) != strconv.Itoa(want) {
			t.Fatalf("reader got %v %v, want message %d", m, err, want)
		}
	}
}

// findID reads the topic from the start and returns the id of the message at
// entry n.
func findID(t *testing.T, c pulsar.Client, topic string, n int64) (pulsar.MessageID, bool) {
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.HasNext() {
		m, err := r.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.ID().EntryID() == n {
			return m.ID(), true
		}
	}
	t.Fatalf("entry %d not found", n)
	return nil, false
}

func TestRedeliverWithConsumerEpochStampsTheResentMessages(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("epoch", 1)
	c.write(sendFrame(1, 0, []byte("m")))
	if r := c.read(); r.SendReceipt == nil {
		t.Fatalf("got %v", r.GetType())
	}
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: ptr("epoch"), Subscription: ptr("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: ptr(uint64(1)), RequestId: ptr(uint64(2)), ConsumerEpoch: ptr(uint64(0)),
		InitialPosition: pb.CommandSubscribe_Earliest.Enum(),
	}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("subscribe: %v %v", r.GetType(), r.GetError())
	}
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: ptr(uint64(1)), MessagePermits: ptr(uint32(10))}))
	if m := c.read().GetMessage(); m == nil || m.GetConsumerEpoch() != 0 {
		t.Fatalf("first delivery: %v, want epoch 0", m)
	}
	// Java's redeliver-all on Exclusive: no ids, the epoch raised by one.
	c.send(protocol.Base(pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES, &pb.CommandRedeliverUnacknowledgedMessages{
		ConsumerId: ptr(uint64(1)), ConsumerEpoch: ptr(uint64(1)),
	}))
	m := c.read().GetMessage()
	if m == nil || m.GetConsumerEpoch() != 1 || m.GetRedeliveryCount() != 0 {
		t.Fatalf("redelivery: %v, want epoch 1 and count 0", m)
	}
}

func TestReaderKeepsItsSubscriptionThroughASeek(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := testCtx(t)
	produceUnbatched(t, client, "seek-reader", 5, numbered)
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: "seek-reader", StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A seek disconnects the reader; its non-durable subscription must
	// survive for it to come back to, at the new position.
	if err := r.SeekByTime(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if r.HasNext() {
		t.Fatal("after a seek past the last message the reader still has a next one")
	}
	produceUnbatched(t, client, "seek-reader", 1, func(int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte("after")}
	})
	m, err := r.Next(ctx)
	if err != nil || string(m.Payload()) != "after" {
		t.Fatalf("after the seek: %v %v", m, err)
	}
}

// TestRefusedExclusiveSubscribeWhileAcksFlowIsRaceFree refuses a second
// Exclusive consumer over and over while the first one acks: the refusal's
// message is read from the dispatcher, which must happen under the topic's
// lock (the race detector caught it outside, in a property check).
func TestRefusedExclusiveSubscribeWhileAcksFlowIsRaceFree(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	a := subscribe(t, client, pulsar.ConsumerOptions{Topic: "busy", SubscriptionName: "s", Type: pulsar.Exclusive,
		AckWithResponse: true}) // each ack reaches the broker before the next message is taken
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "busy", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // the first consumer acks all along
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.SendAsync(t.Context(), &pulsar.ProducerMessage{Payload: []byte("m")}, nil)
			select {
			case cm := <-a.Chan():
				a.Ack(cm.Message)
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	other := b.Client() // a connection of its own, read by another broker goroutine
	for range 100 {
		_, err := other.Subscribe(pulsar.ConsumerOptions{Topic: "busy", SubscriptionName: "s", Type: pulsar.Exclusive,
			MaxReconnectToBroker: new(uint(0))})
		if err == nil || !strings.Contains(err.Error(), "Exclusive consumer is already connected") {
			t.Fatalf("second Exclusive consumer: %v, want ConsumerBusy", err)
		}
	}
	if s := b.Sub("busy", "s"); s.MarkDelete.Entry < 0 {
		t.Fatalf("the first consumer acked nothing meanwhile: %+v", s)
	}
}

// TestConsumerClosedByTheBrokerSubscribesAgainAtOnce closes a consumer from
// the broker side and subscribes it again, with the same consumer id, as
// soon as CLOSE_CONSUMER arrives: the consumer must be attached again. A hook
// holds the broker right after the close, where the consumer used to be
// still in its connection's table, so that the new SUBSCRIBE was answered
// as a repeat without attaching anything (a property check of a handler
// found a consumer that thought it was subscribed and got nothing).
func TestConsumerClosedByTheBrokerSubscribesAgainAtOnce(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, strings.TrimPrefix(b.URL(), "pulsar://"))
	c.connect()
	topic := "persistent://public/default/again"
	subscribe := func(req uint64) *pb.BaseCommand {
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
			Topic: proto.String(topic), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
			ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(req), ConsumerName: proto.String("raw"),
		}))
		return c.read()
	}
	if r := subscribe(1); r.Success == nil {
		t.Fatalf("subscribe: %v", r)
	}
	closing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventConsumerClosed && e.Topic == topic {
			once.Do(func() { close(closing); <-release })
		}
	})()
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	// Every event so far delivered, the close's are delivered, and the hook
	// held, on the goroutine that closes (not on the connection's reader).
	b.Events()
	go b.CloseConsumer(topic, "s", "raw")
	<-closing
	if r := c.read(); r.CloseConsumer == nil {
		t.Fatalf("want CLOSE_CONSUMER, got %v", r)
	}
	if r := subscribe(2); r.Success == nil {
		t.Fatalf("subscribe again: %v", r)
	}
	s := b.Sub(topic, "s")
	releaseOnce.Do(func() { close(release) })
	if len(s.Consumers) != 1 {
		t.Fatalf("the consumer subscribed again and was told SUCCESS, but the subscription has %d consumers", len(s.Consumers))
	}
}

// TestProducerClosedByTheBrokerReconnectsAtOnce is the same for a producer:
// one that comes back with the same producer id as soon as CLOSE_PRODUCER
// arrives must be attached again.
func TestProducerClosedByTheBrokerReconnectsAtOnce(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, strings.TrimPrefix(b.URL(), "pulsar://"))
	c.connect()
	topic := "persistent://public/default/again"
	name := c.producer(topic, 1).GetProducerName()
	closing, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	defer b.OnEvent(func(e broker.Event) {
		if e.Kind == broker.EventProducerClosed && e.Topic == topic {
			once.Do(func() { close(closing); <-release })
		}
	})()
	defer releaseOnce.Do(func() { close(release) })
	b.Events() // as above: the hook holds the goroutine that closes
	go b.CloseProducer(topic, name)
	<-closing
	if r := c.read(); r.CloseProducer == nil {
		t.Fatalf("want CLOSE_PRODUCER, got %v", r)
	}
	c.producer(topic, 1)
	ts, _ := b.Topic(topic)
	releaseOnce.Do(func() { close(release) })
	if len(ts.Producers) != 1 {
		t.Fatalf("the producer came back and was told SUCCESS, but the topic has producers %v", ts.Producers)
	}
}

func TestNonDurableSubscribeWithoutAStartIdStartsAtItsInitialPosition(t *testing.T) {
	b := testkit.Start(t)
	c := dialRaw(t, addrOf(b))
	c.connect()
	c.producer("nd-start", 1)
	for seq := range uint64(3) {
		c.write(sendFrame(1, seq, []byte("m")))
		if r := c.read(); r.SendReceipt == nil {
			t.Fatalf("send %d: got %v", seq, r.GetType())
		}
	}
	subscribe := func(consumer uint64, pos pb.CommandSubscribe_InitialPosition) {
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
			Topic: ptr("nd-start"), Subscription: ptr(fmt.Sprintf("nd-%d", consumer)),
			SubType: pb.CommandSubscribe_Exclusive.Enum(), ConsumerId: ptr(consumer),
			RequestId: ptr(consumer + 100), Durable: ptr(false), InitialPosition: pos.Enum(),
		}))
		if r := c.read(); r.Success == nil {
			t.Fatalf("subscribe %d: %v %v", consumer, r.GetType(), r.GetError())
		}
		c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: ptr(consumer), MessagePermits: ptr(uint32(10))}))
	}
	subscribe(1, pb.CommandSubscribe_Latest)
	subscribe(2, pb.CommandSubscribe_Earliest)
	var entries []string
	for range 3 {
		m := c.read().GetMessage()
		if m == nil {
			t.Fatal("want a MESSAGE")
		}
		entries = append(entries, fmt.Sprintf("%d:%d", m.GetConsumerId(), m.GetMessageId().GetEntryId()))
	}
	// A fourth message goes to both: the Latest one got nothing before it.
	c.write(sendFrame(1, 3, []byte("m")))
	for range 3 {
		r := c.read()
		if m := r.GetMessage(); m != nil {
			entries = append(entries, fmt.Sprintf("%d:%d", m.GetConsumerId(), m.GetMessageId().GetEntryId()))
		}
	}
	sort.Strings(entries)
	want := []string{"1:3", "2:0", "2:1", "2:2", "2:3"}
	if !slices.Equal(entries, want) {
		t.Fatalf("deliveries (consumer:entry) %v, want %v", entries, want)
	}
}
