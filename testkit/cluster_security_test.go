package testkit_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// sendAndReceive produces one message to topic and reads it back with a
// consumer of its own, failing the test otherwise.
func sendAndReceive(t *testing.T, client pulsar.Client, topic, sub, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("subscribe to %s: %v", topic, err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("producer on %s: %v", topic, err)
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
		t.Fatalf("send to %s: %v", topic, err)
	}
	for {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %s on %s: %v", payload, topic, err)
		}
		cons.Ack(m)
		if string(m.Payload()) == payload {
			return
		}
	}
}

// Every broker of a cluster started WithTLS serves pulsar+ssl://, and a
// lookup over TLS names the owner's TLS URL: a client holding only the
// cluster's TLS URLs reaches topics on both brokers, across a move and a
// restart of the owner.
func TestAClusterServesTLSOnEveryBroker(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithTLS())
	if u := c.TLSURL(); !strings.HasPrefix(u, "pulsar+ssl://") || strings.Count(u, ",") != 1 {
		t.Fatalf("TLS URL %q, want two pulsar+ssl:// hosts", u)
	}
	client := c.Client(c.TLSClient())
	const topic = "persistent://public/default/tls-cluster"
	for _, to := range []int{1, 0} {
		c.Move(topic, to)
		sendAndReceive(t, client, topic, "s", "on broker "+string(rune('0'+to)))
		if got := c.Owner(topic); got != to {
			t.Fatalf("the topic is on broker %d, want %d", got, to)
		}
	}
	c.Restart(0)
	sendAndReceive(t, client, topic, "s", "after the restart")
}

// A cluster's brokers take the same tokens and share the permissions: a
// role granted on one broker may produce on a topic of the other, and a
// role without a grant is refused on both.
func TestAClusterSharesTokensAndPermissions(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	const on0, on1 = "persistent://public/default/authz-on-0", "persistent://public/default/authz-on-1"
	c.Move(on0, 0)
	c.Move(on1, 1)
	as := func(role string) pulsar.Client {
		return c.Client(func(o *pulsar.ClientOptions) {
			o.Authentication = pulsar.NewAuthenticationToken(c.Token(role))
			o.OperationTimeout = 5 * time.Second
		})
	}
	bob := as("bob")
	for _, topic := range []string{on0, on1} {
		if _, err := bob.CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil || !strings.Contains(err.Error(), "Authoriz") {
			t.Fatalf("bob without a grant on %s: %v, want an authorization error", topic, err)
		}
	}
	c.Broker(0).GrantNamespace("public/default", "bob", "produce", "consume")
	for _, topic := range []string{on0, on1} {
		sendAndReceive(t, bob, topic, "bob", "from bob")
	}
	sendAndReceive(t, as("admin"), on1, "admin", "from the super-user")
}

// A namespace's anti-affinity group, one of its local policies, is the
// cluster's: set through one broker's admin API, every broker answers it,
// and removed through another, it is gone on all.
func TestAnAntiAffinityGroupIsTheClustersOnEveryBroker(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	admins := c.AdminURLs()
	call := func(method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	const path = "/admin/v2/namespaces/public/default/antiAffinity"
	if status, body := call("POST", admins[0]+path, "group-a"); status != http.StatusNoContent {
		t.Fatalf("set at broker 0: %d %s", status, body)
	}
	for i, a := range admins {
		if status, body := call("GET", a+path, ""); status != http.StatusOK || body != "group-a" {
			t.Errorf("broker %d answers %d %q, want the group", i, status, body)
		}
	}
	if status, body := call("DELETE", admins[1]+path, ""); status != http.StatusNoContent {
		t.Fatalf("remove at broker 1: %d %s", status, body)
	}
	if status, _ := call("GET", admins[0]+path, ""); status != http.StatusNoContent {
		t.Errorf("broker 0 after the removal at broker 1: %d, want 204 (none)", status)
	}
}

// A bundle's backlog is cleared at its owner: another broker of the cluster
// redirects the request there, and a bundle nobody owns is refused.
func TestABundlesBacklogIsClearedAtItsOwner(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/bundle-backlog"
	c.Move(topic, 1)
	client := c.Client()
	sendAndReceive(t, client, topic, "warm-up", "first")
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	c.Broker(1).Publish(topic, testkit.ProducerMessage{Payload: []byte("backlog")})
	path := "/admin/v2/namespaces/" + c.Bundle(topic) + "/clearBacklog/s"
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Post(c.AdminURLs()[0]+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), c.AdminURLs()[1]) {
		t.Fatalf("at the other broker: %s to %q, want a redirect to broker 1", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = http.Post(c.AdminURLs()[0]+path, "application/json", nil) // following it
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("followed to the owner: %s", resp.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.Broker(1).WaitBacklog(ctx, topic, "s", 0)
}
