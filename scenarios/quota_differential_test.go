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
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Backlog quotas as a client sees them, compared with a real Pulsar: a new
// producer on a topic over its size quota is refused with the policy's
// error, the check (triggered through the admin API, as the periodic one
// would run) disconnects the producers a producer policy holds, and the
// eviction policy moves the slowest subscription forward by Pulsar's
// arithmetic; an age quota sees no age in a topic whose first ledger (block)
// is still open.

// adminDo sends one admin request and returns its status.
func adminDo(t *testing.T, base, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// topicStats reads a topic's stats.
// applied waits until the broker reports policy among topic's applied
// backlog quotas. Pulsar answers a quota's POST before the topic has it
// (topic policies travel through a system topic), so a producer or a check
// that comes at once can still meet the old policy.
func applied(t *testing.T, base, topicPath, policy string) bool {
	return eventually(func() bool {
		return strings.Contains(adminGet(t, base, topicPath+"/backlogQuotaMap?applied=true"), `"`+policy+`"`)
	})
}

// adminGet answers the body of a GET, or "" when it fails.
func adminGet(t *testing.T, base, path string) string {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(body)
}

func topicStats(t *testing.T, base, topic string) (publishers int, backlog map[string]int64) {
	t.Helper()
	resp, err := http.Get(base + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Publishers    []json.RawMessage
		Subscriptions map[string]struct{ MsgBacklog int64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("stats of %s: %d %v", topic, resp.StatusCode, err)
	}
	backlog = map[string]int64{}
	for name, s := range st.Subscriptions {
		backlog[name] = s.MsgBacklog
	}
	return len(st.Publishers), backlog
}

// eventually polls cond for a while: the real broker applies a triggered
// check in the background.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// quotaStory runs the scenario against a broker and describes what the
// client and the stats show.
func quotaStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: tg.URL, OperationTimeout: 3 * time.Second,
		Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	path := func(topic string) string { return "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") }

	// Producer policies: refused when over, disconnected by the check.
	held := tg.Topic("quota-held")
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: held, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	noRetry := uint(0)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: held, DisableBatching: true, Name: "quota-p",
		MaxReconnectToBroker: &noRetry})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	note("set quota: %d", adminDo(t, admin, "POST", path(held)+"/backlogQuota",
		`{"limitSize":1024,"limitTime":-1,"policy":"producer_exception"}`))
	note("applied: %v", applied(t, admin, path(held), "producer_exception"))
	for range 2 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: make([]byte, 1024)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: held})
	note("a new producer: %v", err)
	note("set request hold: %d", adminDo(t, admin, "POST", path(held)+"/backlogQuota",
		`{"limitSize":1024,"limitTime":-1,"policy":"producer_request_hold"}`))
	note("applied: %v", applied(t, admin, path(held), "producer_request_hold"))
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: held})
	note("a new producer: %v", err)
	note("check: %d", adminDo(t, admin, "GET", "/admin/v2/brokers/backlog-quota-check", ""))
	gone := eventually(func() bool { n, _ := topicStats(t, admin, held); return n == 0 })
	note("the producer disconnected by the check: %v", gone)

	// Eviction: the slowest subscription skips a share of its backlog.
	evict := tg.Topic("quota-evict")
	slow, err := client.Subscribe(pulsar.ConsumerOptions{Topic: evict, SubscriptionName: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	ep, err := client.CreateProducer(pulsar.ProducerOptions{Topic: evict, DisableBatching: true, Name: "quota-e"})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := ep.Send(ctx, &pulsar.ProducerMessage{Payload: make([]byte, 1024)}); err != nil {
			t.Fatal(err)
		}
	}
	ep.Close()
	note("set eviction: %d", adminDo(t, admin, "POST", path(evict)+"/backlogQuota",
		`{"limitSize":5120,"limitTime":-1,"policy":"consumer_backlog_eviction"}`))
	note("applied: %v", applied(t, admin, path(evict), "consumer_backlog_eviction"))
	note("check: %d", adminDo(t, admin, "GET", "/admin/v2/brokers/backlog-quota-check", ""))
	var backlog map[string]int64
	eventually(func() bool { _, backlog = topicStats(t, admin, evict); return backlog["slow"] < 10 })
	note("slow's backlog after the check: %d", backlog["slow"])

	// An age quota on a topic whose first ledger is open sees no age.
	aged := tg.Topic("quota-aged")
	ac, err := client.Subscribe(pulsar.ConsumerOptions{Topic: aged, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	tg.Produce(aged, 1, nil)
	note("set age quota: %d", adminDo(t, admin, "POST", path(aged)+"/backlogQuota?backlogQuotaType=message_age",
		`{"limitSize":-1,"limitTime":1,"policy":"producer_exception"}`))
	time.Sleep(2 * time.Second) // the age quota's 1 s, on both brokers' clocks
	ap, err := client.CreateProducer(pulsar.ProducerOptions{Topic: aged})
	note("a new producer on a topic with an old message: %v", err)
	if ap != nil {
		ap.Close()
	}
	return out
}

// TestDifferentialBacklogQuotas runs the quota scenario on both brokers.
func TestDifferentialBacklogQuotas(t *testing.T) {
	sameStoryOnBoth(t, quotaStory)
}
