package testkit_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func roundTrip(t *testing.T, c pulsar.Client, topic string) error {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return err
	}
	defer p.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		return err
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		return err
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		return err
	}
	if string(m.Payload()) != "hello" {
		t.Fatalf("received %q", m.Payload())
	}
	return cons.Ack(m)
}

// quickClient makes clients fail fast instead of retrying for 30 s.
func quickClient(o *pulsar.ClientOptions) { o.OperationTimeout = 3 * time.Second }

func TestTLSClientVerifiesTheBrokerAndRoundTrips(t *testing.T) {
	b := testkit.Start(t, testkit.WithTLS())
	if err := roundTrip(t, b.Client(b.TLSClient()), "tls-topic"); err != nil {
		t.Fatal(err)
	}
	conns := b.Connections()
	if len(conns) != 1 || !conns[0].TLS {
		t.Fatalf("connections %+v, want one over TLS", conns)
	}
	if !strings.HasPrefix(b.TLSURL(), "pulsar+ssl://127.0.0.1:") {
		t.Fatalf("TLS URL %s", b.TLSURL())
	}
}

func TestTLSClientWithoutTheCARefusesTheBroker(t *testing.T) {
	b := testkit.Start(t, testkit.WithTLS())
	c := b.Client(func(o *pulsar.ClientOptions) { o.URL = b.TLSURL() }, quickClient)
	if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t"}); err == nil {
		t.Fatal("a client that does not trust the test CA connected")
	}
}

func TestRequiredClientCertificateRefusesClientsWithoutOne(t *testing.T) {
	b := testkit.Start(t, testkit.WithTLSClientCertRequired())
	c := b.Client(b.TLSClient(), quickClient)
	if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t"}); err == nil {
		t.Fatal("a client without a certificate connected")
	}
	cert, key := b.ClientCertificate("anyone")
	c2 := b.Client(b.TLSClient(), func(o *pulsar.ClientOptions) {
		o.TLSCertificateFile, o.TLSKeyFilePath = cert, key
	})
	if err := roundTrip(t, c2, "t"); err != nil {
		t.Fatal(err)
	}
}

func TestTokenAuthenticationRefusesMissingForgedAndExpiredTokens(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth())
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _ := auth.SignToken(map[string]any{"sub": "admin"}, []byte("a secret the broker does not know"))
	wrongAlg, _ := auth.SignToken(map[string]any{"sub": "admin"}, ek)
	for name, a := range map[string]pulsar.Authentication{
		"no token":        nil,
		"forged":          pulsar.NewAuthenticationToken(forged),
		"other algorithm": pulsar.NewAuthenticationToken(wrongAlg),
		"expired":         pulsar.NewAuthenticationToken(b.TokenExpiring("admin", b.Clock().Now().Add(-time.Minute))),
	} {
		c := b.Client(quickClient, func(o *pulsar.ClientOptions) { o.Authentication = a })
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "t"}); err == nil {
				t.Error("producer created")
			}
		})
	}
}

func TestTokenAuthenticationNamesTheRole(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth())
	c := b.Client(func(o *pulsar.ClientOptions) { o.Authentication = pulsar.NewAuthenticationToken(b.Token("admin")) })
	if err := roundTrip(t, c, "t"); err != nil {
		t.Fatal(err)
	}
	if conns := b.Connections(); len(conns) != 1 || conns[0].Role != "admin" || conns[0].AuthMethod != "token" {
		t.Fatalf("connections %+v", conns)
	}
}

func TestAuthorizationNeedsAGrantForEachAction(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	alice := b.Client(quickClient, func(o *pulsar.ClientOptions) {
		o.Authentication = pulsar.NewAuthenticationToken(b.Token("alice"))
	})
	_, err := alice.CreateProducer(pulsar.ProducerOptions{Topic: "orders"})
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("producer without a grant: %v", err)
	}
	b.GrantNamespace("public/default", "alice", auth.ActionProduce)
	p, err := alice.CreateProducer(pulsar.ProducerOptions{Topic: "orders"})
	if err != nil {
		t.Fatalf("producer with a produce grant: %v", err)
	}
	p.Close()
	_, err = alice.Subscribe(pulsar.ConsumerOptions{Topic: "orders", SubscriptionName: "s"})
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("subscribe with only produce: %v", err)
	}
	b.GrantTopic("orders", "alice", auth.ActionConsume)
	if err := roundTrip(t, alice, "orders"); err != nil {
		t.Fatalf("with produce on the namespace and consume on the topic: %v", err)
	}
	admin := b.Client(func(o *pulsar.ClientOptions) { o.Authentication = pulsar.NewAuthenticationToken(b.Token("admin")) })
	if err := roundTrip(t, admin, "anything"); err != nil {
		t.Fatalf("super-user: %v", err)
	}
}

func TestTLSAuthenticationTakesTheRoleFromTheCertificate(t *testing.T) {
	b := testkit.Start(t, testkit.WithTLSAuth(), testkit.WithAuthorization("ops"))
	b.SetTenantAdmins("public", "tenant-admin")
	for role, ok := range map[string]bool{"ops": true, "tenant-admin": true, "stranger": false} {
		cert, key := b.ClientCertificate(role)
		c := b.Client(b.TLSClient(), quickClient, func(o *pulsar.ClientOptions) {
			o.Authentication = pulsar.NewAuthenticationTLS(cert, key)
		})
		if err := roundTrip(t, c, "tls-auth"); (err == nil) != ok {
			t.Errorf("%s: %v", role, err)
		}
	}
}

func TestExpiredTokenIsChallengedAndRefreshed(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithBroker(broker.WithAuthRefreshInterval(0)))
	var calls atomic.Int32
	supplier := func() (string, error) {
		calls.Add(1)
		return b.TokenExpiring("app", b.Clock().Now().Add(time.Minute)), nil
	}
	c := b.Client(func(o *pulsar.ClientOptions) { o.Authentication = pulsar.NewAuthenticationTokenFromSupplier(supplier) })
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "refresh"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := b.Connections()[0].AuthExpiry
	b.Advance(2 * time.Minute) // runs the timers: the token has expired, the broker challenges the client
	b.WaitFor(ctx, "the refreshed token", func() bool {
		conns := b.Connections()
		return len(conns) == 1 && !conns[0].AuthChallenged && conns[0].AuthExpiry.After(first)
	})
	b.RunTimers() // answered: the connection stays
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("still here")}); err != nil {
		t.Fatal(err)
	}
	if n := len(b.Connections()); n != 1 || calls.Load() < 2 {
		t.Fatalf("%d connections, %d token calls", n, calls.Load())
	}
	if got, _ := b.Topic("refresh"); len(got.Producers) != 1 {
		t.Fatalf("producers %v", got.Producers)
	}
}

func TestExpiredTokenThatIsNotRefreshedClosesTheConnection(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithBroker(broker.WithAuthRefreshInterval(0)))
	deadline := b.Clock().Now().Add(time.Minute)
	token := b.TokenExpiring("app", deadline) // the client never gets a newer one
	c := b.Client(func(o *pulsar.ClientOptions) { o.Authentication = pulsar.NewAuthenticationToken(token) })
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "stale"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.Advance(2 * time.Minute)
	// The client answers the challenge with the same expired token: the broker
	// closes the connection, and the client cannot connect again with it.
	b.WaitFor(ctx, "the connection to close", func() bool { return len(b.Connections()) == 0 })
	b.WaitFor(ctx, "the producer to go", func() bool {
		got, _ := b.Topic("stale")
		return len(got.Producers) == 0
	})
}

func TestOAuth2ClientCredentialsWorkEndToEnd(t *testing.T) {
	b := testkit.Start(t, testkit.WithOAuth2(), testkit.WithAuthorization("admin"))
	b.AddOAuth2Client("billing", "s3cret", "billing-service")
	b.GrantNamespace("public/default", "billing-service", auth.ActionProduce, auth.ActionConsume)
	c := b.Client(func(o *pulsar.ClientOptions) { o.Authentication = b.OAuth2Authentication("billing", "s3cret") })
	if err := roundTrip(t, c, "invoices"); err != nil {
		t.Fatal(err)
	}
	if conns := b.Connections(); len(conns) != 1 || conns[0].Role != "billing-service" || conns[0].AuthExpiry.IsZero() {
		t.Fatalf("connections %+v", conns)
	}
	wrong := b.Client(quickClient, func(o *pulsar.ClientOptions) { o.Authentication = b.OAuth2Authentication("billing", "guess") })
	if _, err := wrong.CreateProducer(pulsar.ProducerOptions{Topic: "invoices"}); err == nil {
		t.Fatal("a client with the wrong secret produced")
	}
}
