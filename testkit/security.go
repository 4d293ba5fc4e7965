package testkit

import (
	"crypto/rand"
	"encoding/json"
	"net/http/httptest"
	"os"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/issuer"
)

// securitySettings are the TLS and authentication choices of Start.
type securitySettings struct {
	tls, requireClientCert bool
	token, tlsAuth         bool
	anonymousRole          string
	authorization          bool
	superUsers             []string
	oauth2                 bool
}

func (s securitySettings) authentication() bool { return s.token || s.tlsAuth }

// WithTLS makes the broker also serve pulsar+ssl:// with a certificate for
// 127.0.0.1, ::1 and localhost from a CA made for the test. b.TLSURL,
// b.CAFile and b.TLSClient give a client what it needs.
func WithTLS() Option { return func(s *settings) { s.sec.tls = true } }

// WithTLSClientCertRequired is WithTLS refusing TLS clients without a
// certificate from the test's CA (b.ClientCertificate makes one).
func WithTLSClientCertRequired() Option {
	return func(s *settings) { s.sec.tls, s.sec.requireClientCert = true, true }
}

// WithTokenAuth turns on token authentication with an HS256 secret made for
// the test; b.Token signs tokens with it. Clients without credentials get
// the anonymous role if WithAnonymousRole set one, else are refused.
func WithTokenAuth() Option { return func(s *settings) { s.sec.token = true } }

// WithOAuth2 turns on token authentication (as WithTokenAuth) and serves an
// OAuth2 issuer whose tokens the broker accepts: register clients with
// b.AddOAuth2Client, and give a Pulsar client b.OAuth2Authentication.
func WithOAuth2() Option { return func(s *settings) { s.sec.token, s.sec.oauth2 = true, true } }

// WithTLSAuth turns on TLS authentication (and TLS): a client certificate's
// common name is the role (see b.ClientCertificate).
func WithTLSAuth() Option { return func(s *settings) { s.sec.tls, s.sec.tlsAuth = true, true } }

// WithAnonymousRole sets anonymousUserRole: the role of clients that present
// no credentials a provider serves.
func WithAnonymousRole(role string) Option { return func(s *settings) { s.sec.anonymousRole = role } }

// WithAuthorization turns authorization on with these super-user roles.
// Other roles need b.GrantNamespace, b.GrantTopic or b.SetTenantAdmins.
func WithAuthorization(superUsers ...string) Option {
	return func(s *settings) { s.sec.authorization, s.sec.superUsers = true, superUsers }
}

// securityOptions turns the settings into broker options; it also returns
// the token secret, if any.
func (s securitySettings) brokerOptions() ([]broker.Option, []byte, error) {
	var opts []broker.Option
	var secret []byte
	if s.authentication() {
		a := &auth.Authenticator{TLS: s.tlsAuth, AnonymousRole: s.anonymousRole}
		if s.token {
			secret = make([]byte, 32)
			if _, err := rand.Read(secret); err != nil {
				return nil, nil, err
			}
			a.Token = &auth.TokenVerifier{Secret: secret}
		}
		opts = append(opts, broker.WithAuthentication(a))
	}
	if s.authorization {
		opts = append(opts, broker.WithAuthorization(s.superUsers...))
	}
	return opts, secret, nil
}

// startTLS starts the pulsar+ssl:// listener with a CA of the test.
func (b *Broker) startTLS(s securitySettings) error {
	ca, err := newTestCA(b.tb.TempDir())
	if err != nil {
		return err
	}
	cfg, err := ca.serverConfig(s.requireClientCert)
	if err != nil {
		return err
	}
	b.ca = ca
	return b.srv.ListenTLS("127.0.0.1:0", cfg)
}

// TLSURL returns the broker's pulsar+ssl:// URL (Start needs WithTLS).
func (b *Broker) TLSURL() string {
	b.tb.Helper()
	b.needTLS()
	return b.srv.TLSURL()
}

// CAFile returns the path of the PEM file of the test's CA, which signed the
// broker's certificate (Start needs WithTLS).
func (b *Broker) CAFile() string {
	b.tb.Helper()
	b.needTLS()
	return b.ca.file
}

// TLSClient is a Client option that connects over TLS, trusting the test's
// CA and verifying the broker's host name.
func (b *Broker) TLSClient() func(*pulsar.ClientOptions) {
	b.tb.Helper()
	url, ca := b.TLSURL(), b.CAFile()
	return func(o *pulsar.ClientOptions) {
		o.URL, o.TLSTrustCertsFilePath, o.TLSValidateHostname = url, ca, true
	}
}

// ClientCertificate writes a client certificate with common name cn (the role
// under TLS authentication), signed by the test's CA, and its key; it
// returns their paths, as pulsar.NewAuthenticationTLS takes them.
func (b *Broker) ClientCertificate(cn string) (certFile, keyFile string) {
	b.tb.Helper()
	b.needTLS()
	certFile, keyFile, err := b.ca.clientFiles(cn)
	if err != nil {
		b.tb.Fatalf("pulsarsim: client certificate: %v", err)
	}
	return certFile, keyFile
}

func (b *Broker) needTLS() {
	b.tb.Helper()
	if b.ca == nil {
		b.tb.Fatal("pulsarsim: the broker serves no TLS; start it with testkit.WithTLS()")
	}
}

// Token returns a token for role that never expires (Start needs
// WithTokenAuth).
func (b *Broker) Token(role string) string { return b.token(map[string]any{"sub": role}) }

// TokenExpiring returns a token for role that expires at exp. The broker
// judges expiry by its clock (b.Clock, moved by b.Advance).
func (b *Broker) TokenExpiring(role string, exp time.Time) string {
	return b.token(map[string]any{"sub": role, "exp": exp.Unix()})
}

func (b *Broker) token(claims map[string]any) string {
	b.tb.Helper()
	if b.secret == nil {
		b.tb.Fatal("pulsarsim: no token authentication; start the broker with testkit.WithTokenAuth()")
	}
	tok, err := auth.SignToken(claims, b.secret)
	if err != nil {
		b.tb.Fatalf("pulsarsim: sign token: %v", err)
	}
	return tok
}

// GrantNamespace grants role the actions ("produce", "consume") on
// namespace ns ("tenant/ns"), which must exist.
func (b *Broker) GrantNamespace(ns, role string, actions ...string) {
	b.tb.Helper()
	if err := b.srv.GrantNamespacePermission(ns, role, actions); err != nil {
		b.tb.Fatalf("pulsarsim: grant on %s: %v", ns, err)
	}
}

// GrantTopic grants role the actions on topic (for a partitioned topic, on
// all its partitions).
func (b *Broker) GrantTopic(topic, role string, actions ...string) {
	b.tb.Helper()
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		b.tb.Fatalf("pulsarsim: grant on %s: %v", topic, err)
	}
	b.srv.GrantTopicPermission(tn, role, actions)
}

// SetTenantAdmins makes roles the admins of tenant, which must exist.
func (b *Broker) SetTenantAdmins(tenant string, roles ...string) {
	b.tb.Helper()
	if err := b.srv.SetTenantAdminRoles(tenant, roles); err != nil {
		b.tb.Fatalf("pulsarsim: admins of %s: %v", tenant, err)
	}
}

// Connections returns the broker's client connections: role, provider,
// credential expiry and whether a refresh challenge is pending.
func (b *Broker) Connections() []ConnectionSnapshot { return b.srv.Connections() }

// startIssuer serves the OAuth2 issuer on a loopback port of its own.
func (b *Broker) startIssuer() {
	b.issuer = &issuer.Issuer{Key: b.secret, Now: b.srv.Clock().Now}
	b.issuerSrv = httptest.NewServer(b.issuer)
}

// OAuth2IssuerURL returns the issuer URL (Start needs WithOAuth2).
func (b *Broker) OAuth2IssuerURL() string {
	b.tb.Helper()
	b.needIssuer()
	return b.issuerSrv.URL
}

// AddOAuth2Client registers a client of the issuer; its tokens carry role.
func (b *Broker) AddOAuth2Client(clientID, clientSecret, role string) {
	b.tb.Helper()
	b.needIssuer()
	b.issuer.AddClient(clientID, issuer.Client{Secret: clientSecret, Role: role})
}

// OAuth2Authentication returns pulsar-client-go's OAuth2 client-credentials
// authentication for a client of the issuer, with its key file written to
// the test's folder.
func (b *Broker) OAuth2Authentication(clientID, clientSecret string) pulsar.Authentication {
	b.tb.Helper()
	b.needIssuer()
	key, err := json.Marshal(map[string]string{"type": "client_credentials", "client_id": clientID,
		"client_secret": clientSecret, "issuer_url": b.issuerSrv.URL})
	if err != nil {
		b.tb.Fatal(err)
	}
	f, err := os.CreateTemp(b.tb.TempDir(), "oauth2-key-*.json")
	if err == nil {
		_, err = f.Write(key)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		b.tb.Fatalf("pulsarsim: OAuth2 key file: %v", err)
	}
	return pulsar.NewAuthenticationOAuth2(map[string]string{
		"type": "client_credentials", "issuerUrl": b.issuerSrv.URL, "clientId": clientID, "privateKey": f.Name(),
	})
}

func (b *Broker) needIssuer() {
	b.tb.Helper()
	if b.issuer == nil {
		b.tb.Fatal("pulsarsim: no OAuth2 issuer; start the broker with testkit.WithOAuth2()")
	}
}
