package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

func suiteAuthenticator(t *testing.T) (*Authenticator, []byte) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	users, err := ParseHtpasswd([]byte("admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"))
	if err != nil {
		t.Fatal(err)
	}
	return &Authenticator{Token: &TokenVerifier{Secret: secret}, Basic: users, TLS: true, AnonymousRole: "anonymous"}, secret
}

func clientCert(cn string) []*x509.Certificate {
	return []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}}
}

func TestConnectPicksTheNamedProvider(t *testing.T) {
	a, secret := suiteAuthenticator(t)
	tok, _ := SignToken(map[string]any{"sub": "token-principal", "exp": now.Add(time.Hour).Unix()}, secret)
	expired, _ := SignToken(map[string]any{"sub": "token-principal", "exp": now.Add(-time.Hour).Unix()}, secret)
	cases := []struct {
		name string
		c    Credentials
		role string // "" = refused
	}{
		{"no method", Credentials{}, "anonymous"},
		{"none", Credentials{Method: "none"}, "anonymous"},
		{"unknown method", Credentials{Method: "foo", Data: []byte("x")}, "anonymous"},
		{"token", Credentials{Method: "token", Data: []byte(tok)}, "token-principal"},
		{"expired token", Credentials{Method: "token", Data: []byte(expired)}, ""},
		{"empty token", Credentials{Method: "token"}, ""},
		{"basic", Credentials{Method: "basic", Data: []byte("admin:123456")}, "admin"},
		{"basic wrong password", Credentials{Method: "basic", Data: []byte("admin:12345")}, ""},
		{"basic without colon", Credentials{Method: "basic", Data: []byte("admin")}, ""},
		{"tls with a certificate", Credentials{Method: "tls", PeerCertificates: clientCert("admin")}, "admin"},
		{"tls without a certificate", Credentials{Method: "tls"}, ""},
		{"token beside a certificate", Credentials{Method: "token", Data: []byte(tok), PeerCertificates: clientCert("admin")}, "token-principal"},
	}
	for _, c := range cases {
		id, err := a.Connect(c.c, now)
		if id.Role != c.role || (c.role == "") != (err != nil) {
			t.Errorf("%s: got %+v, %v; want role %q", c.name, id, err, c.role)
		}
	}
	id, _ := a.Connect(Credentials{Method: "token", Data: []byte(tok)}, now)
	if !id.Expiry.Equal(time.Unix(now.Add(time.Hour).Unix(), 0)) || id.Expired(now) || !id.Expired(now.Add(time.Hour)) {
		t.Errorf("expiry %v", id.Expiry)
	}
}

func TestConnectWithoutAnonymousRoleRefusesClientsWithoutCredentials(t *testing.T) {
	a, _ := suiteAuthenticator(t)
	a.AnonymousRole = ""
	if _, err := a.Connect(Credentials{}, now); !errors.Is(err, ErrNoAnonymousRole) {
		t.Fatalf("got %v", err)
	}
	a.Basic = nil
	if _, err := a.Connect(Credentials{Method: "basic", Data: []byte("admin:123456")}, now); err == nil {
		t.Fatal("a disabled provider authenticated a client")
	}
}

func TestHTTPFallsBackToTheAnonymousRole(t *testing.T) {
	a, secret := suiteAuthenticator(t)
	tok, _ := SignToken(map[string]any{"sub": "token-principal"}, secret)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:123456"))
	cases := []struct {
		name string
		r    HTTPRequest
		role string
	}{
		{"nothing", HTTPRequest{}, "anonymous"},
		{"bearer", HTTPRequest{Authorization: "Bearer " + tok}, "token-principal"},
		{"bad bearer", HTTPRequest{Authorization: "Bearer abc"}, "anonymous"},
		{"basic", HTTPRequest{Authorization: basic}, "admin"},
		{"client certificate", HTTPRequest{PeerCertificates: clientCert("superUser")}, "superUser"},
		{"certificate and basic", HTTPRequest{Authorization: basic, PeerCertificates: clientCert("cn")}, "cn"},
		{"named method", HTTPRequest{Method: "basic", Authorization: basic, PeerCertificates: clientCert("cn")}, "admin"},
	}
	for _, c := range cases {
		id, err := a.HTTP(c.r, now)
		if err != nil || id.Role != c.role {
			t.Errorf("%s: got %+v, %v; want %q", c.name, id, err, c.role)
		}
	}
	if _, err := a.HTTP(HTTPRequest{Method: "kerberos"}, now); !errors.Is(err, ErrUnsupportedMethod) {
		t.Errorf("unknown named method: %v", err)
	}
	a.AnonymousRole = ""
	if _, err := a.HTTP(HTTPRequest{Authorization: "Bearer abc"}, now); err == nil {
		t.Error("a bad token passed without an anonymous role")
	}
}
