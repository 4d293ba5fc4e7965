package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"strings"
	"time"
)

// TokenVerifier checks JSON Web Tokens as Pulsar's AuthenticationProviderToken
// does: the signature against a secret key (HS*) or a public key (RS*, ES*),
// the expiry and not-before times, an optional audience, and the claim that
// names the role.
type TokenVerifier struct {
	// Secret is the HMAC key (tokenSecretKey). Either Secret or PublicKey is set.
	Secret []byte
	// PublicKey is an *rsa.PublicKey or *ecdsa.PublicKey (tokenPublicKey).
	PublicKey crypto.PublicKey
	// RoleClaim names the claim holding the role (tokenAuthClaim); "" means "sub".
	RoleClaim string
	// AudienceClaim and Audience, when Audience is set, require the token's
	// audience claim ("aud" unless AudienceClaim says otherwise) to contain
	// Audience (tokenAudienceClaim, tokenAudience).
	AudienceClaim, Audience string
	// ClockSkew is the leeway on exp and nbf (tokenAllowedClockSkewSeconds).
	ClockSkew time.Duration
}

// TokenInfo is what a verified token says.
type TokenInfo struct {
	Role string
	// Expiry is the exp claim, zero when the token never expires.
	Expiry time.Time
}

// ErrTokenExpired reports a token whose exp claim has passed.
var ErrTokenExpired = errors.New("auth: token expired")

// Verify checks token at time now and returns its role and expiry.
func (v *TokenVerifier) Verify(token string, now time.Time) (TokenInfo, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return TokenInfo{}, errors.New("auth: a token has three dot-separated parts")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodePart(parts[0], &header); err != nil {
		return TokenInfo{}, fmt.Errorf("auth: token header: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil {
		return TokenInfo{}, fmt.Errorf("auth: token signature: %w", err)
	}
	if err := v.checkSignature(header.Alg, parts[0]+"."+parts[1], sig); err != nil {
		return TokenInfo{}, err
	}
	var claims map[string]any
	if err := decodePart(parts[1], &claims); err != nil {
		return TokenInfo{}, fmt.Errorf("auth: token claims: %w", err)
	}
	return v.checkClaims(claims, now)
}

func (v *TokenVerifier) checkClaims(claims map[string]any, now time.Time) (TokenInfo, error) {
	var info TokenInfo
	if exp, ok, err := numericDate(claims, "exp"); err != nil {
		return info, err
	} else if ok {
		info.Expiry = exp
		if !now.Before(exp.Add(v.ClockSkew)) {
			return info, ErrTokenExpired
		}
	}
	if nbf, ok, err := numericDate(claims, "nbf"); err != nil {
		return info, err
	} else if ok && now.Add(v.ClockSkew).Before(nbf) {
		return info, errors.New("auth: token not valid yet (nbf)")
	}
	if v.Audience != "" && !hasAudience(claims, v.audienceClaim(), v.Audience) {
		return info, errors.New("auth: token audience does not match")
	}
	claim := v.RoleClaim
	if claim == "" {
		claim = "sub"
	}
	role, _ := claims[claim].(string)
	if role == "" {
		return info, fmt.Errorf("auth: token has no %q claim", claim)
	}
	info.Role = role
	return info, nil
}

func (v *TokenVerifier) audienceClaim() string {
	if v.AudienceClaim == "" {
		return "aud"
	}
	return v.AudienceClaim
}

func hasAudience(claims map[string]any, claim, want string) bool {
	switch a := claims[claim].(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if s, _ := x.(string); s == want {
				return true
			}
		}
	}
	return false
}

func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	raw, ok := claims[name]
	if !ok || raw == nil {
		return time.Time{}, false, nil
	}
	f, ok := raw.(float64)
	if !ok {
		return time.Time{}, false, fmt.Errorf("auth: token claim %q is not a number", name)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true, nil
}

func decodePart(part string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// hashFor returns the hash of an algorithm's size suffix (256, 384, 512).
func hashFor(alg string) (crypto.Hash, func() hash.Hash, bool) {
	switch {
	case strings.HasSuffix(alg, "256"):
		return crypto.SHA256, sha256.New, true
	case strings.HasSuffix(alg, "384"):
		return crypto.SHA384, sha512.New384, true
	case strings.HasSuffix(alg, "512"):
		return crypto.SHA512, sha512.New, true
	}
	return 0, nil, false
}

func (v *TokenVerifier) checkSignature(alg, signed string, sig []byte) error {
	h, newHash, ok := hashFor(alg)
	if !ok || len(alg) != 5 {
		return fmt.Errorf("auth: token algorithm %q not accepted", alg)
	}
	bad := errors.New("auth: token signature does not verify")
	switch alg[:2] {
	case "HS":
		if v.Secret == nil {
			return bad
		}
		m := hmac.New(newHash, v.Secret)
		m.Write([]byte(signed))
		if !hmac.Equal(m.Sum(nil), sig) {
			return bad
		}
		return nil
	case "RS", "ES":
		d := newHash()
		d.Write([]byte(signed))
		sum := d.Sum(nil)
		switch k := v.PublicKey.(type) {
		case *rsa.PublicKey:
			if alg[:2] == "RS" && rsa.VerifyPKCS1v15(k, h, sum, sig) == nil {
				return nil
			}
		case *ecdsa.PublicKey:
			n := (k.Curve.Params().BitSize + 7) / 8
			if alg[:2] == "ES" && len(sig) == 2*n &&
				ecdsa.Verify(k, sum, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])) {
				return nil
			}
		}
		return bad
	}
	return fmt.Errorf("auth: token algorithm %q not accepted", alg)
}

// SignToken makes a JSON Web Token of claims. key is a []byte secret (HS256),
// an *rsa.PrivateKey (RS256) or an *ecdsa.PrivateKey (ES256 on P-256).
func SignToken(claims map[string]any, key any) (string, error) {
	var alg string
	switch key.(type) {
	case []byte:
		alg = "HS256"
	case *rsa.PrivateKey:
		alg = "RS256"
	case *ecdsa.PrivateKey:
		alg = "ES256"
	default:
		return "", fmt.Errorf("auth: cannot sign with a %T", key)
	}
	hdr, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := base64.RawURLEncoding.EncodeToString(hdr) + "." + base64.RawURLEncoding.EncodeToString(body)
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	switch k := key.(type) {
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(signed))
		sig = m.Sum(nil)
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, sum[:])
		if err == nil {
			n := (k.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*n)
			r.FillBytes(sig[:n])
			s.FillBytes(sig[n:])
		}
	}
	if err != nil {
		return "", err
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// DecodeSecretKey reads a tokenSecretKey value's bytes: raw key bytes as
// `pulsar tokens create-secret-key` writes them, or base64 text after a
// "data:;base64," prefix, as Pulsar accepts.
func DecodeSecretKey(data []byte) ([]byte, error) {
	s := string(data)
	if rest, ok := strings.CutPrefix(s, "data:;base64,"); ok {
		return base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	}
	if len(data) == 0 {
		return nil, errors.New("auth: empty secret key")
	}
	return data, nil
}

// DecodePublicKey reads a tokenPublicKey: a PKIX public key in DER (as
// `pulsar tokens create-key-pair` writes it) or PEM, or base64 DER after a
// "data:;base64," prefix.
func DecodePublicKey(data []byte) (crypto.PublicKey, error) {
	if rest, ok := strings.CutPrefix(string(data), "data:;base64,"); ok {
		der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
		if err != nil {
			return nil, err
		}
		data = der
	}
	if blk, _ := pem.Decode(data); blk != nil {
		data = blk.Bytes
	}
	k, err := x509.ParsePKIXPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("auth: public key: %w", err)
	}
	switch k.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("auth: public key of type %T not supported", k)
}
