package websocket_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/gorilla/websocket"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The WebSocket API driven by gorilla/websocket, a WebSocket client that is
// not ours, against a broker of the test kit; pulsar-client-go beside it.

// wsMessage is a pushed message as a client reads it.
type wsMessage struct {
	MessageID       string            `json:"messageId"`
	Payload         string            `json:"payload"`
	Properties      map[string]string `json:"properties"`
	PublishTime     string            `json:"publishTime"`
	RedeliveryCount int               `json:"redeliveryCount"`
	EventTime       string            `json:"eventTime"`
	Key             string            `json:"key"`
}

func (m wsMessage) text(t *testing.T) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(m.Payload)
	if err != nil {
		t.Fatalf("payload %q: %v", m.Payload, err)
	}
	return string(b)
}

// dialWS opens a WebSocket, failing the test when the handshake fails.
func dialWS(ctx context.Context, t *testing.T, url string, header http.Header) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.DialContext(ctx, url, header)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial %s: %v (%s)", url, err, status)
	}
	t.Cleanup(func() { c.Close() })
	if dl, ok := ctx.Deadline(); ok {
		c.SetReadDeadline(dl)
	}
	return c
}

func writeJSON(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	if err := c.WriteJSON(v); err != nil {
		t.Fatalf("write %v: %v", v, err)
	}
}

func readJSON[T any](t *testing.T, c *websocket.Conn) T {
	t.Helper()
	var v T
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("frame %s: %v", data, err)
	}
	return v
}

// produceWS sends payloads through a WebSocket producer and returns the
// message ids it answers.
func produceWS(ctx context.Context, t *testing.T, base, topic string, payloads ...string) []string {
	t.Helper()
	p := dialWS(ctx, t, base+"/ws/v2/producer/persistent/public/default/"+topic, nil)
	var ids []string
	for i, s := range payloads {
		writeJSON(t, p, map[string]any{"payload": base64.StdEncoding.EncodeToString([]byte(s)),
			"properties": map[string]string{"n": fmt.Sprint(i)}, "key": "k-" + s, "context": fmt.Sprint(i)})
		ack := readJSON[map[string]any](t, p)
		if ack["result"] != "ok" || ack["context"] != fmt.Sprint(i) {
			t.Fatalf("send %q answered %v", s, ack)
		}
		ids = append(ids, ack["messageId"].(string))
	}
	return ids
}

func TestWebSocketConsumerAcksNacksTimesOutAndDeadLetters(t *testing.T) {
	b := testkit.Start(t, testkit.WithInvariants())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic, sub = "ws-settle", "workers"
	full := "persistent://public/default/" + topic
	dlq := full + "-dlq"
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/"+topic+"/"+sub+
		"?subscriptionType=Shared&negativeAckRedeliveryDelay=0&ackTimeoutMillis=1000&maxRedeliverCount=2&deadLetterTopic="+dlq, nil)
	ids := produceWS(ctx, t, b.WebSocketURL(), topic, "ack", "nack", "timeout", "poison")

	// What the handler does with each delivery, by payload and count: ack
	// at once; nack once then ack; leave unanswered once then ack; nack
	// always (the dead-letter policy moves it aside after count 2).
	counts := map[string][]int{}
	for range 1 + 2 + 2 + 3 {
		m := readJSON[wsMessage](t, c)
		s := m.text(t)
		counts[s] = append(counts[s], m.RedeliveryCount)
		n := len(counts[s])
		switch {
		case s == "ack", s == "nack" && n == 2, s == "timeout" && n == 2:
			writeJSON(t, c, map[string]string{"messageId": m.MessageID})
		case s == "nack", s == "poison":
			writeJSON(t, c, map[string]string{"type": "negativeAcknowledge", "messageId": m.MessageID})
		}
		if m.Properties["n"] == "" || m.Key != "k-"+s {
			t.Errorf("message %q lost its properties or key: %+v", s, m)
		}
	}
	want := map[string][]int{"ack": {0}, "nack": {0, 1}, "timeout": {0, 1}, "poison": {0, 1, 2}}
	for s, w := range want {
		if fmt.Sprint(counts[s]) != fmt.Sprint(w) {
			t.Errorf("%q delivered with counts %v, want %v", s, counts[s], w)
		}
	}
	dead := b.WaitMessages(ctx, dlq, 1)
	if string(dead[0].Payload) != "poison" || dead[0].Properties["REAL_TOPIC"] != full ||
		dead[0].Properties["REAL_SUBSCRIPTION"] != sub || dead[0].Properties["ORIGIN_MESSAGE_ID"] == "" ||
		dead[0].Key != "k-poison" {
		t.Errorf("dead letter %+v", dead[0])
	}
	b.WaitBacklog(ctx, topic, sub, 0)
	if ids[0] == ids[1] {
		t.Errorf("two messages answered with one id %q", ids[0])
	}
}

func TestWebSocketNackRedeliversToAGoConsumerOfTheSameSubscription(t *testing.T) {
	b := testkit.Start(t, testkit.WithInvariants())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic, sub = "ws-mixed", "mixed"
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/"+topic+"/"+sub+
		"?subscriptionType=Shared&negativeAckRedeliveryDelay=0&receiverQueueSize=1", nil)
	produceWS(ctx, t, b.WebSocketURL(), topic, "job")
	first := readJSON[wsMessage](t, c)
	if first.text(t) != "job" || first.RedeliveryCount != 0 {
		t.Fatalf("first delivery %+v", first)
	}

	// A Go consumer joins the subscription; the WebSocket consumer nacks
	// the message whenever it gets it, the Go consumer acks it: it reaches
	// the Go consumer with the count of the deliveries before.
	goConsumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer goConsumer.Close()
	wsDeliveries := 1
	writeJSON(t, c, map[string]string{"type": "negativeAcknowledge", "messageId": first.MessageID})
	got := make(chan pulsar.Message, 1)
	go func() {
		if m, err := goConsumer.Receive(ctx); err == nil {
			got <- m
		}
	}()
	frames := make(chan wsMessage)
	go func() {
		for {
			var m wsMessage
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			frames <- m
		}
	}()
	for {
		select {
		case m := <-frames:
			if m.RedeliveryCount != wsDeliveries {
				t.Fatalf("WebSocket delivery %d has count %d", wsDeliveries+1, m.RedeliveryCount)
			}
			wsDeliveries++
			writeJSON(t, c, map[string]string{"type": "negativeAcknowledge", "messageId": m.MessageID})
			continue
		case m := <-got:
			if string(m.Payload()) != "job" || int(m.RedeliveryCount()) != wsDeliveries {
				t.Fatalf("Go consumer got %q with count %d after %d WebSocket deliveries",
					m.Payload(), m.RedeliveryCount(), wsDeliveries)
			}
			if err := goConsumer.Ack(m); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("the Go consumer never got the nacked message")
		}
		break
	}
	b.WaitBacklog(ctx, topic, sub, 0)
}

func TestWebSocketProducerMessagesReachAGoConsumer(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "ws-to-go", SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	p := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/producer/persistent/public/default/ws-to-go?producerName=wsp", nil)
	writeJSON(t, p, map[string]any{"payload": base64.StdEncoding.EncodeToString([]byte("hello")),
		"properties": map[string]string{"a": "1"}, "key": "k", "eventTime": "2024-01-02T03:04:05.120Z", "context": "c1"})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
		t.Fatalf("answer %v", ack)
	}
	m, err := consumer.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "hello" || m.Properties()["a"] != "1" || m.Key() != "k" ||
		m.EventTime().UnixMilli() != time.Date(2024, 1, 2, 3, 4, 5, 120e6, time.UTC).UnixMilli() || m.ProducerName() != "wsp" {
		t.Errorf("Go consumer got %q %v key %q event %v producer %q", m.Payload(), m.Properties(), m.Key(), m.EventTime(), m.ProducerName())
	}
}

func TestWebSocketPullModeSendsOnlyPermittedMessages(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/ws-pull/s?pullMode=true", nil)
	produceWS(ctx, t, b.WebSocketURL(), "ws-pull", "a", "b", "c")
	writeJSON(t, c, map[string]any{"type": "permit", "permitMessages": 2})
	for _, want := range []string{"a", "b"} {
		m := readJSON[wsMessage](t, c)
		if m.text(t) != want {
			t.Fatalf("got %q, want %q", m.text(t), want)
		}
		writeJSON(t, c, map[string]string{"messageId": m.MessageID})
	}
	// Acks give no permits in pull mode: the third waits for one. The
	// question below is answered first.
	writeJSON(t, c, map[string]string{"type": "isEndOfTopic"})
	if r := readJSON[map[string]any](t, c); r["endOfTopic"] != false {
		t.Fatalf("isEndOfTopic answered %v", r)
	}
	writeJSON(t, c, map[string]any{"type": "permit", "permitMessages": 1})
	if m := readJSON[wsMessage](t, c); m.text(t) != "c" {
		t.Fatalf("got %q after the third permit", m.text(t))
	}
}

func TestWebSocketReaderReadsFromEarliestAndSeesTheEndOfATerminatedTopic(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := produceWS(ctx, t, b.WebSocketURL(), "ws-read", "one", "two")
	b.TerminateTopic("ws-read")
	r := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/reader/persistent/public/default/ws-read?messageId=earliest", nil)
	for i, want := range []string{"one", "two"} {
		m := readJSON[wsMessage](t, r)
		if m.text(t) != want || m.MessageID != ids[i] {
			t.Fatalf("read %q %s, want %q %s", m.text(t), m.MessageID, want, ids[i])
		}
		writeJSON(t, r, map[string]string{"messageId": m.MessageID})
	}
	b.WaitFor(ctx, "the reader at the end", func() bool {
		writeJSON(t, r, map[string]string{"type": "isEndOfTopic"})
		return readJSON[map[string]any](t, r)["endOfTopic"] == true
	})
	// A reader from a message id starts after it.
	r2 := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/reader/persistent/public/default/ws-read?messageId="+
		strings.ReplaceAll(ids[0], "+", "%2B"), nil)
	if m := readJSON[wsMessage](t, r2); m.text(t) != "two" {
		t.Fatalf("reader from the first id read %q", m.text(t))
	}
}

func TestWebSocketDeliverAtWaitsForTheBrokerClock(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/ws-delayed/s?subscriptionType=Shared", nil)
	p := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/producer/persistent/public/default/ws-delayed", nil)
	at := b.Clock().Now().Add(time.Hour)
	writeJSON(t, p, map[string]any{"payload": base64.StdEncoding.EncodeToString([]byte("later")), "deliverAt": at.UnixMilli()})
	writeJSON(t, p, map[string]any{"payload": base64.StdEncoding.EncodeToString([]byte("now"))})
	for range 2 {
		if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
			t.Fatalf("answer %v", ack)
		}
	}
	if m := readJSON[wsMessage](t, c); m.text(t) != "now" {
		t.Fatalf("first pushed %q, want the undelayed one", m.text(t))
	}
	if got := b.Messages("ws-delayed"); len(got) != 2 || got[0].DeliverAt.UnixMilli() != at.UnixMilli() {
		t.Fatalf("stored %+v", got)
	}
	b.Advance(2 * time.Hour)
	if m := readJSON[wsMessage](t, c); m.text(t) != "later" {
		t.Fatalf("after the broker clock passed deliverAt, pushed %q", m.text(t))
	}
}

func TestWebSocketConsumerOutlivesATopicUnload(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/ws-unload/s", nil)
	b.Publish("ws-unload", broker.ProducerMessage{Payload: []byte("before")})
	if m := readJSON[wsMessage](t, c); m.text(t) != "before" {
		t.Fatalf("pushed %q", m.text(t))
	} else {
		writeJSON(t, c, map[string]string{"messageId": m.MessageID})
	}
	b.UnloadTopic("ws-unload")
	// The internal consumer subscribes again; the WebSocket session never
	// notices. (A producer's reconnection is left out: pulsar-client-go
	// v0.19.0 writes the producer's fields while sends may read them, and
	// the race detector reports it.)
	b.Publish("ws-unload", broker.ProducerMessage{Payload: []byte("after")})
	if m := readJSON[wsMessage](t, c); m.text(t) != "after" {
		t.Fatalf("pushed %q after the unload", m.text(t))
	}
}
