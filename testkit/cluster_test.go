package testkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// What pulsar-client-go's own suite checks by stopping and starting a
// Docker broker, checked here with a pulsarsim broker started again on the
// same address (a cluster of one keeps its store across the restart).

func TestAProducerOrConsumerReconnectingToAStoppedBrokerClosesCleanly(t *testing.T) {
	for _, kind := range []string{"producer", "consumer"} {
		t.Run(kind, func(t *testing.T) {
			c := testkit.StartCluster(t, 1)
			client := c.Client(shortTimeouts)
			var closeIt func()
			if kind == "producer" {
				p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "reconnecting"})
				if err != nil {
					t.Fatal(err)
				}
				closeIt = p.Close
			} else {
				cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "reconnecting", SubscriptionName: "s"})
				if err != nil {
					t.Fatal(err)
				}
				closeIt = cons.Close
			}
			c.Crash(0)
			done := make(chan struct{})
			go func() { closeIt(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("Close of a %s that keeps reconnecting did not return", kind)
			}
		})
	}
}

func TestASendTimesOutWhileItsBrokerIsDown(t *testing.T) {
	c := testkit.StartCluster(t, 1)
	p, err := c.Client().CreateProducer(pulsar.ProducerOptions{Topic: "timing-out", SendTimeout: 200 * time.Millisecond,
		DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c.Crash(0)
	errc := make(chan error, 1)
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("lost")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errc <- err })
	select {
	case err := <-errc:
		if !errors.Is(err, pulsar.ErrSendTimeout) {
			t.Errorf("send while the broker is down: %v, want a send timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the send's callback never came")
	}
}

func TestAWaitingConsumerGetsWhatIsSentAfterItsBrokerRestarts(t *testing.T) {
	c := testkit.StartCluster(t, 1)
	client := c.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: "restarting", SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan pulsar.Message, 1)
	go func() {
		if m, err := cons.Receive(ctx); err == nil {
			got <- m
		}
		close(got)
	}()
	c.Restart(0)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "restarting"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	m, ok := <-got
	if !ok || string(m.Payload()) != "after" {
		t.Fatalf("the waiting consumer got %v (ok %v), want \"after\"", m, ok)
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
}

func TestAZeroQueueConsumerAsksForEachMessageAgainAfterItsTopicIsUnloaded(t *testing.T) {
	c := testkit.StartCluster(t, 1)
	client := c.Client()
	const topic = "persistent://public/default/zero-queue"
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		EnableZeroQueueConsumer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i)), Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	c.Broker(0).UnloadTopic(topic)
	for i := range 10 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprint(i) || m.Key() != "k" {
			t.Fatalf("message %d: %q key %q", i, m.Payload(), m.Key())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// One more, which the consumer does not ask for: the broker must not
	// push it, so nothing is unacknowledged.
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("10")}); err != nil {
		t.Fatal(err)
	}
	s := waitSubscription(t, c.Broker(0), topic, "s", func(s broker.SubscriptionSnapshot) bool { return s.Backlog == 1 })
	for _, cs := range s.Consumers {
		if cs.Unacked != 0 {
			t.Errorf("consumer %s holds %d unacknowledged messages it never asked for", cs.Name, cs.Unacked)
		}
	}
}

func TestAClusterMovesATopicWithItsProducerAndConsumer(t *testing.T) {
	c := testkit.StartCluster(t, 3)
	const topic = "persistent://public/default/moved"
	c.Move(topic, 2)
	client := c.Client()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	if got := c.Owner(topic); got != 2 {
		t.Fatalf("owner %d, want 2", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	c.Move(topic, 0)
	waitSubscription(t, c.Broker(0), topic, "s", func(s broker.SubscriptionSnapshot) bool { return len(s.Consumers) == 1 })
	waitProducer(t, c.Broker(0), topic)
	if raceDetector { // see race_on_test.go
		p.Close()
		if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	// "before" may come twice: the client may hold it when its consumer
	// moves, and the new owner delivers it again as unacknowledged.
	seen := map[string]int{}
	for seen["after"] == 0 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(m.Payload())]++
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	if seen["before"] == 0 || len(seen) != 2 {
		t.Errorf("received %v, want \"before\" and \"after\"", seen)
	}
	if got := c.Messages(topic); len(got) != 2 {
		t.Errorf("the store holds %d messages, want 2", len(got))
	}
	if err := c.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

func TestAMultiHostURLWhoseFirstHostIsDownStillServes(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	c.Stop(0)
	client := c.Client() // the URL names broker 0 first
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "first-host-down"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := c.Owner("first-host-down"); got != 1 {
		t.Errorf("owner %d, want 1 (broker 0 is stopped)", got)
	}
}

// shortTimeouts sets the client's connection and operation timeouts to 5 s,
// as pulsar-client-go's own reconnection tests do: a Close waits that long
// for a broker that does not answer.
func shortTimeouts(o *pulsar.ClientOptions) {
	o.ConnectionTimeout, o.OperationTimeout = 5*time.Second, 5*time.Second
}

// waitSubscription waits until the subscription, as broker b shows it,
// satisfies cond, and returns it.
func waitSubscription(t *testing.T, b *testkit.Broker, topic, sub string, cond func(broker.SubscriptionSnapshot) bool) broker.SubscriptionSnapshot {
	t.Helper()
	var s broker.SubscriptionSnapshot
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.WaitFor(ctx, "subscription "+sub+" of "+topic, func() bool {
		var ok bool
		s, ok = b.Subscription(topic, sub)
		return ok && cond(s)
	})
	return s
}

// waitProducer waits until broker b has a producer on topic.
func waitProducer(t *testing.T, b *testkit.Broker, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.WaitFor(ctx, "a producer on "+topic, func() bool {
		ts, ok := b.Topic(topic)
		return ok && len(ts.Producers) > 0
	})
}

func TestClusterAdminCallsLookupsAndBundleUnloadsReachTheOwner(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/owned-by-one"
	c.Move(topic, 1)
	client := c.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	admins := c.AdminURLs()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// A topic's admin call on the other broker is sent to the owner.
	resp, err := noFollow.Get(admins[0] + "/admin/v2/persistent/public/default/owned-by-one/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect ||
		!strings.HasPrefix(loc, admins[1]+"/admin/v2/persistent/public/default/owned-by-one/stats?authoritative=") {
		t.Errorf("stats on broker 0: %s, Location %q; want 307 to broker 1", resp.Status, loc)
	}
	var stats struct {
		Publishers []struct{ ProducerName string }
	}
	getJSON(t, admins[0]+"/admin/v2/persistent/public/default/owned-by-one/stats", &stats)
	if len(stats.Publishers) != 1 {
		t.Errorf("stats followed to the owner: %+v, want the one producer", stats)
	}

	// The HTTP lookup answers the owner's URLs from either broker.
	var lookup map[string]string
	getJSON(t, admins[0]+"/lookup/v2/topic/persistent/public/default/owned-by-one", &lookup)
	if lookup["brokerUrl"] != c.Broker(1).URL() || lookup["httpUrl"] != admins[1] {
		t.Errorf("lookup on broker 0: %v, want broker 1 (%s, %s)", lookup, c.Broker(1).URL(), admins[1])
	}
	// Pulsar's LookupData: unset URLs left out, brokerUrlSsl always "".
	if ssl, ok := lookup["brokerUrlSsl"]; !ok || ssl != "" || lookup["nativeUrl"] != lookup["brokerUrl"] {
		t.Errorf("lookup answer %v, want nativeUrl as brokerUrl and brokerUrlSsl \"\"", lookup)
	}
	if _, ok := lookup["httpUrlTls"]; ok {
		t.Errorf("lookup answer %v names an https URL no broker serves", lookup)
	}
	resp, err = http.Get(admins[0] + "/lookup/v2/topic/persistent/public/default/owned-by-one/bundle")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := strings.TrimPrefix(c.Bundle(topic), "public/default/"); string(body) != want {
		t.Errorf("bundle of the topic %q, want %q", body, want)
	}

	// The brokers and their leader.
	var ids []string
	getJSON(t, admins[1]+"/admin/v2/brokers/standalone", &ids)
	if len(ids) != 2 {
		t.Errorf("brokers %v, want both", ids)
	}
	var leader map[string]string
	getJSON(t, admins[1]+"/admin/v2/brokers/leaderBroker", &leader)
	if leader["serviceUrl"] != admins[0] {
		t.Errorf("leader %v, want broker 0 (%s)", leader, admins[0])
	}

	// An unload of the bundle asked of broker 0 is done by its owner, and
	// with broker 0 as its destination the producer moves there.
	id0 := strings.TrimPrefix(admins[0], "http://")
	req, _ := http.NewRequest(http.MethodPut, admins[0]+"/admin/v2/namespaces/"+c.Bundle(topic)+"/unload?destinationBroker="+id0, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("bundle unload: %s, want 204", resp.Status)
	}
	waitProducer(t, c.Broker(0), topic)
	if got := c.Owner(topic); got != 0 {
		t.Errorf("owner after the unload %d, want 0", got)
	}
}

// getJSON GETs u, following redirects, and decodes its JSON answer into v.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func TestAClusterServesItsClientsThroughAProxy(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/proxied"
	c.Move(topic, 1)
	client := c.Client(func(o *pulsar.ClientOptions) { o.URL = c.ProxyURL() })
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("through")}); err != nil {
		t.Fatal(err)
	}
	if m, err := cons.Receive(ctx); err != nil || string(m.Payload()) != "through" {
		t.Fatalf("received %v, %v", m, err)
	} else {
		cons.Ack(m)
	}
	if got := c.Owner(topic); got != 1 {
		t.Errorf("owner %d, want 1", got)
	}
	// The proxy's admin API follows the brokers' redirects itself.
	var stats struct {
		Publishers []struct{ ProducerName string }
	}
	getJSON(t, c.ProxyAdminURL()+"/admin/v2/persistent/public/default/proxied/stats", &stats)
	if len(stats.Publishers) != 1 {
		t.Errorf("stats through the proxy: %+v, want the producer", stats)
	}
	// The topic moves; the clients go on through the proxy.
	c.Move(topic, 0)
	waitProducer(t, c.Broker(0), topic)
	if raceDetector { // see race_on_test.go
		p.Close()
		if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("moved")}); err != nil {
		t.Fatal(err)
	}
	if m, err := cons.Receive(ctx); err != nil || string(m.Payload()) != "moved" {
		t.Fatalf("after the move received %v, %v", m, err)
	}
}
