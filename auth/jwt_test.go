package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"
)

var now = time.Unix(1_800_000_000, 0)

func TestTokenVerifierAcceptsAKnownHS256Token(t *testing.T) {
	// The example token of the JWT introduction, signed elsewhere.
	tok := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	v := &TokenVerifier{Secret: []byte("your-256-bit-secret")}
	info, err := v.Verify(tok, now)
	if err != nil || info.Role != "1234567890" || !info.Expiry.IsZero() {
		t.Fatalf("got %+v, %v", info, err)
	}
	v.Secret = []byte("another-secret")
	if _, err := v.Verify(tok, now); err == nil {
		t.Fatal("a token checked with the wrong secret was accepted")
	}
}

func TestTokenVerifierAcceptsPaddedSignatures(t *testing.T) {
	// Tokens made by Pulsar's own tool end their signature with '='.
	secret := []byte("0123456789abcdef0123456789abcdef")
	tok, err := SignToken(map[string]any{"sub": "admin"}, secret)
	if err != nil {
		t.Fatal(err)
	}
	info, err := (&TokenVerifier{Secret: secret}).Verify(tok+"=", now)
	if err != nil || info.Role != "admin" {
		t.Fatalf("got %+v, %v", info, err)
	}
}

func TestTokenVerifierChecksEachAlgorithmWithItsKey(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	secret := []byte("0123456789abcdef0123456789abcdef")
	cases := []struct {
		name   string
		sign   any
		verify *TokenVerifier
		ok     bool
	}{
		{"HS256 with the secret", secret, &TokenVerifier{Secret: secret}, true},
		{"RS256 with the RSA public key", rk, &TokenVerifier{PublicKey: &rk.PublicKey}, true},
		{"ES256 with the EC public key", ek, &TokenVerifier{PublicKey: &ek.PublicKey}, true},
		{"RS256 against an EC key", rk, &TokenVerifier{PublicKey: &ek.PublicKey}, false},
		{"ES256 against an RSA key", ek, &TokenVerifier{PublicKey: &rk.PublicKey}, false},
		{"HS256 against a public key", secret, &TokenVerifier{PublicKey: &rk.PublicKey}, false},
	}
	for _, c := range cases {
		tok, err := SignToken(map[string]any{"sub": "r"}, c.sign)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.verify.Verify(tok, now)
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func TestTokenVerifierRefusesHMACSignedWithThePublicKeyBytes(t *testing.T) {
	// The classic algorithm-confusion attack: HS256 keyed with the public key.
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok, _ := SignToken(map[string]any{"sub": "attacker"}, pemKey)
	if _, err := (&TokenVerifier{PublicKey: &rk.PublicKey}).Verify(tok, now); err == nil {
		t.Fatal("an HS256 token was accepted by a public-key verifier")
	}
}

func TestTokenVerifierRefusesUnsignedTokens(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	tok := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"sub":"admin"}`)) + "."
	if _, err := (&TokenVerifier{Secret: []byte("k")}).Verify(tok, now); err == nil {
		t.Fatal("alg none accepted")
	}
}

func TestTokenVerifierEnforcesTimesAndClaims(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	v := &TokenVerifier{Secret: secret}
	sign := func(c map[string]any) string {
		tok, err := SignToken(c, secret)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cases := []struct {
		name   string
		claims map[string]any
		want   string // role, or "" for a refusal
	}{
		{"future exp", map[string]any{"sub": "a", "exp": now.Add(time.Minute).Unix()}, "a"},
		{"past exp", map[string]any{"sub": "a", "exp": now.Add(-time.Second).Unix()}, ""},
		{"exp now", map[string]any{"sub": "a", "exp": now.Unix()}, ""},
		{"nbf in the future", map[string]any{"sub": "a", "nbf": now.Add(time.Hour).Unix()}, ""},
		{"nbf in the past", map[string]any{"sub": "a", "nbf": now.Add(-time.Hour).Unix()}, "a"},
		{"no sub", map[string]any{"name": "a"}, ""},
		{"sub not a string", map[string]any{"sub": 7}, ""},
		{"exp not a number", map[string]any{"sub": "a", "exp": "soon"}, ""},
	}
	for _, c := range cases {
		info, err := v.Verify(sign(c.claims), now)
		if info.Role != c.want && c.want != "" || (c.want == "") != (err != nil) {
			t.Errorf("%s: got %+v, %v; want role %q", c.name, info, err, c.want)
		}
	}
	_, err := v.Verify(sign(map[string]any{"sub": "a", "exp": now.Add(-time.Second).Unix()}), now)
	if !errors.Is(err, ErrTokenExpired) {
		t.Errorf("expired token: %v, want ErrTokenExpired", err)
	}
	skewed := &TokenVerifier{Secret: secret, ClockSkew: time.Minute}
	if _, err := skewed.Verify(sign(map[string]any{"sub": "a", "exp": now.Add(-time.Second).Unix()}), now); err != nil {
		t.Errorf("clock skew not applied: %v", err)
	}
}

func TestTokenVerifierReadsTheConfiguredRoleAndAudienceClaims(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tok, _ := SignToken(map[string]any{"sub": "x", "role": "ops", "aud": []string{"pulsar", "other"}}, secret)
	v := &TokenVerifier{Secret: secret, RoleClaim: "role", Audience: "pulsar"}
	if info, err := v.Verify(tok, now); err != nil || info.Role != "ops" {
		t.Fatalf("got %+v, %v", info, err)
	}
	v.Audience = "kafka"
	if _, err := v.Verify(tok, now); err == nil {
		t.Fatal("wrong audience accepted")
	}
}

func TestDecodeKeysReadsPulsarsFormats(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	for name, data := range map[string][]byte{
		"DER":    der,
		"PEM":    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		"base64": []byte("data:;base64," + base64.StdEncoding.EncodeToString(der)),
	} {
		k, err := DecodePublicKey(data)
		if err != nil || !k.(*rsa.PublicKey).Equal(&rk.PublicKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	got, err := DecodeSecretKey([]byte("data:;base64," + base64.StdEncoding.EncodeToString([]byte("raw-key"))))
	if err != nil || string(got) != "raw-key" {
		t.Errorf("base64 secret: %q %v", got, err)
	}
	if got, _ := DecodeSecretKey([]byte{0xff, 0x01}); string(got) != "\xff\x01" {
		t.Errorf("raw secret: %q", got)
	}
	if _, err := DecodePublicKey([]byte("not a key")); err == nil || !strings.Contains(err.Error(), "public key") {
		t.Errorf("garbage key: %v", err)
	}
}
