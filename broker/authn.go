package broker

import (
	"crypto/tls"
	"crypto/x509"
	"math"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// connectionRequestID is the request id of errors about the connection
// itself: -1 on the wire.
const connectionRequestID = math.MaxUint64

// refreshChallenge is the auth_data of the AUTH_CHALLENGE that asks a client
// for fresh credentials, as Pulsar sends it.
var refreshChallenge = []byte("PulsarAuthRefresh")

// connectionAuth is the authentication state of a connection, under conn.mu.
type connectionAuth struct {
	identity   auth.Identity
	refresh    bool // the client supports AUTH_CHALLENGE (supports_auth_refresh)
	challenged bool // an AUTH_CHALLENGE is waiting for its AUTH_RESPONSE
}

// authenticate checks the credentials of a CONNECT. On failure it answers
// AuthenticationError as Pulsar does and returns false: the connection closes.
func (c *conn) authenticate(cc *pb.CommandConnect) bool {
	a := c.b.cfg.authn
	if a == nil {
		return true
	}
	creds := auth.Credentials{Method: connectMethod(cc), Data: cc.GetAuthData(), PeerCertificates: c.peerCertificates()}
	id, err := a.Connect(creds, c.b.cfg.clock.Now())
	if err != nil {
		c.log.Info("authentication failed", "method", creds.Method, "reason", err)
		c.failConnection(pb.ServerError_AuthenticationError, "Failed to authenticate")
		return false
	}
	c.mu.Lock()
	c.auth = connectionAuth{identity: id, refresh: cc.GetFeatureFlags().GetSupportsAuthRefresh()}
	c.mu.Unlock()
	c.log.Debug("client authenticated", "role", id.Role, "method", id.Method)
	return true
}

// connectMethod is the CONNECT's method name: auth_method_name, else the
// legacy auth_method enum without its "AuthMethod" prefix, else "none".
func connectMethod(cc *pb.CommandConnect) string {
	if cc.AuthMethodName != nil {
		return cc.GetAuthMethodName()
	}
	if cc.AuthMethod != nil {
		return strings.ToLower(strings.TrimPrefix(cc.GetAuthMethod().String(), "AuthMethod"))
	}
	return "none"
}

func (c *conn) peerCertificates() []*x509.Certificate {
	if tc, ok := c.nc.(*tls.Conn); ok {
		return tc.ConnectionState().PeerCertificates
	}
	return nil
}

// role is the connection's authenticated role ("" without authentication).
func (c *conn) role() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.auth.identity.Role
}

// allowed reports whether the connection's role may perform op on tn.
func (c *conn) allowed(tn TopicName, op auth.Operation) bool {
	if c.b.cfg.authz == nil {
		return true
	}
	return c.b.AllowedTopic(c.role(), tn, op)
}

// tenantMissing reports whether authorizing this connection's role on tn
// fails because tn's tenant does not exist. Pulsar looks the tenant up to
// learn whether a role that is not a super-user administers it, and a
// missing tenant makes that check fail (a 404 inside the broker) rather than
// answer no: the command then gets the answer Pulsar gives when authorizing
// it throws, not its "not authorized" refusal.
func (c *conn) tenantMissing(tn TopicName) bool {
	a := c.b.cfg.authz
	if a == nil || a.IsSuperUser(c.role()) {
		return false
	}
	return !c.b.tenantExists(tn.Tenant)
}

// failConnection writes an ERROR about the connection straight to the socket,
// ahead of the closing that follows (the writer's queue is dropped on close).
func (c *conn) failConnection(code pb.ServerError, msg string) {
	frame := protocol.AppendCommand(nil, protocol.ErrorCommand(connectionRequestID, code, msg))
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.nc.Write(frame)
}

// handleAuthResponse takes the fresh credentials a client sends after an
// AUTH_CHALLENGE. Credentials that fail close the connection with
// AuthenticationError; valid ones for another role close it silently, as on
// Pulsar.
func (c *conn) handleAuthResponse(r *pb.CommandAuthResponse) bool {
	a := c.b.cfg.authn
	if a == nil {
		return true
	}
	resp := r.GetResponse()
	if resp == nil {
		c.log.Info("closing connection: AUTH_RESPONSE without credentials")
		return false
	}
	creds := auth.Credentials{Method: resp.GetAuthMethodName(), Data: resp.GetAuthData(), PeerCertificates: c.peerCertificates()}
	id, err := a.Connect(creds, c.b.cfg.clock.Now())
	if err != nil {
		c.log.Info("refreshed credentials failed", "reason", err)
		c.failConnection(pb.ServerError_AuthenticationError, "Failed to authenticate")
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id.Role != c.auth.identity.Role {
		c.log.Info("closing connection: refreshed credentials name another role", "role", id.Role)
		return false
	}
	c.auth.identity = id
	c.auth.challenged = false
	return true
}

// checkCredentials runs every authRefresh interval: a connection that left
// the previous challenge unanswered is closed; one whose credentials have
// expired is challenged, or closed when its client cannot refresh.
func (b *Broker) checkCredentials() {
	now := b.cfg.clock.Now()
	b.mu.Lock()
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	for _, c := range conns {
		c.checkCredentials(now)
	}
}

func (c *conn) checkCredentials(now time.Time) {
	c.mu.Lock()
	if !c.connected {
		c.mu.Unlock()
		return
	}
	st, version := c.auth, c.version
	switch {
	case st.challenged:
		c.mu.Unlock()
		c.log.Info("closing connection: no answer to the authentication challenge")
		c.close()
		return
	case !st.identity.Expired(now):
		c.mu.Unlock()
		return
	case !st.refresh:
		c.mu.Unlock()
		c.log.Info("closing connection: credentials expired and the client cannot refresh them")
		c.close()
		return
	}
	c.auth.challenged = true
	c.mu.Unlock()
	c.send(protocol.Base(pb.BaseCommand_AUTH_CHALLENGE, &pb.CommandAuthChallenge{
		Challenge:       &pb.AuthData{AuthMethodName: proto.String(st.identity.Method), AuthData: refreshChallenge},
		ProtocolVersion: proto.Int32(version),
	}))
}

// ConnectionSnapshot describes one client connection as the broker sees it.
type ConnectionSnapshot struct {
	Remote string // the client's address
	Client string // client_version of its CONNECT
	TLS    bool
	// Role is the authenticated role ("" without authentication) and
	// AuthMethod the provider that accepted it ("" for the anonymous role).
	Role, AuthMethod string
	// AuthExpiry is when its credentials expire (zero: never).
	AuthExpiry time.Time
	// AuthChallenged is true while an AUTH_CHALLENGE awaits its answer.
	AuthChallenged bool
	// UnsentBytes are the bytes queued for the client and not yet written
	// to its socket; Unwritable is set while they are past the write
	// buffer's high-water mark and no message is dispatched to it.
	UnsentBytes int64
	Unwritable  bool
}

// Connections returns the connections that completed their handshake,
// ordered by remote address.
func (b *Broker) Connections() []ConnectionSnapshot {
	b.mu.Lock()
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	out := make([]ConnectionSnapshot, 0, len(conns))
	for _, c := range conns {
		_, isTLS := c.nc.(*tls.Conn)
		c.mu.Lock()
		if c.connected {
			id := c.auth.identity
			out = append(out, ConnectionSnapshot{
				Remote: c.nc.RemoteAddr().String(), Client: c.client, TLS: isTLS,
				Role: id.Role, AuthMethod: id.Method, AuthExpiry: id.Expiry, AuthChallenged: c.auth.challenged,
			})
			out[len(out)-1].UnsentBytes, out[len(out)-1].Unwritable = c.unsentBytes()
		}
		c.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Remote < out[j].Remote })
	return out
}
