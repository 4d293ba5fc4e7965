// Package issuer serves a small OAuth 2.0 authorization server for tests:
// the OpenID discovery document and a token endpoint for the client
// credentials grant, issuing JSON Web Tokens that pulsarsim's token provider
// accepts. A Pulsar client configured for OAuth2 then authenticates end to
// end with no outside service.
package issuer

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/auth"
)

// Paths the issuer serves, relative to its base URL.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	TokenPath     = "/oauth2/token"
)

// Client is a registered OAuth2 client.
type Client struct {
	Secret string
	// Role is the token's sub claim; "" means the client id.
	Role string
}

// Issuer is an http.Handler for DiscoveryPath and TokenPath.
type Issuer struct {
	// Key signs the tokens: the broker's HS256 secret ([]byte), or the
	// private key (*rsa.PrivateKey, *ecdsa.PrivateKey) of its public key.
	Key any
	// TTL is the tokens' lifetime; 0 means one hour.
	TTL time.Duration
	// Now is the clock of the tokens' iat and exp; nil means time.Now. Give
	// it the broker's clock so that expiry follows it.
	Now func() time.Time

	mu      sync.Mutex
	clients map[string]Client
}

// AddClient registers (or replaces) a client.
func (i *Issuer) AddClient(id string, c Client) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clients == nil {
		i.clients = map[string]Client{}
	}
	i.clients[id] = c
}

// ServeHTTP serves the discovery document and the token endpoint.
func (i *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case DiscoveryPath:
		base := baseURL(r)
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                base,
			"token_endpoint":                        base + TokenPath,
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
		})
	case TokenPath:
		i.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, oauthError("invalid_request", "use POST"))
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", err.Error()))
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, oauthError("unsupported_grant_type", "only client_credentials is served"))
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	i.mu.Lock()
	c, known := i.clients[id]
	i.mu.Unlock()
	if !known || subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) != 1 {
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_client", "unknown client or wrong secret"))
		return
	}
	role := c.Role
	if role == "" {
		role = id
	}
	now, ttl := i.now(), i.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	claims := map[string]any{"sub": role, "iss": baseURL(r), "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	if aud := r.PostForm.Get("audience"); aud != "" {
		claims["aud"] = aud
	}
	tok, err := auth.SignToken(claims, i.Key)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, oauthError("server_error", err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "token_type": "Bearer", "expires_in": int(ttl / time.Second),
	})
}

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// baseURL is the issuer URL as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + strings.TrimSuffix(r.Host, "/")
}

func oauthError(code, desc string) map[string]string {
	return map[string]string{"error": code, "error_description": desc}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
