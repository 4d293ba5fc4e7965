package admin_test

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
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/broker"
)

// send makes one request with a JSON body (none when body is ""), as
// pulsar-admin sends it, and returns the status and the answer's body.
func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// mustSend is send, failing the test unless the status is want.
func mustSend(t *testing.T, want int, method, url, body string) string {
	t.Helper()
	status, out := send(t, method, url, body)
	if status != want {
		t.Fatalf("%s %s: status %d (%s), want %d", method, url, status, out, want)
	}
	return out
}

// firstPayloads subscribes to sub (which exists) and returns the payloads of
// the first n messages it receives, acknowledging none.
func firstPayloads(t *testing.T, c pulsar.Client, topic, sub string, n int) []string {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("%s: after %v: %v", sub, got, err)
		}
		got = append(got, string(m.Payload()))
	}
	return got
}

func TestExpiryUpToAPositionAndTruncationDecideWhatConsumersReceive(t *testing.T) {
	b, url := serveAdmin(t)
	c := newClient(t, b)
	const topic = "persistent://public/default/maintained"
	base := url + "/admin/v2/persistent/public/default/maintained"
	for _, sub := range []string{"a", "b", "c"} {
		mustSend(t, http.StatusNoContent, "PUT", base+"/subscription/"+sub, `{"ledgerId":-1,"entryId":-1}`)
	}
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	publish := func(payload string) {
		t.Helper()
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		publish(fmt.Sprintf("m%d", i))
	}
	ledger := ledgerOf(t, b, topic)
	at := func(entry int64, excluded bool) string {
		return fmt.Sprintf(`{"ledgerId":%d,"entryId":%d,"partitionIndex":-1,"batchIndex":-1,"excluded":%t}`, ledger, entry, excluded)
	}

	// The backlog from a position, before anything moves.
	var analysis map[string]any
	out := mustSend(t, http.StatusOK, "POST", base+"/subscription/c/analyzeBacklog", at(3, false))
	if err := json.Unmarshal([]byte(out), &analysis); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"entries": 2.0, "messages": 2.0, "filterAcceptedEntries": 2.0, "filterAcceptedMessages": 2.0,
		"filterRejectedEntries": 0.0, "filterRejectedMessages": 0.0, "filterRescheduledEntries": 0.0,
		"filterRescheduledMessages": 0.0, "aborted": false,
		"firstMessageId": fmt.Sprintf("%d:3", ledger), "lastMessageId": fmt.Sprintf("%d:4", ledger)}
	if !cmp.Equal(analysis, want) {
		t.Errorf("analyzeBacklog from 3: %s", cmp.Diff(want, analysis))
	}
	total, err := b.BacklogSizeFrom(topic, broker.MessageID{Ledger: -1, Entry: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustSend(t, http.StatusOK, "PUT", base+"/backlogSize", at(2, false)), fmt.Sprint(total-3*(total/5)); got != want {
		t.Errorf("backlogSize after entry 2: %s, want %s (of %d)", got, want, total)
	}

	// Expiry through entry 2; excluded, through the entry after it.
	mustSend(t, http.StatusNoContent, "POST", base+"/subscription/a/expireMessages", at(2, false))
	mustSend(t, http.StatusNoContent, "POST", base+"/subscription/b/expireMessages", at(2, true))
	if status, body := send(t, "POST", base+"/subscription/b/expireMessages", at(9, false)); status != http.StatusConflict ||
		!strings.Contains(body, "invalid message position provided") {
		t.Errorf("expiry past the end: %d %s", status, body)
	}
	if got := firstPayloads(t, c, topic, "a", 2); !cmp.Equal(got, []string{"m3", "m4"}) {
		t.Errorf("a after expiry through 2: %v", got)
	}
	if got := firstPayloads(t, c, topic, "b", 1); !cmp.Equal(got, []string{"m4"}) {
		t.Errorf("b after expiry through 2, excluded: %v", got)
	}

	// Truncation: every cursor at the end; what comes next is all they get.
	mustSend(t, http.StatusNoContent, "DELETE", base+"/truncate", "")
	publish("after")
	for _, sub := range []string{"a", "b", "c"} {
		if got := firstPayloads(t, c, topic, sub, 1); !cmp.Equal(got, []string{"after"}) {
			t.Errorf("%s after truncation: %v", sub, got)
		}
	}
	// The reset that pulsar-admin sends with -e starts after the position.
	mustSend(t, http.StatusNoContent, "POST", base+"/subscription/c/resetcursor", at(2, true))
	if got := firstPayloads(t, c, topic, "c", 3); !cmp.Equal(got, []string{"m3", "m4", "after"}) {
		t.Errorf("c after reset to 2, excluded: %v", got)
	}
}

func TestPartitionedTerminateEndsEveryPartitionForProducers(t *testing.T) {
	b, url := serveAdmin(t)
	c := newClient(t, b)
	const topic = "persistent://public/default/ending"
	base := url + "/admin/v2/persistent/public/default/ending"
	mustSend(t, http.StatusNoContent, "PUT", base+"/partitions", "2")
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	var ids map[string]map[string]int64
	if err := json.Unmarshal([]byte(mustSend(t, http.StatusOK, "POST", base+"/terminate/partitions", "")), &ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids["0"] == nil || ids["1"] == nil {
		t.Fatalf("terminated partitions: %v", ids)
	}
	if got := ids["0"]["entryId"] + ids["1"]["entryId"]; got != -1 {
		t.Errorf("last entries %v: one partition holds the message, the other none", ids)
	}
	// A producer made after the termination is refused on every partition.
	late, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err == nil {
		late.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "TopicTerminated") {
		t.Errorf("producer after partitioned-terminate: %v, want a terminated topic", err)
	}
	if status, body := send(t, "POST", url+"/admin/v2/persistent/public/default/plainend/terminate/partitions", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("non-partitioned: %d %s", status, body)
	}
}
