package admin_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
)

// peekEpoch is the broker clock's time in the tests that read messages:
// every entry broker.Publish stores carries it as publish time.
var peekEpoch = time.Date(2026, 12, 1, 1, 22, 28, 674_000_000, time.UTC)

// startPeekAdmin starts a broker on a manual clock at peekEpoch with its
// admin API, and returns both and the API's URL.
func startPeekAdmin(t *testing.T) (*broker.Broker, string) {
	t.Helper()
	return serveAdmin(t, broker.WithClock(broker.NewManualClock(peekEpoch)))
}

// answer is an HTTP answer: status, the headers a test looks at, body.
type answer struct {
	Status  int
	Headers map[string]string
	Body    string
}

// get fetches url and keeps the X-Pulsar-* headers and Content-Type.
func get(t *testing.T, url string) answer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, Headers: map[string]string{}, Body: string(body)}
	for k := range resp.Header {
		if len(k) > 9 && k[:9] == "X-Pulsar-" || k == "Content-Type" {
			a.Headers[k] = resp.Header.Get(k)
		}
	}
	return a
}

func mustPublish(t *testing.T, b *broker.Broker, topic string, batch bool, msgs ...broker.ProducerMessage) {
	t.Helper()
	publish := b.Publish
	if batch {
		publish = b.PublishBatch
	}
	if _, err := publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
}

// seedPeekTopic stores three entries on persistent://public/default/peek:
// a bare message, a keyed one with properties and event time, and a batch of
// three.
func seedPeekTopic(t *testing.T, b *broker.Broker) string {
	t.Helper()
	const topic = "persistent://public/default/peek"
	mustPublish(t, b, topic, false, broker.ProducerMessage{Payload: []byte("one")})
	mustPublish(t, b, topic, false, broker.ProducerMessage{Payload: []byte("two"), Key: "k2",
		Properties: map[string]string{"a": "1", "b": "2"}, EventTime: time.UnixMilli(1700000000123)})
	mustPublish(t, b, topic, true,
		broker.ProducerMessage{Payload: []byte("b0"), Key: "bk0", Properties: map[string]string{"i": "0"}},
		broker.ProducerMessage{Payload: []byte("b1"), Key: "bk1"},
		broker.ProducerMessage{Payload: []byte("b2"), Key: "bk2"})
	return topic
}

// ledgerOf returns the ledger id of a topic's entries.
func ledgerOf(t *testing.T, b *broker.Broker, topic string) int64 {
	t.Helper()
	id, err := b.LastMessageID(topic)
	if err != nil {
		t.Fatal(err)
	}
	return id.Ledger
}

func TestPeekAnswersTheBacklogInOrderWithPulsarsHeaders(t *testing.T) {
	b, url := startPeekAdmin(t)
	topic := seedPeekTopic(t, b)
	if err := b.CreateSubscription(topic, "s", broker.Earliest); err != nil {
		t.Fatal(err)
	}
	base := url + "/admin/v2/persistent/public/default/peek/subscription/s/position/"
	ledger := strconv.FormatInt(ledgerOf(t, b, topic), 10)
	common := func(id, producer, seq, size string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-Pulsar-Message-Id": ledger + ":" + id,
			"X-Pulsar-Publish-Time": "2026-12-01T01:22:28.674Z", "X-Pulsar-Is-Encrypted": "false",
			"X-Pulsar-Producer-Name": producer, "X-Pulsar-Sequence-Id": seq, "X-Pulsar-Uncompressed-Size": size,
			"X-Pulsar-Txn-Uncommitted": "false", "X-Pulsar-Property": "{}"}
	}
	first := common("0", "standalone-0-0", "0", "3")
	second := common("1", "standalone-0-1", "0", "3")
	second["X-Pulsar-Property"] = `{"a":"1","b":"2"}`
	second["X-Pulsar-Partition-Key"] = "k2"
	second["X-Pulsar-Event-Time"] = "2023-11-14T22:13:20.123Z"
	if got := get(t, base+"1"); !cmp.Equal(got, answer{200, first, "one"}) {
		t.Errorf("position 1: %s", cmp.Diff(answer{200, first, "one"}, got))
	}
	if got := get(t, base+"2"); !cmp.Equal(got, answer{200, second, "two"}) {
		t.Errorf("position 2: %s", cmp.Diff(answer{200, second, "two"}, got))
	}
	batch := get(t, base+"3")
	e, err := b.Entry(topic, broker.MessageID{Ledger: ledgerOf(t, b, topic), Entry: 2})
	if err != nil {
		t.Fatal(err)
	}
	if batch.Status != 200 || batch.Body != string(e.Body) || batch.Headers["X-Pulsar-Num-Batch-Message"] != "3" ||
		batch.Headers["X-Pulsar-Message-Id"] != ledger+":2" || batch.Headers["X-Pulsar-Partition-Key"] != "bk0" ||
		batch.Headers["X-Pulsar-Uncompressed-Size"] != strconv.Itoa(len(e.Body)) {
		t.Errorf("position 3: %+v", batch)
	}
	// The batch's size is the stored payload with the checksum and metadata
	// size before it, as Pulsar counts it.
	if got, want := batch.Headers["X-Pulsar-Batch-Size"], strconv.Itoa(e.FrameSize); got != want || e.FrameSize < len(e.Body)+4 {
		t.Errorf("batch size %s, want %s (body %d)", got, want, len(e.Body))
	}
	if got := get(t, base+"4"); got.Status != 404 || got.Body != `{"reason":"Message not found"}` {
		t.Errorf("beyond the backlog: %+v", got)
	}
}

func TestPeekRefusesWhatPulsarRefusesAndCreatesAMissingSubscription(t *testing.T) {
	b, url := startPeekAdmin(t)
	topic := seedPeekTopic(t, b)
	if err := b.CreatePartitionedTopic("persistent://public/default/parts", 2); err != nil {
		t.Fatal(err)
	}
	v2 := url + "/admin/v2/persistent/public/default/"
	cases := []struct {
		name, path string
		status     int
		body       string
	}{
		{"unknown topic", "none/subscription/s/position/1", 404, `{"reason":"Topic persistent://public/default/none not found"}`},
		{"position 0", "peek/subscription/s/position/0", 500,
			`{"reason":"\n --- An unexpected error occurred in the server ---\n\nMessage: null\n\nStacktrace:\n\njava.lang.IllegalArgumentException\n"}`},
		{"position not a number", "peek/subscription/s/position/x", 404,
			`{"reason":"Not found: /admin/v2/persistent/public/default/peek/subscription/s/position/x"}`},
		{"partitioned topic", "parts/subscription/s/position/1", 405, `{"reason":"Peek messages on a partitioned topic is not allowed"}`},
		{"unknown namespace", "../none/t/subscription/s/position/1", 404, `{"reason":"Namespace not found"}`},
	}
	for _, c := range cases {
		if got := get(t, v2+c.path); got.Status != c.status || got.Body != c.body {
			t.Errorf("%s: %d %s, want %d %s", c.name, got.Status, got.Body, c.status, c.body)
		}
	}
	// Pulsar 4.0.8 creates a durable subscription at the earliest position
	// for a peek that names none.
	if got := get(t, v2+"peek/subscription/fresh/position/1"); got.Status != 200 || got.Body != "one" {
		t.Fatalf("peek of a new subscription: %+v", got)
	}
	subs, err := b.Subscriptions(topic)
	if err != nil || !slices.Equal(subs, []string{"fresh", "s"}) && !slices.Equal(subs, []string{"fresh"}) {
		t.Fatalf("subscriptions %v, %v", subs, err)
	}
	if sn, ok := b.Subscription(topic, "fresh"); !ok || sn.Backlog != 3 {
		t.Fatalf("the new subscription: %+v", sn)
	}
}

func TestExamineCountsFromEitherEndAsPulsarDoes(t *testing.T) {
	b, url := startPeekAdmin(t)
	topic := seedPeekTopic(t, b)
	if err := b.CreateTopic("persistent://public/default/empty"); err != nil {
		t.Fatal(err)
	}
	if err := b.CreatePartitionedTopic("persistent://public/default/parts", 2); err != nil {
		t.Fatal(err)
	}
	ledger := strconv.FormatInt(ledgerOf(t, b, topic), 10)
	v2 := url + "/admin/v2/persistent/public/default/"
	for _, c := range []struct {
		query string
		entry string
	}{
		{"", "2"}, // latest, position 1
		{"?initialPosition=earliest&messagePosition=1", "0"},
		{"?initialPosition=earliest&messagePosition=2", "1"},
		{"?initialPosition=earliest&messagePosition=9", "2"}, // beyond the end: the last
		{"?initialPosition=earliest&messagePosition=0", "0"},
		{"?initialPosition=latest&messagePosition=3", "0"},
		{"?initialPosition=latest&messagePosition=-1", "2"},
		{"?initialPosition=EARLIEST&messagePosition=1", "2"}, // only "earliest" is the start
	} {
		got := get(t, v2+"peek/examinemessage"+c.query)
		if got.Status != 200 || got.Headers["X-Pulsar-Message-Id"] != ledger+":"+c.entry {
			t.Errorf("examine%s: %d %s, want entry %s", c.query, got.Status, got.Headers["X-Pulsar-Message-Id"], c.entry)
		}
	}
	cases := []struct {
		name, path string
		status     int
		body       string
	}{
		{"from the end past the start", "peek/examinemessage?initialPosition=latest&messagePosition=4", 500,
			`{"reason":"\n --- An unexpected error occurred in the server ---\n\nMessage: Incorrect parameter input error code: -14\n\nStacktrace:\n\norg.apache.bookkeeper.mledger.ManagedLedgerException: Incorrect parameter input error code: -14\n"}`},
		{"empty topic", "empty/examinemessage?initialPosition=earliest", 412,
			`{"reason":"Could not examine messages due to the total message is zero"}`},
		{"unknown topic", "none/examinemessage", 404, `{"reason":"Topic persistent://public/default/none not found"}`},
		{"partitioned topic", "parts/examinemessage", 405,
			`{"reason":"Examine messages on a partitioned topic is not allowed, please try examine message on specific topic partition"}`},
		{"position not a number", "peek/examinemessage?messagePosition=x", 404,
			`{"reason":"Not found: /admin/v2/persistent/public/default/peek/examinemessage"}`},
	}
	for _, c := range cases {
		if got := get(t, v2+c.path); got.Status != c.status || got.Body != c.body {
			t.Errorf("%s: %d %s, want %d %s", c.name, got.Status, got.Body, c.status, c.body)
		}
	}
}

func TestLastMessageIDAndMessageIDByTimeAnswerPulsarsJSON(t *testing.T) {
	b, url := startPeekAdmin(t)
	clk := b.Clock().(*broker.ManualClock)
	const topic = "persistent://public/default/ids"
	if err := b.CreateTopic(topic); err != nil {
		t.Fatal(err)
	}
	if err := b.CreatePartitionedTopic("persistent://public/default/parts", 2); err != nil {
		t.Fatal(err)
	}
	v2 := url + "/admin/v2/persistent/public/default/"
	l := strconv.FormatInt(ledgerOf(t, b, topic), 10)
	want := func(path string, status int, body string) {
		t.Helper()
		if got := get(t, v2+path); got.Status != status || got.Body != body {
			t.Errorf("%s: %d %s, want %d %s", path, got.Status, got.Body, status, body)
		}
	}
	want("ids/lastMessageId", 200, `{"ledgerId":`+l+`,"entryId":-1,"partitionIndex":-1,"batchIndex":-1,"batchSize":0}`)
	want("ids/messageid/0", 200, `{"ledgerId":`+l+`,"entryId":0,"partitionIndex":-1,"batchIndex":-1,"batchSize":0}`)
	mustPublish(t, b, topic, false, broker.ProducerMessage{Payload: []byte("a")})
	want("ids/lastMessageId", 200, `{"ledgerId":`+l+`,"entryId":0,"partitionIndex":-1,"batchIndex":-1,"batchSize":0}`)
	clk.Advance(10 * time.Millisecond)
	mustPublish(t, b, topic, true, broker.ProducerMessage{Payload: []byte("b")}, broker.ProducerMessage{Payload: []byte("c")})
	want("ids/lastMessageId", 200, `{"ledgerId":`+l+`,"entryId":1,"partitionIndex":-1,"batchIndex":1,"batchSize":0,"outstandingAcksInSameBatch":0,"originalBatchSize":0}`)
	ms := peekEpoch.UnixMilli()
	for ts, entry := range map[int64]string{-5: "0", ms: "0", ms + 1: "1", ms + 10: "1", ms + 11: "2"} {
		want("ids/messageid/"+strconv.FormatInt(ts, 10), 200, `{"ledgerId":`+l+`,"entryId":`+entry+`,"partitionIndex":-1,"batchIndex":-1,"batchSize":0}`)
	}
	mustPublish(t, b, "persistent://public/default/parts-partition-1", false, broker.ProducerMessage{Payload: []byte("p")})
	pl := strconv.FormatInt(ledgerOf(t, b, "persistent://public/default/parts-partition-1"), 10)
	want("parts-partition-1/lastMessageId", 200, `{"ledgerId":`+pl+`,"entryId":0,"partitionIndex":1,"batchIndex":-1,"batchSize":0}`)
	want("parts/lastMessageId", 404, `{"reason":"Topic persistent://public/default/parts not found"}`)
	want("parts/messageid/0", 405, `{"reason":"Get message ID by timestamp on a partitioned topic is not allowed, please try do it on specific topic partition"}`)
	want("parts/ledger/1/entry/0", 405, `{"reason":"GetMessageById is not allowed on partitioned-topic"}`)
	want("none/lastMessageId", 404, `{"reason":"Topic persistent://public/default/none not found"}`)
	want("none/messageid/0", 404, `{"reason":"Topic persistent://public/default/none not found"}`)
	want("ids/messageid/x", 404, `{"reason":"Not found: /admin/v2/persistent/public/default/ids/messageid/x"}`)
}

func TestPulsarAdminPeeksWhatAGoProducerSentAndSkipsAckedEntries(t *testing.T) {
	b, url := startPeekAdmin(t)
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	tn := topicName(t, "persistent://public/default/peek-client")
	c := newClient(t, b)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: tn.String(), SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := context.Background()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), Name: "single", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, m := range []*pulsar.ProducerMessage{{Payload: []byte("one")},
		{Payload: []byte("two"), Key: "k2", Properties: map[string]string{"a": "1"}}} {
		if _, err := prod.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	batcher, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), Name: "batcher",
		BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer batcher.Close()
	done := make(chan error, 3)
	for i := range 3 {
		batcher.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("b" + strconv.Itoa(i)),
			Properties: map[string]string{"i": strconv.Itoa(i)}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := batcher.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Acknowledge "two" alone: the peek skips it.
	for range 2 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) == "two" {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !waitFor(func() bool { sn, _ := b.Subscription(tn.String(), "s"); return sn.Backlog == 2 }) {
		t.Fatal("the acknowledgement of two did not arrive")
	}
	msgs, err := a.Subscriptions().PeekMessages(tn, "s", 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		// (pulsaradmin gives a batch's messages one map of properties, the
		// last message's, so they are not compared here.)
		got = append(got, string(m.Payload)+"@"+strconv.FormatInt(m.MessageID.EntryID, 10)+"/"+strconv.Itoa(m.MessageID.BatchIndex))
	}
	want := []string{"one@0/-1", "b0@2/0", "b1@2/1", "b2@2/2"}
	if !slices.Equal(got, want) {
		t.Fatalf("peeked %q, want %q", got, want)
	}
	if msgs[0].Properties["publish-time"] == "" {
		t.Errorf("no publish time: %v", msgs[0].Properties)
	}
	two, err := a.Subscriptions().PeekMessages(tn, "other", 2)
	if err != nil || len(two) < 2 || string(two[1].Payload) != "two" || two[1].Properties["a"] != "1" {
		t.Fatalf("peek of a new subscription: %+v, %v", two, err)
	}
	last, err := a.Topics().GetLastMessageID(tn)
	// (pulsaradmin does not read the batch index; the HTTP tests check it.)
	if err != nil || last.EntryID != 2 || last.PartitionIndex != -1 {
		t.Fatalf("last message id %+v, %v", last, err)
	}
	first, err := a.Topics().GetMessageID(tn, 0)
	if err != nil || first.EntryID != 0 || first.LedgerID != last.LedgerID {
		t.Fatalf("message id at 0: %+v, %v", first, err)
	}
	ex := get(t, url+"/admin/v2/persistent/public/default/peek-client/examinemessage?initialPosition=earliest&messagePosition=2")
	if ex.Status != 200 || ex.Body != "two" || ex.Headers["X-Pulsar-Partition-Key"] != "k2" ||
		ex.Headers["X-Pulsar-Producer-Name"] != "single" || ex.Headers["X-Pulsar-Property"] != `{"a":"1"}` {
		t.Fatalf("examine: %+v", ex)
	}
	batch := get(t, url+"/admin/v2/persistent/public/default/peek-client/examinemessage")
	if size, _ := strconv.Atoi(batch.Headers["X-Pulsar-Uncompressed-Size"]); batch.Headers["X-Pulsar-Batch-Size"] != strconv.Itoa(size+10) {
		t.Errorf("batch of a checksummed payload: %+v", batch.Headers)
	}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
