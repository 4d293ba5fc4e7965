package scenarios_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The admin endpoints that read messages without consuming them (peek at a
// subscription's backlog, examine a topic from either end, its last message
// id, the message id at a publish time, an entry by id), compared with a
// real Pulsar: the same messages from the same pulsar-client-go producers,
// then the same requests to both. Ledger ids and publish times are the
// brokers' own, so they are masked; entry ids, batch indexes, the other
// X-Pulsar-* headers and the bodies are compared as they are.

// peekReader sends one broker's requests and notes its normalised answers.
type peekReader struct {
	t      *testing.T
	base   string
	suffix string // the run's unique part of names, left out of the notes
	notes  []string
	// lastBody is the body of the last answer.
	lastBody string
}

// lcePosition is a ledger id in the managed ledger's "LastConfirmedEntry
// is L:E" message.
var lcePosition = regexp.MustCompile(`(LastConfirmedEntry is )-?\d+:`)

var ledgerInID = regexp.MustCompile(`("ledgerId":)-?\d+|^-?\d+(:-?\d+)$`)

// mask replaces ledger ids, in a JSON id or an "L:E" header, with L.
func mask(s string) string {
	return ledgerInID.ReplaceAllString(s, "${1}L$2")
}

// get notes the status, X-Pulsar-* headers (but the publish time) and body
// of a GET of path, and returns the raw headers.
func (r *peekReader) get(path string) http.Header {
	r.t.Helper()
	return r.getAs(path, path)
}

// getAs is get noting the path as label (for a path that holds a ledger id
// or a publish time).
func (r *peekReader) getAs(path, label string) http.Header {
	r.t.Helper()
	resp, err := http.Get(r.base + path)
	if err != nil {
		r.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.lastBody = string(body)
	var hs []string
	for k := range resp.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-pulsar-") && lk != "x-pulsar-publish-time" {
			hs = append(hs, lk+"="+mask(resp.Header.Get(k)))
		}
	}
	sort.Strings(hs)
	line := fmt.Sprintf("GET %s -> %d %s", strings.ReplaceAll(label, r.suffix, ""), resp.StatusCode, strings.Join(hs, " "))
	var reason struct{ Reason string }
	notJSON := json.Unmarshal(body, &reason) != nil
	switch {
	case resp.StatusCode == http.StatusNotFound && (notJSON || strings.HasPrefix(reason.Reason, "Not found: ")):
		// Jersey's HTML page for a parameter it cannot convert, which
		// pulsarsim answers in JSON.
		line += " (no route)"
	case resp.StatusCode >= 300:
		// An unexpected exception's reason up to its first stack frame.
		first, _, _ := strings.Cut(reason.Reason, "\n\tat ")
		first = lcePosition.ReplaceAllString(first, "${1}L:")
		line += fmt.Sprintf(" %q", strings.ReplaceAll(strings.TrimSpace(first), r.suffix, ""))
	case len(body) > 0 && body[0] == '[':
		// A list (of subscriptions), in no order on Pulsar.
		var names []string
		_ = json.Unmarshal(body, &names)
		sort.Strings(names)
		line += fmt.Sprintf(" %q", names)
	case len(body) > 0 && body[0] == '{':
		line += " " + mask(sortedJSON(body))
	default:
		line += " " + hex.EncodeToString(body)
	}
	r.notes = append(r.notes, line)
	return resp.Header
}

// sortedJSON rewrites a JSON object with its keys in sorted order: the
// order of a message id's keys differs from one start of Pulsar 4.0.8's
// JVM to the next (batchSize before or after batchIndex).
func sortedJSON(body []byte) string {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return string(body)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// do sends a request whose answer is not compared (set-up).
func (r *peekReader) do(method, path, body string) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		r.t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
}

// peekProduce sends, through fixed producers: "one", "two" (keyed, with
// properties and an event time), a batch of three, and, when last is set,
// "five" after it.
func peekProduce(t *testing.T, client pulsar.Client, topic string, last bool) {
	t.Helper()
	ctx := context.Background()
	single, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "peek-single", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	send := func(m *pulsar.ProducerMessage) {
		if _, err := single.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if !last {
		send(&pulsar.ProducerMessage{Payload: []byte("one")})
		send(&pulsar.ProducerMessage{Payload: []byte("two"), Key: "k2", Properties: map[string]string{"a": "1", "b": "2"},
			EventTime: time.UnixMilli(1700000000123)})
		batcher, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "peek-batcher",
			BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer batcher.Close()
		done := make(chan error, 3)
		for i := range 3 {
			batcher.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("b%d", i)), Key: fmt.Sprintf("bk%d", i),
				Properties: map[string]string{"i": fmt.Sprint(i)}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
		}
		if err := batcher.Flush(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	send(&pulsar.ProducerMessage{Payload: []byte("five"), Properties: map[string]string{"z": "9"}})
}

// peekStory produces the messages on tg and notes the answers of its admin
// API at base.
func peekStory(t *testing.T, tg *scenarios.Target, base string) []string {
	topic := tg.Topic("peek")
	suffix := strings.TrimPrefix(topic, "persistent://public/default/peek")
	r := &peekReader{t: t, base: base, suffix: suffix}
	client := tg.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", AckWithResponse: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	peekProduce(t, client, topic, false)
	// The subscription acknowledges "two" alone: peeks skip it.
	for range 2 {
		m, err := cons.Receive(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) == "two" {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := topicPath(topic)
	for _, pos := range []string{"1", "2", "3", "0", "-1", "x"} {
		r.get(p + "/subscription/s/position/" + pos)
	}
	// A peek creates the subscription it names, at the earliest position.
	r.get(p + "/subscription/fresh/position/2")
	r.get(p + "/subscriptions")
	for _, q := range []string{"", "?initialPosition=earliest&messagePosition=1", "?initialPosition=earliest&messagePosition=2",
		"?initialPosition=earliest&messagePosition=99", "?initialPosition=earliest&messagePosition=0",
		"?initialPosition=latest&messagePosition=3", "?initialPosition=latest&messagePosition=4",
		"?initialPosition=latest&messagePosition=-1", "?initialPosition=EARLIEST", "?messagePosition=x"} {
		r.get(p + "/examinemessage" + q)
	}
	r.get(p + "/lastMessageId")
	r.get(p + "/messageid/0")
	r.get(p + "/messageid/99999999999999")
	r.get(p + "/messageid/x")
	first := r.get(p + "/subscription/s/position/1").Get("X-Pulsar-Message-ID")
	ledger, _, _ := strings.Cut(first, ":")
	for _, e := range []string{"1", "99", "-1"} {
		r.getAs(p+"/ledger/"+ledger+"/entry/"+e, p+"/ledger/{first ledger}/entry/"+e)
	}
	// Publish times have millisecond grain: "five" must be stamped in a
	// later millisecond than the batch, or messageid/{its publish time}
	// names the batch on the faster broker and "five" on the slower.
	time.Sleep(2 * time.Millisecond)
	peekProduce(t, client, topic, true)
	r.get(p + "/lastMessageId")
	five := r.get(p + "/examinemessage").Get("X-Pulsar-publish-time")
	at, err := time.Parse(time.RFC3339Nano, five)
	if err != nil {
		t.Fatalf("publish time %q: %v", five, err)
	}
	r.getAs(fmt.Sprintf("%s/messageid/%d", p, at.UnixMilli()), p+"/messageid/{publish time of five}")
	r.getAs(fmt.Sprintf("%s/messageid/%d", p, at.UnixMilli()+1), p+"/messageid/{publish time of five + 1 ms}")

	// An empty topic, a partitioned one, and one that does not exist.
	empty := topicPath(tg.Topic("peek-empty"))
	r.do("PUT", empty, "")
	parts := topicPath(tg.Topic("peek-parts"))
	r.do("PUT", parts+"/partitions", "2")
	var lastEmpty struct{ LedgerID int64 }
	if h := r.get(empty + "/lastMessageId"); h == nil {
		t.Fatal("no answer")
	}
	_ = json.Unmarshal([]byte(r.lastBody), &lastEmpty)
	r.getAs(fmt.Sprintf("%s/ledger/%d/entry/0", empty, lastEmpty.LedgerID), empty+"/ledger/{its ledger}/entry/0")
	none := topicPath(tg.Topic("peek-none"))
	for _, tp := range []string{empty, parts, none} {
		for _, q := range []string{"/subscription/s/position/1", "/examinemessage", "/lastMessageId", "/messageid/0", "/ledger/1/entry/0"} {
			r.get(tp + q)
		}
	}
	return r.notes
}

func TestDifferentialPeekExamineAndMessageIDs(t *testing.T) {
	sameStoryOnBoth(t, peekStory)
}
