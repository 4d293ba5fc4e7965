package scenarios_test

import (
	"context"
	"errors"
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

// Publish and dispatch rate limits as a client sees them, compared with a
// real Pulsar. Only what does not depend on how fast either broker runs is
// compared: a dispatch limit of N messages per period (a long one) delivers
// exactly N to a consumer that subscribes after the messages are in, the
// topic's limit being shared by its subscriptions and each subscription's
// its own, topic level over namespace level, one subscription's own limit
// over the topic's subscription limit; a SEND that leaves the
// publish buckets owing for seconds is accepted, and its connection's next
// SEND, of any producer on it, is not read within a 1 s send timeout, while
// another connection's first SEND is accepted all the same.

// rateAdmin is the admin API of one broker in a rate scenario.
type rateAdmin struct {
	t    *testing.T
	base string
	// suffix is the unique part of the run's names (empty on pulsarsim),
	// left out of the notes.
	suffix string
	note   func(format string, args ...any)
}

// do sends one request and returns its status and body.
func (a rateAdmin) do(method, path, body string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// set POSTs a policy, notes the answer, and waits until a GET serves it
// (the real broker applies topic policies in the background), noting what
// the GET answers.
func (a rateAdmin) set(path, body string) {
	a.t.Helper()
	status, _ := a.do("POST", path, body)
	a.note("POST %s: %d", a.shortPath(path), status)
	var got string
	eventually(func() bool {
		status, got = a.do("GET", path, "")
		return status == http.StatusOK && strings.TrimSpace(got) != ""
	})
	a.note("GET %s: %s", a.shortPath(path), canonicalJSON(a.t, []byte(got), false))
}

// get notes a GET's status and body.
func (a rateAdmin) get(path string) {
	a.t.Helper()
	status, body := a.do("GET", path, "")
	a.note("GET %s: %d %s", a.shortPath(path), status, canonicalJSON(a.t, []byte(body), false))
}

// shortPath drops the run's unique suffix from a path.
func (a rateAdmin) shortPath(path string) string {
	if a.suffix == "" {
		return path
	}
	return strings.ReplaceAll(path, a.suffix, "")
}

// topicPath is a topic's admin path.
func topicPath(topic string) string {
	return "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
}

// received counts the messages a new consumer of sub gets, from the
// earliest, until none comes for quiet.
func received(t *testing.T, client pulsar.Client, topic, sub string, typ pulsar.SubscriptionType) int {
	t.Helper()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: typ,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		_, err := c.Receive(ctx)
		cancel()
		if err != nil {
			return n
		}
		n++
	}
}

// dispatchRateStory runs the dispatch rate scenario in namespace ns.
func dispatchRateStory(t *testing.T, tg *scenarios.Target, a rateAdmin, client pulsar.Client, ns string) {
	nsPath := "/admin/v2/namespaces/" + ns
	// A topic's limit is shared by its subscriptions; a subscription's is
	// its own; both from the namespace.
	a.set(nsPath+"/dispatchRate", `{"dispatchThrottlingRateInMsg":5,"dispatchThrottlingRateInByte":-1,"ratePeriodInSecond":60}`)
	a.set(nsPath+"/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":3,"ratePeriodInSecond":60}`)
	byNs := "persistent://" + ns + "/by-namespace"
	tg.Produce(byNs, 20, nil)
	a.get(topicPath(byNs) + "/dispatchRate?applied=true")
	a.note("first subscription (Shared), first period: %d", received(t, client, byNs, "a", pulsar.Shared))
	a.note("second subscription (Exclusive), first period: %d", received(t, client, byNs, "b", pulsar.Exclusive))

	// The topic's own limits come before the namespace's.
	byTopic := "persistent://" + ns + "/by-topic"
	status, _ := a.do("PUT", topicPath(byTopic), "")
	a.note("create %s: %d", "by-topic", status)
	a.set(topicPath(byTopic)+"/dispatchRate", `{"dispatchThrottlingRateInMsg":4,"ratePeriodInSecond":60}`)
	a.set(topicPath(byTopic)+"/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":10,"ratePeriodInSecond":60}`)
	tg.Produce(byTopic, 20, nil)
	a.get(topicPath(byTopic) + "/dispatchRate?applied=true")
	a.note("first subscription (Key_Shared), first period: %d", received(t, client, byTopic, "a", pulsar.KeyShared))
	a.note("second subscription (Failover), first period: %d", received(t, client, byTopic, "b", pulsar.Failover))

	// A subscription's own limit comes before the topic's subscription
	// limit, for that subscription only.
	bySub := "persistent://" + ns + "/by-subscription"
	status, _ = a.do("PUT", topicPath(bySub), "")
	a.note("create %s: %d", "by-subscription", status)
	a.set(topicPath(bySub)+"/dispatchRate", `{"dispatchThrottlingRateInMsg":100,"ratePeriodInSecond":60}`)
	a.set(topicPath(bySub)+"/subscriptionDispatchRate", `{"dispatchThrottlingRateInMsg":4,"ratePeriodInSecond":60}`)
	a.set(topicPath(bySub)+"/c/dispatchRate", `{"dispatchThrottlingRateInMsg":2,"ratePeriodInSecond":60}`)
	tg.Produce(bySub, 20, nil)
	a.get(topicPath(bySub) + "/d/dispatchRate?applied=true")
	a.note("subscription with its own limit (Shared), first period: %d", received(t, client, bySub, "c", pulsar.Shared))
	a.note("subscription without (Shared), first period: %d", received(t, client, bySub, "d", pulsar.Shared))
}

// sendOutcome describes the outcome of one synchronous send.
func sendOutcome(ctx context.Context, p pulsar.Producer, payload []byte) string {
	_, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payload})
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, pulsar.ErrSendTimeout):
		return "send timeout"
	}
	return "error " + err.Error()
}

// publishRateStory runs the publish rate scenario in namespace ns.
func publishRateStory(t *testing.T, tg *scenarios.Target, a rateAdmin, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newClient := func() pulsar.Client {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: tg.URL, OperationTimeout: 2 * time.Second,
			Logger: log.DefaultNopLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	producer := func(c pulsar.Client, topic string, batch bool) pulsar.Producer {
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: !batch,
			SendTimeout: time.Second, BatchingMaxMessages: 50, BatchingMaxPublishDelay: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 1,000 bytes a second, and a SEND of 10 KiB: owing for about 9 s.
	bytes := "persistent://" + ns + "/publish-bytes"
	status, _ := a.do("PUT", topicPath(bytes), "")
	a.note("create publish-bytes: %d", status)
	a.set(topicPath(bytes)+"/publishRate", `{"publishThrottlingRateInMsg":-1,"publishThrottlingRateInByte":1000}`)
	first := newClient()
	p := producer(first, bytes, false)
	a.note("10 KiB: %s", sendOutcome(ctx, p, make([]byte, 10240)))
	a.note("then 1 byte on the same connection: %s", sendOutcome(ctx, p, []byte{1}))
	q := producer(newClient(), bytes, false)
	a.note("1 byte from another connection: %s", sendOutcome(ctx, q, []byte{2}))
	a.note("then 1 byte more there: %s", sendOutcome(ctx, q, []byte{3}))

	// 10 messages a second from the namespace, and a batch of 50: the
	// connection stops for every producer on it.
	a.set("/admin/v2/namespaces/"+ns+"/publishRate", `{"publishThrottlingRateInMsg":10,"publishThrottlingRateInByte":-1}`)
	msgs := "persistent://" + ns + "/publish-messages"
	c := newClient()
	b := producer(c, msgs, true)
	other := producer(c, "persistent://"+ns+"/publish-other", false)
	a.note("a message to another topic: %s", sendOutcome(ctx, other, []byte{4}))
	done := make(chan error, 50)
	for i := range 50 {
		b.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte{byte(i)}},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := b.FlushWithCtx(ctx); err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for range 50 {
		if err := <-done; err == nil {
			accepted++
		}
	}
	a.note("a batch of 50 messages: %d accepted", accepted)
	a.note("then a message to that topic on the same connection: %s", sendOutcome(ctx, other, []byte{5}))
}

// rateStory runs both scenarios against a broker and describes what the
// client and the admin API show.
func rateStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	var out []string
	a := rateAdmin{t: t, base: admin, note: func(format string, args ...any) {
		out = append(out, fmt.Sprintf(format, args...))
	}}
	a.suffix = strings.TrimPrefix(tg.Topic(""), "persistent://public/default/")
	ns := "public/rates" + a.suffix
	status, _ := a.do("PUT", "/admin/v2/namespaces/"+ns, "")
	a.note("create the namespace: %d", status)
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: tg.URL, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	dispatchRateStory(t, tg, a, client, ns)
	publishRateStory(t, tg, a, ns)
	return out
}

// TestDifferentialRateLimits runs the rate scenarios on both brokers.
func TestDifferentialRateLimits(t *testing.T) {
	sameStoryOnBoth(t, rateStory)
}
