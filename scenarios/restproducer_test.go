package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// restPost POSTs a REST producer request and returns the status and body.
func restPost(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestRESTProducerMessagesReachAGoConsumerWithTheirMetadataAndSchema(t *testing.T) {
	b := testkit.Start(t)
	b.CreateTopic("rest-orders")
	status, body := restPost(t, b.AdminURL()+"/topics/persistent/public/default/rest-orders", "",
		restBody(map[string]any{"valueSchema": schemaJSON("AVRO", restAvroV2), "producerName": "checkout"},
			map[string]any{"payload": `{"a":1,"s":"first","b":{"string":"gift"}}`, "key": "order-1",
				"properties": map[string]string{"channel": "web"}, "eventTime": "1700000000123"},
			map[string]any{"payload": `{"a":2,"s":"second","b":null}`, "key": "order-2"}))
	if status != http.StatusOK || !strings.Contains(body, `"schemaVersion":0}`) {
		t.Fatalf("POST: %d %s", status, body)
	}
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "rest-orders", SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, Schema: pulsar.NewAvroSchema(restAvroV2, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for range 2 {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var r restRecord
		if err := m.GetSchemaValue(&r); err != nil {
			t.Fatalf("%q does not decode with the topic's schema: %v", m.Payload(), err)
		}
		gift := "-"
		if r.B != nil {
			gift = *r.B
		}
		got = append(got, fmt.Sprintf("%d/%s/%s key=%s props=%v event=%d producer=%s", r.A, r.S, gift, m.Key(),
			m.Properties(), m.EventTime().UnixMilli(), m.ProducerName()))
	}
	want := []string{"1/first/gift key=order-1 props=map[channel:web] event=1700000000123 producer=checkout",
		"2/second/- key=order-2 props=map[] event=0 producer=checkout"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	if got := restStoredSchema(t, b.AdminURL(), "public/default/rest-orders"); !strings.Contains(got, ": 200 v0 AVRO ") {
		t.Fatalf("%s, want the request's AVRO schema as version 0", got)
	}
}

func TestRESTProducerDeliverAtHoldsTheMessageUntilTheBrokerClock(t *testing.T) {
	b := testkit.Start(t)
	b.CreateTopic("rest-later")
	c, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "rest-later", SubscriptionName: "s",
		Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := b.Now().UnixMilli()
	// deliverAt counts only with an event time, as in Pulsar.
	status, body := restPost(t, b.AdminURL()+"/topics/persistent/public/default/rest-later", "",
		restBody(nil, map[string]any{"payload": "later", "eventTime": fmt.Sprint(now), "deliverAt": now + time.Hour.Milliseconds()},
			map[string]any{"payload": "now", "deliverAt": now + time.Hour.Milliseconds()}))
	if status != http.StatusOK {
		t.Fatalf("POST: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil || string(m.Payload()) != "now" {
		t.Fatalf("first delivery: %v, want the message without event time", err)
	}
	c.Ack(m)
	b.WaitBacklog(ctx, "rest-later", "s", 1)
	b.Advance(2 * time.Hour)
	if m, err = c.Receive(ctx); err != nil || string(m.Payload()) != "later" {
		t.Fatalf("after the deliver-at time: %v", err)
	}
}

func TestRESTProducerNeedsProducePermission(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	b.CreateTopic("rest-secured")
	url := b.AdminURL() + "/topics/persistent/public/default/rest-secured"
	msg := restBody(nil, map[string]any{"payload": "x"})
	status, body := restPost(t, url, b.Token("mallory"), msg)
	var refusal struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal([]byte(body), &refusal)
	if status != http.StatusUnauthorized || !strings.HasPrefix(refusal.Reason,
		"Unauthorized to produce to topic persistent://public/default/rest-secured with clientAppId [mallory]") {
		t.Fatalf("without a grant: %d %s", status, body)
	}
	if status, _ := restPost(t, url, "", msg); status != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d, want 401", status)
	}
	b.GrantTopic("rest-secured", "mallory", auth.ActionProduce)
	if status, body := restPost(t, url, b.Token("mallory"), msg); status != http.StatusOK || strings.Contains(body, "errorMsg") {
		t.Fatalf("with produce granted: %d %s", status, body)
	}
	if n := len(b.Messages("rest-secured")); n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
}
