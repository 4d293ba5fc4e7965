package websocket_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
	pws "github.com/pulsarsim/pulsarsim/websocket"
)

func TestWebSocketAuthorizationIsTheWebPortsUnderTokens(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.GrantNamespace("public/default", "alice", "produce")
	bearer := func(role string) http.Header {
		return http.Header{"Authorization": {"Bearer " + b.Token(role)}}
	}
	producer := b.WebSocketURL() + "/ws/v2/producer/persistent/public/default/secured"
	consumer := b.WebSocketURL() + "/ws/v2/consumer/persistent/public/default/secured/s"
	for _, c := range []struct {
		name   string
		url    string
		header http.Header
		status int
	}{
		{"no credentials", producer, nil, http.StatusUnauthorized},
		{"a bad token", producer, http.Header{"Authorization": {"Bearer nonsense"}}, http.StatusUnauthorized},
		{"a role without grants", producer, bearer("bob"), http.StatusForbidden},
		{"a producer consuming", consumer, bearer("alice"), http.StatusForbidden},
	} {
		_, resp, err := websocket.DefaultDialer.DialContext(ctx, c.url, c.header)
		if err == nil || resp == nil || resp.StatusCode != c.status {
			t.Errorf("%s: %v %v, want %d", c.name, err, resp, c.status)
		}
	}
	// The token may come as a query parameter, for browsers, when the web
	// service's filter lets the request through (the anonymous role).
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, producer+"?token="+b.Token("alice"), nil); err == nil ||
		resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a query token without an anonymous role: %v %v, want the filter's 401", err, resp)
	}
	p := dialWS(ctx, t, producer, bearer("alice"))
	writeJSON(t, p, map[string]string{"payload": base64.StdEncoding.EncodeToString([]byte("x"))})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
		t.Fatalf("granted producer answered %v", ack)
	}
	if got := b.Messages("secured"); len(got) != 1 || string(got[0].Payload) != "x" {
		t.Fatalf("stored %+v", got)
	}
}

func TestWebSocketFramingAgainstGorilla(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/producer/persistent/public/default/frames", nil)

	// A ping is answered with a pong carrying its data.
	pong := make(chan string, 1)
	p.SetPongHandler(func(data string) error { pong <- data; return nil })
	if err := p.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// gorilla fragments a message larger than its write buffer (4 KiB):
	// the server reassembles it.
	big := strings.Repeat("x", 100_000)
	writeJSON(t, p, map[string]string{"payload": base64.StdEncoding.EncodeToString([]byte(big)), "context": "big"})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" || ack["context"] != "big" {
		t.Fatalf("fragmented message answered %v", ack)
	}
	select {
	case data := <-pong:
		if data != "are you there" {
			t.Errorf("pong %q", data)
		}
	case <-ctx.Done():
		t.Fatal("no pong")
	}
	if got := b.Messages("frames"); len(got) != 1 || string(got[0].Payload) != big {
		t.Fatalf("stored %d messages", len(got))
	}

	// A message over webSocketMaxTextFrameSize (1 MiB) closes the session
	// with 1009, as Jetty does.
	huge := strings.Repeat("y", pws.DefaultMaxTextFrameSize+1)
	if err := p.WriteMessage(websocket.TextMessage, []byte(huge)); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("after a message too big: %v", err)
	}

	// A close from the client is answered with the same status.
	c := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/frames/s", nil)
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.ReadMessage()
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
		t.Fatalf("answer to a close: %v", err)
	}
}

func TestNoGoroutineOutlivesAClosedWebSocketServer(t *testing.T) {
	before := goleak.IgnoreCurrent()
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ws := pws.New(b)
	var opts []admin.Option
	for pattern, h := range ws.Routes() {
		opts = append(opts, admin.WithHandler(pattern, h))
	}
	srv := httptest.NewServer(admin.New(b, opts...))
	base := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, base+"/ws/v2/consumer/persistent/public/default/leak/s", nil)
	p := dialWS(ctx, t, base+"/ws/v2/producer/persistent/public/default/leak", nil)
	writeJSON(t, p, map[string]string{"payload": "eA=="})
	readJSON[map[string]any](t, p)
	readJSON[wsMessage](t, c) // delivered, never acked
	_ = dialWS(ctx, t, base+"/ws/v2/reader/persistent/public/default/leak?messageId=earliest", nil)

	ws.Close() // ends the sessions, with their internal producer, consumer and reader
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("a session at the server's close: %v", err)
	}
	srv.Close()
	c.Close()
	p.Close()
	b.Close()
	// pulsar-client-go's producer leaves its send-timeout goroutine until
	// its timer fires (the send timeout, 30 s, after the producer's
	// creation); it then sees the producer closed and returns.
	goleak.VerifyNone(t, before,
		goleak.IgnoreTopFunction("github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).failTimeoutMessages"))
}

// serveWS serves b's admin API with a WebSocket server configured by opts,
// and returns the WebSocket base URL.
func serveWS(t *testing.T, b *broker.Broker, opts ...pws.Option) string {
	t.Helper()
	ws := pws.New(b, opts...)
	var aopts []admin.Option
	for pattern, h := range ws.Routes() {
		aopts = append(aopts, admin.WithHandler(pattern, h))
	}
	srv := httptest.NewServer(admin.New(b, aopts...))
	t.Cleanup(func() {
		ws.Close()
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b := broker.New()
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Seen on Pulsar 4.0.8 with webSocketSessionIdleTimeoutMillis=2000: a
// session with nothing read or written for that long closes with 1001 and
// Jetty's TimeoutException text; the server's pings
// (webSocketPingDurationSeconds) count as activity and keep it open.
func TestWebSocketIdleSessionClosesWithJettysReason(t *testing.T) {
	b := startBroker(t)
	base := serveWS(t, b, pws.WithIdleTimeout(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, base+"/ws/v2/consumer/persistent/public/default/idle/s", nil)
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway ||
		!strings.HasPrefix(ce.Text, "java.util.concurrent.TimeoutException: Idle timeout expired: ") ||
		!strings.HasSuffix(ce.Text, "/300 ms") {
		t.Fatalf("an idle session ended with %v", err)
	}
}

func TestWebSocketPingsKeepASessionOpenPastTheIdleTimeout(t *testing.T) {
	b := startBroker(t)
	base := serveWS(t, b, pws.WithIdleTimeout(200*time.Millisecond), pws.WithPingInterval(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialWS(ctx, t, base+"/ws/v2/consumer/persistent/public/default/pinged/s", nil)
	pings := make(chan string, 16)
	c.SetPingHandler(func(data string) error {
		pings <- data
		return c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	ended := make(chan error, 1)
	go func() { // runs the ping handler; returns when the session ends
		_, _, err := c.ReadMessage()
		ended <- err
	}()
	for i := range 8 {
		select {
		case d := <-pings:
			if d != "PING" {
				t.Fatalf("ping %d carries %q", i, d)
			}
		case <-ctx.Done():
			t.Fatalf("after %d pings the session went quiet", i)
		}
	}
	// Eight pings, 350 ms at least, past the 200 ms idle timeout, came
	// from a session still open (an ended one pings no more).
	select {
	case err := <-ended:
		t.Fatalf("the session ended: %v", err)
	default:
	}
}

func TestWebSocketQueryTokenAuthenticatesBehindTheAnonymousRole(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"), testkit.WithAnonymousRole("anonymous"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.GrantNamespace("public/default", "alice", "produce")
	producer := b.WebSocketURL() + "/ws/v2/producer/persistent/public/default/query-token"
	// Without credentials the anonymous role has no grant.
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, producer, nil); err == nil || resp == nil ||
		resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous: %v %v, want 403", err, resp)
	}
	p := dialWS(ctx, t, producer+"?token="+b.Token("alice"), nil)
	writeJSON(t, p, map[string]string{"payload": base64.StdEncoding.EncodeToString([]byte("x"))})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
		t.Fatalf("a producer with a query token answered %v", ack)
	}
}
