package broker_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// The answers below are those Pulsar 4.0.8 gave to the same requests, with
// the client suite's security settings (see FIDELITY.md).

func (c *rawClient) connectWith(method string, data []byte, refresh bool) *pb.BaseCommand {
	c.t.Helper()
	cc := &pb.CommandConnect{ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(refresh)}}
	if method != "" {
		cc.AuthMethodName = proto.String(method)
		cc.AuthData = data
	}
	c.send(protocol.Base(pb.BaseCommand_CONNECT, cc))
	return c.read()
}

func wantConnectionError(t *testing.T, c *rawClient, resp *pb.BaseCommand, code pb.ServerError, msg string) {
	t.Helper()
	e := resp.GetError()
	if e == nil || e.GetRequestId() != 1<<64-1 || e.GetError() != code || e.GetMessage() != msg {
		t.Fatalf("got %v %v, want ERROR{-1, %v, %q}", resp.GetType(), e, code, msg)
	}
	if !c.closedByBroker() {
		t.Fatal("the broker kept the connection open")
	}
}

func TestFailedAuthenticationGetsAuthenticationErrorAndClose(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAnonymousRole("anonymous"))
	expired := b.TokenExpiring("app", b.Clock().Now().Add(-time.Second))
	forged, _ := auth.SignToken(map[string]any{"sub": "app"}, []byte("not the broker's secret"))
	for _, data := range []string{expired, forged, "abc", ""} {
		c := dialRaw(t, addrOf(b))
		wantConnectionError(t, c, c.connectWith("token", []byte(data), true), pb.ServerError_AuthenticationError, "Failed to authenticate")
	}
}

func TestUnknownAuthMethodGetsTheAnonymousRole(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAnonymousRole("anonymous"))
	for _, method := range []string{"foo", "none", "basic"} { // basic is not configured
		c := dialRaw(t, addrOf(b))
		if resp := c.connectWith(method, []byte("x"), true); resp.Connected == nil {
			t.Fatalf("%s: got %v %v", method, resp.GetType(), resp.GetError())
		}
	}
	for _, conn := range b.Connections() {
		if conn.Role != "anonymous" {
			t.Errorf("role %q, want anonymous", conn.Role)
		}
	}
}

func TestUnauthorizedRequestsGetPulsarsAnswersAndTheConnectionStays(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	c := dialRaw(t, addrOf(b))
	if resp := c.connectWith("token", []byte(b.Token("nobody")), true); resp.Connected == nil {
		t.Fatalf("connect: %v", resp.GetError())
	}
	const topic = "persistent://public/default/t1"
	c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
	if r := c.read().GetPartitionMetadataResponse(); r.GetResponse() != pb.CommandPartitionedTopicMetadataResponse_Failed ||
		r.GetError() != pb.ServerError_AuthorizationError || r.GetMessage() != "Client is not authorized to Get Partition Metadata" {
		t.Errorf("PARTITIONED_METADATA: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(2)}))
	if r := c.read().GetLookupTopicResponse(); r.GetResponse() != pb.CommandLookupTopicResponse_Failed ||
		r.GetError() != pb.ServerError_AuthorizationError || r.GetMessage() != "Client is not authorized to Lookup" {
		t.Errorf("LOOKUP: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(3)}))
	if r := c.read().GetError(); r.GetRequestId() != 3 || r.GetError() != pb.ServerError_AuthorizationError || r.GetMessage() != "Client is not authorized to Produce" {
		t.Errorf("PRODUCER: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic), Subscription: proto.String("s"),
		SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(4)}))
	if r := c.read().GetError(); r.GetRequestId() != 4 || r.GetError() != pb.ServerError_AuthorizationError || r.GetMessage() != "Client is not authorized to subscribe" {
		t.Errorf("SUBSCRIBE: %v", r)
	}
	c.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, &pb.CommandGetTopicsOfNamespace{Namespace: proto.String("public/default"), RequestId: proto.Uint64(5)}))
	if r := c.read().GetError(); r.GetRequestId() != 5 || r.GetError() != pb.ServerError_AuthorizationError || r.GetMessage() != "Client is not authorized to GetTopicsOfNamespace" {
		t.Errorf("GET_TOPICS_OF_NAMESPACE: %v", r)
	}
	c.connectPing() // the connection still works
}

// Pulsar 4.0.8's authorization looks up the tenant of a role that is not a
// super-user, and a missing tenant fails the check instead of refusing: the
// lookup gets the answer of a failed check, partitioned metadata
// TopicNotFound. A super-user's requests skip the tenant check.
func TestMissingTenantFailsTheAuthorizationCheck(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	const topic = "persistent://no-such-tenant/ns/t"
	ask := func(role string) (*pb.CommandPartitionedTopicMetadataResponse, *pb.CommandLookupTopicResponse) {
		c := dialRaw(t, addrOf(b))
		if resp := c.connectWith("token", []byte(b.Token(role)), true); resp.Connected == nil {
			t.Fatalf("connect: %v", resp.GetError())
		}
		c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
		pm := c.read().GetPartitionMetadataResponse()
		c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(2)}))
		return pm, c.read().GetLookupTopicResponse()
	}
	pm, l := ask("nobody")
	if pm.GetError() != pb.ServerError_TopicNotFound || pm.GetMessage() != "Tenant or namespace or topic does not exist: no-such-tenant/ns" {
		t.Errorf("PARTITIONED_METADATA: %v", pm)
	}
	if l.GetError() != pb.ServerError_AuthorizationError || l.GetMessage() != "Exception occurred while trying to authorize lookup" {
		t.Errorf("LOOKUP: %v", l)
	}
	pm, l = ask("admin")
	if pm.GetError() != pb.ServerError_TopicNotFound || pm.GetMessage() != "Namespace not found" {
		t.Errorf("super-user's PARTITIONED_METADATA: %v", pm)
	}
	if l.GetError() != pb.ServerError_TopicNotFound || l.GetMessage() != "Namespace not found" {
		t.Errorf("super-user's LOOKUP: %v", l)
	}
}

func TestLookupNamingAnUnknownListenerFails(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithAdvertisedListeners(map[string]broker.AdvertisedListener{
		"internal": {URL: "pulsar://broker.internal:6650"},
	})))
	c := dialRaw(t, addrOf(b))
	c.connect()
	lookup := func(id uint64, listener string) *pb.CommandLookupTopicResponse {
		c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String("t"),
			RequestId: proto.Uint64(id), AdvertisedListenerName: proto.String(listener)}))
		return c.read().GetLookupTopicResponse()
	}
	if r := lookup(1, "nope"); r.GetResponse() != pb.CommandLookupTopicResponse_Failed ||
		r.GetError() != pb.ServerError_ServiceNotReady || r.GetMessage() != "the broker do not have nope listener" {
		t.Errorf("unknown listener: %v", r)
	}
	if r := lookup(2, "internal"); r.GetBrokerServiceUrl() != "pulsar://broker.internal:6650" {
		t.Errorf("named listener: %v", r)
	}
	if r := lookup(3, ""); r.GetBrokerServiceUrl() != b.URL() {
		t.Errorf("no listener: %v", r)
	}
}

// refreshBroker has a token that expires in a minute; the test runs the
// credential check itself.
func refreshBroker(t *testing.T) (*testkit.Broker, string) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithBroker(broker.WithAuthRefreshInterval(0)))
	return b, b.TokenExpiring("app", b.Clock().Now().Add(time.Minute))
}

func authResponse(token string) *pb.BaseCommand {
	return protocol.Base(pb.BaseCommand_AUTH_RESPONSE, &pb.CommandAuthResponse{ClientVersion: proto.String("raw-test"),
		ProtocolVersion: proto.Int32(20), Response: &pb.AuthData{AuthMethodName: proto.String("token"), AuthData: []byte(token)}})
}

func challenged(t *testing.T, c *rawClient) {
	t.Helper()
	ch := c.read().GetAuthChallenge()
	if ch.GetChallenge().GetAuthMethodName() != "token" || string(ch.GetChallenge().GetAuthData()) != "PulsarAuthRefresh" || ch.GetProtocolVersion() != 20 {
		t.Fatalf("challenge %v", ch)
	}
}

func TestExpiredCredentialsAreChallengedAndAFreshTokenKeepsTheConnection(t *testing.T) {
	b, tok := refreshBroker(t)
	c := dialRaw(t, addrOf(b))
	c.connectWith("token", []byte(tok), true)
	b.RunTimers()
	if c.closedByBrokerWithin(100 * time.Millisecond) {
		t.Fatal("closed before expiry")
	}
	b.Advance(2 * time.Minute)
	challenged(t, c)
	c.send(authResponse(b.TokenExpiring("app", b.Clock().Now().Add(time.Hour))))
	c.connectPing()
	b.RunTimers()
	c.connectPing() // still open, nothing else sent
}

func TestUnansweredChallengeClosesAtTheNextCheck(t *testing.T) {
	b, tok := refreshBroker(t)
	c := dialRaw(t, addrOf(b))
	c.connectWith("token", []byte(tok), true)
	b.Advance(2 * time.Minute)
	challenged(t, c)
	b.RunTimers()
	if !c.closedByBroker() {
		t.Fatal("still open after an unanswered challenge")
	}
}

func TestChallengeAnsweredWithAnExpiredTokenGetsAuthenticationError(t *testing.T) {
	b, tok := refreshBroker(t)
	c := dialRaw(t, addrOf(b))
	c.connectWith("token", []byte(tok), true)
	b.Advance(2 * time.Minute)
	challenged(t, c)
	c.send(authResponse(tok))
	wantConnectionError(t, c, c.read(), pb.ServerError_AuthenticationError, "Failed to authenticate")
}

func TestChallengeAnsweredForAnotherRoleClosesSilently(t *testing.T) {
	b, tok := refreshBroker(t)
	c := dialRaw(t, addrOf(b))
	c.connectWith("token", []byte(tok), true)
	b.Advance(2 * time.Minute)
	challenged(t, c)
	c.send(authResponse(b.Token("someone-else")))
	if !c.closedByBroker() {
		t.Fatal("still open after a refresh for another role")
	}
}

func TestExpiredCredentialsOfAClientThatCannotRefreshClose(t *testing.T) {
	b, tok := refreshBroker(t)
	c := dialRaw(t, addrOf(b))
	c.connectWith("token", []byte(tok), false)
	b.Advance(2 * time.Minute)
	if !c.closedByBroker() {
		t.Fatal("still open")
	}
}
