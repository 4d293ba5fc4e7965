package websocket

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
)

// Server serves Pulsar's WebSocket API for one broker. It is an
// http.Handler for the paths under /ws/ (Routes); serve it on the broker's
// web port beside the admin API, as a standalone with
// webSocketServiceEnabled=true does.
type Server struct {
	b            *broker.Broker
	clientOpts   []func(*pulsar.ClientOptions)
	pingInterval time.Duration
	idleTimeout  time.Duration
	maxFrame     int

	mu       sync.Mutex
	client   pulsar.Client // the internal client, from the first session on
	sessions map[*session]struct{}
	closed   bool
	wg       sync.WaitGroup // the sessions' goroutines
}

// Option configures a Server.
type Option func(*Server)

// WithClientOptions adjusts the options of the internal client the server
// reaches the broker with (its URL is the broker's). Under authentication
// it needs credentials the broker accepts, e.g. a super-user's token: the
// server checks each WebSocket client's own role itself, as Pulsar's
// websocket service does.
func WithClientOptions(fn func(*pulsar.ClientOptions)) Option {
	return func(s *Server) { s.clientOpts = append(s.clientOpts, fn) }
}

// WithPingInterval makes the server ping every session at this interval
// (webSocketPingDurationSeconds; Pulsar's default, 0 here, sends none).
func WithPingInterval(d time.Duration) Option { return func(s *Server) { s.pingInterval = d } }

// WithIdleTimeout closes a session that received nothing for this long
// (webSocketSessionIdleTimeoutMillis, 300 s by default; 0 for never).
func WithIdleTimeout(d time.Duration) Option { return func(s *Server) { s.idleTimeout = d } }

// WithMaxTextFrameSize sets the largest message a session reads
// (webSocketMaxTextFrameSize, 1 MiB by default); a larger one closes the
// session with status 1009.
func WithMaxTextFrameSize(n int) Option { return func(s *Server) { s.maxFrame = n } }

// DefaultIdleTimeout is Pulsar's webSocketSessionIdleTimeoutMillis.
const DefaultIdleTimeout = 300 * time.Second

// DefaultMaxTextFrameSize is Pulsar's webSocketMaxTextFrameSize.
const DefaultMaxTextFrameSize = 1 << 20

// New returns the WebSocket API of b.
func New(b *broker.Broker, opts ...Option) *Server {
	s := &Server{b: b, idleTimeout: DefaultIdleTimeout, maxFrame: DefaultMaxTextFrameSize,
		sessions: map[*session]struct{}{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Routes returns the server's routes, net/http.ServeMux patterns with their
// handler, for admin.WithHandler.
func (s *Server) Routes() map[string]http.Handler { return map[string]http.Handler{"/ws/": s} }

// Close ends every session (with status 1001, going away) and closes the
// internal client. Sessions that arrive later are refused.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.end(closeGoingAway, "Shutdown")
	}
	s.wg.Wait()
	s.mu.Lock()
	c := s.client
	s.client = nil
	s.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return nil
}

// endpoint is what a path names.
type endpoint struct {
	kind         string // "producer", "consumer" or "reader"
	servlet      string
	topic        broker.TopicName
	subscription string
}

// ServeHTTP answers an opening handshake on one of the API's paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	kind, servlet := servletOf(path)
	if kind == "" {
		httpError(w, r, jerseyServlet, http.StatusNotFound, "Not Found")
		return
	}
	if !isUpgrade(r) {
		if r.Method == http.MethodGet || r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodDelete {
			httpError(w, r, servlet, http.StatusMethodNotAllowed, "HTTP method "+r.Method+" is not supported by this URL")
		} else {
			httpError(w, r, servlet, http.StatusNotImplemented, "Method "+r.Method+" is not implemented by this servlet for this URI")
		}
		return
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		httpError(w, r, servlet, http.StatusBadRequest, "Unsupported websocket version specification")
		return
	}
	ep, err := parsePath(kind, path)
	ep.servlet = servlet
	var pe *pathError
	if errors.As(err, &pe) {
		httpError(w, r, servlet, http.StatusInternalServerError, pe.Error())
		return
	}
	var ss *session
	switch kind {
	case "producer":
		ss = s.newProducer(w, r, ep, err)
	case "consumer":
		ss = s.newConsumer(w, r, ep, err)
	default:
		ss = s.newReader(w, r, ep, err)
	}
	if ss == nil {
		return // refused, answered
	}
	if msg := handshakeError(r); msg != "" {
		ss.release()
		httpError(w, r, servlet, http.StatusBadRequest, msg)
		return
	}
	c, err := upgrade(w, r, s.maxFrame, s.idleTimeout)
	if err != nil {
		ss.release()
		return
	}
	s.run(ss, c)
}

// servletOf returns the kind of endpoint a path is under and the servlet
// Pulsar serves it with, or "" for a path no WebSocket servlet serves.
func servletOf(path string) (kind, servlet string) {
	for _, k := range []struct{ kind, servlet string }{
		{"producer", producerServlet}, {"consumer", consumerServlet}, {"reader", readerServlet}} {
		if strings.HasPrefix(path, "/ws/v2/"+k.kind+"/") || strings.HasPrefix(path, "/ws/"+k.kind+"/") {
			return k.kind, k.servlet
		}
	}
	return "", ""
}

// parsePath reads a topic (and a consumer's subscription) from a path, as
// Pulsar's handlers read it: /ws/v2/{kind}/{domain}/{tenant}/{ns}/{topic}
// (a consumer's with /{subscription}), or the v1 form with a cluster,
// /ws/{kind}/{domain}/{tenant}/{cluster}/{ns}/{topic}. A topic that does
// not parse is a *pathError (Pulsar's handler constructor throws, and
// Jetty answers 500); a consumer's bad subscription part a *paramError.
func parsePath(kind, path string) (endpoint, error) {
	parts := strings.Split(path, "/")
	if len(parts) < 8 {
		return endpoint{}, &pathError{"Invalid topic name format"}
	}
	v2 := parts[2] == "v2"
	domainAt := 3
	if v2 {
		domainAt = 4
	}
	domain := parts[domainAt]
	if domain != "persistent" && domain != "non-persistent" {
		return endpoint{}, &pathError{}
	}
	ep := endpoint{kind: kind}
	end := len(parts)
	if kind == "consumer" {
		end--
	}
	var ns string
	if v2 {
		ns = parts[5] + "/" + parts[6]
	} else {
		ns = parts[4] + "/" + parts[5] + "/" + parts[6]
	}
	local := parts[7]
	for _, p := range parts[8:max(end, 8)] {
		if p != "" {
			local += "/" + p
		}
	}
	local = unescape(local)
	name := domain + "://" + ns + "/" + local
	if local == "" {
		return endpoint{}, &pathError{"Invalid topic name: " + name + ". Topic local name must not be blank."}
	}
	tn, err := broker.ParseTopicName(name)
	if err != nil {
		return endpoint{}, &pathError{err.Error()}
	}
	ep.topic = tn
	if kind == "consumer" {
		if len(parts) != 9 {
			return endpoint{}, badParam("Invalid topic name format")
		}
		if parts[8] == "" {
			return endpoint{}, badParam("Empty subscription name")
		}
		ep.subscription = unescape(parts[8])
	}
	return ep, nil
}

// pathError is a path whose topic Pulsar's TopicName refuses: an
// IllegalArgumentException thrown before the handler's own error handling,
// which Jetty answers with 500 and the exception.
type pathError struct{ msg string }

func (e *pathError) Error() string {
	if e.msg == "" {
		return "java.lang.IllegalArgumentException"
	}
	return "java.lang.IllegalArgumentException: " + e.msg
}

// unescape decodes a path segment as Pulsar's Codec.decode does (URL
// decoding; a segment that does not decode stays as it is).
func unescape(s string) string {
	out, err := urlDecode(s)
	if err != nil {
		return s
	}
	return out
}

// authorize authenticates r (the admin API's filter did it first and
// answered a failure) and checks that its role may do op on the topic,
// answering a refusal as Pulsar's handlers do. It returns false when the
// request may not go on.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, ep endpoint, produce bool) bool {
	if !s.b.AuthenticationEnabled() && !s.b.AuthorizationEnabled() {
		return true
	}
	id, err := s.b.AuthenticateHTTP(withQueryToken(r))
	if err != nil {
		httpError(w, r, ep.servlet, http.StatusUnauthorized, "Failed to authenticate")
		return false
	}
	if !s.b.AuthorizationEnabled() {
		return true
	}
	op := auth.OpConsume
	if produce {
		op = auth.OpProduce
	}
	if !s.b.AllowedTopic(id.Role, ep.topic, op) {
		httpError(w, r, ep.servlet, http.StatusForbidden, "Not authorized")
		return false
	}
	return true
}

// withQueryToken returns r with the query parameter token as its bearer
// token when r has no Authorization header, as Pulsar's handlers read it
// (browsers' WebSocket clients cannot set headers).
func withQueryToken(r *http.Request) *http.Request {
	token := r.URL.Query().Get("token")
	if token == "" || r.Header.Get("Authorization") != "" {
		return r
	}
	r2 := r.Clone(r.Context())
	if !strings.HasPrefix(token, "Bearer ") {
		token = "Bearer " + token
	}
	r2.Header.Set("Authorization", token)
	return r2
}

// internalClient returns the client sessions reach the broker with,
// creating it at the first call.
func (s *Server) internalClient() (pulsar.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the WebSocket service is closed")
	}
	if s.client != nil {
		return s.client, nil
	}
	opts := pulsar.ClientOptions{URL: s.b.URL(), Logger: log.DefaultNopLogger(),
		OperationTimeout: 30 * time.Second}
	for _, fn := range s.clientOpts {
		fn(&opts)
	}
	c, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, err
	}
	s.client = c
	return c, nil
}

// serverErrorRE reads the broker's error code and message from an error of
// pulsar-client-go ("server error: TopicNotFound: Namespace not found").
var serverErrorRE = regexp.MustCompile(`server error: (\w+): (.*)`)

// createError answers a failure of the internal client to create a
// producer or consumer as Pulsar's handlers answer the Java client's
// (AbstractWebSocketHandler.getErrorCode and getErrorMessage): the status
// of the broker's error, and its message in the Java client's form.
func (s *Server) createError(w http.ResponseWriter, r *http.Request, ep endpoint, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	if err.Error() == "TopicNotFound" {
		// A lookup's refusal: pulsar-client-go keeps its code, not the
		// broker's message, which for a missing namespace is this.
		reason := "Topic not found"
		if ns := ep.topic.Tenant + "/" + ep.topic.Namespace; !s.b.NamespaceExists(ns) {
			reason = "Namespace not found"
		}
		err = fmt.Errorf("server error: TopicNotFound: %s", reason)
	}
	if m := serverErrorRE.FindStringSubmatch(err.Error()); m != nil {
		status = serverErrorStatus(m[1])
		msg = fmt.Sprintf(`{"errorMsg":%q,"reqId":%d, "remote":"%s", "local":"%s"}`, m[2], requestID(),
			"127.0.0.1/127.0.0.1:6650", "/127.0.0.1:0")
	} else {
		status = clientStatus(err)
	}
	prefix := "Failed to create producer/consumer: "
	if ep.kind == "reader" {
		prefix, status = "Failed to create reader: ", http.StatusInternalServerError
	}
	httpError(w, r, ep.servlet, status, prefix+msg)
}

// serverErrorStatus is the status Pulsar's handlers give the Java client's
// exception for a broker error code.
func serverErrorStatus(code string) int {
	switch code {
	case "TopicNotFound", "SubscriptionNotFound", "ConsumerNotFound":
		return http.StatusNotFound
	case "ProducerBusy", "ConsumerBusy", "ProducerFenced", "IncompatibleSchema":
		return http.StatusConflict
	case "TooManyRequests":
		return http.StatusTooManyRequests
	case "ProducerBlockedQuotaExceededError", "ProducerBlockedQuotaExceededException", "TopicTerminatedError":
		return http.StatusServiceUnavailable
	case "AuthenticationError":
		return http.StatusUnauthorized
	case "AuthorizationError":
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// add registers a running session; false once the server is closed.
func (s *Server) add(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) remove(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
	s.wg.Done()
}

// requestID is a request id as the Java client numbers them in an error's
// message (any number: tests mask it).
func requestID() int64 { return mrand.Int64N(1 << 62) }
