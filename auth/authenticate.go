package auth

import (
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The authentication method names clients send (auth_method_name on the
// binary protocol, X-Pulsar-Auth-Method-Name over HTTP). OAuth2 clients send
// "token": their access token is a JSON Web Token.
const (
	MethodToken = "token"
	MethodBasic = "basic"
	MethodTLS   = "tls"
)

// Authenticator chooses a provider for a client's credentials and returns
// the client's role, as Pulsar's AuthenticationService does with the
// providers Token, Basic and Tls configured.
type Authenticator struct {
	// Token, when set, enables the token provider.
	Token *TokenVerifier
	// Basic, when set, enables the basic provider with these users.
	Basic Htpasswd
	// TLS enables the TLS provider: the client certificate's common name is
	// the role.
	TLS bool
	// AnonymousRole (anonymousUserRole) is the role of a client that names
	// no configured provider; "" refuses such clients.
	AnonymousRole string
}

// Credentials are what a client presents.
type Credentials struct {
	// Method is the auth_method_name ("" or "none" when there is none).
	Method string
	// Data is the auth_data: a token, or "user:password" for basic.
	Data []byte
	// PeerCertificates is the verified client certificate chain of a TLS
	// connection, leaf first; empty without TLS or without a client cert.
	PeerCertificates []*x509.Certificate
}

// Identity is an authenticated client.
type Identity struct {
	Role string
	// Method is the provider that accepted the client ("" for the anonymous
	// role).
	Method string
	// Expiry is when the credentials stop being valid; zero for never. The
	// broker challenges a client whose credentials have expired.
	Expiry time.Time
}

// Expired reports whether the identity's credentials have expired at now.
func (id Identity) Expired(now time.Time) bool {
	return !id.Expiry.IsZero() && !now.Before(id.Expiry)
}

// ErrNoAnonymousRole is the error for a client without credentials when no
// anonymous role is configured.
var ErrNoAnonymousRole = errors.New("auth: no anonymous role, and no authentication provider named")

// Connect authenticates the credentials of a binary CONNECT (or of an
// AUTH_RESPONSE). A method no provider serves, or none at all, gets the
// anonymous role, as on Pulsar.
func (a *Authenticator) Connect(c Credentials, now time.Time) (Identity, error) {
	if !a.serves(c.Method) {
		if a.AnonymousRole == "" {
			return Identity{}, ErrNoAnonymousRole
		}
		return Identity{Role: a.AnonymousRole}, nil
	}
	return a.authenticate(c.Method, c.Data, c.PeerCertificates, now)
}

func (a *Authenticator) serves(method string) bool {
	switch method {
	case MethodToken:
		return a.Token != nil
	case MethodBasic:
		return a.Basic != nil
	case MethodTLS:
		return a.TLS
	}
	return false
}

// methods lists the configured providers in Pulsar's usual order.
func (a *Authenticator) methods() []string {
	var m []string
	for _, name := range []string{MethodTLS, MethodToken, MethodBasic} {
		if a.serves(name) {
			m = append(m, name)
		}
	}
	return m
}

func (a *Authenticator) authenticate(method string, data []byte, certs []*x509.Certificate, now time.Time) (Identity, error) {
	switch method {
	case MethodToken:
		info, err := a.Token.Verify(strings.TrimSpace(string(data)), now)
		if err != nil {
			return Identity{}, err
		}
		return Identity{Role: info.Role, Method: method, Expiry: info.Expiry}, nil
	case MethodBasic:
		user, pass, ok := strings.Cut(string(data), ":")
		if !ok || !a.Basic.Check(user, pass) {
			return Identity{}, errors.New("auth: unknown user or wrong password")
		}
		return Identity{Role: user, Method: method}, nil
	case MethodTLS:
		if len(certs) == 0 || certs[0].Subject.CommonName == "" {
			return Identity{}, errors.New("auth: no client certificate with a common name")
		}
		return Identity{Role: certs[0].Subject.CommonName, Method: method}, nil
	}
	return Identity{}, fmt.Errorf("auth: no provider for %q", method)
}

// HTTPRequest is what an admin API request presents.
type HTTPRequest struct {
	// Authorization is the Authorization header ("Bearer …", "Basic …").
	Authorization string
	// Method is the X-Pulsar-Auth-Method-Name header, usually empty.
	Method string
	// PeerCertificates is the verified client chain of an HTTPS request.
	PeerCertificates []*x509.Certificate
}

// ErrUnsupportedMethod is the error for an HTTP request naming a method no
// provider serves.
var ErrUnsupportedMethod = errors.New("auth: unsupported authentication method")

// HTTP authenticates an admin API request as Pulsar's web service does: the
// provider the request names, or else each provider in turn; when none
// accepts the request the anonymous role applies, if there is one.
func (a *Authenticator) HTTP(r HTTPRequest, now time.Time) (Identity, error) {
	if r.Method != "" {
		if !a.serves(r.Method) {
			return Identity{}, ErrUnsupportedMethod
		}
		return a.httpProvider(r.Method, r, now)
	}
	var last error = ErrNoAnonymousRole
	for _, m := range a.methods() {
		id, err := a.httpProvider(m, r, now)
		if err == nil {
			return id, nil
		}
		last = err
	}
	if a.AnonymousRole != "" {
		return Identity{Role: a.AnonymousRole}, nil
	}
	return Identity{}, last
}

func (a *Authenticator) httpProvider(method string, r HTTPRequest, now time.Time) (Identity, error) {
	switch method {
	case MethodToken:
		tok, ok := strings.CutPrefix(r.Authorization, "Bearer ")
		if !ok {
			return Identity{}, errors.New("auth: no bearer token")
		}
		return a.authenticate(method, []byte(tok), nil, now)
	case MethodBasic:
		enc, ok := strings.CutPrefix(r.Authorization, "Basic ")
		if !ok {
			return Identity{}, errors.New("auth: no basic credentials")
		}
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return Identity{}, err
		}
		return a.authenticate(method, dec, nil, now)
	}
	return a.authenticate(method, nil, r.PeerCertificates, now)
}
