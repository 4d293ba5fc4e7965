package issuer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/auth"
)

func post(t *testing.T, srv *httptest.Server, form url.Values, basic ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+TokenPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestIssuerGrantsTokensTheTokenProviderAccepts(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	iss := &Issuer{Key: secret, TTL: time.Minute, Now: func() time.Time { return now }}
	iss.AddClient("app", Client{Secret: "pw", Role: "app-role"})
	iss.AddClient("plain", Client{Secret: "pw2"})
	srv := httptest.NewServer(iss)
	defer srv.Close()

	resp, err := http.Get(srv.URL + DiscoveryPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if doc["issuer"] != srv.URL || doc["token_endpoint"] != srv.URL+TokenPath {
		t.Fatalf("discovery %v", doc)
	}

	verifier := &auth.TokenVerifier{Secret: secret, Audience: "pulsar"}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"app"}, "client_secret": {"pw"}, "audience": {"pulsar"}}
	code, body := post(t, srv, form)
	if code != 200 || body["token_type"] != "Bearer" || body["expires_in"] != float64(60) {
		t.Fatalf("%d %v", code, body)
	}
	info, err := verifier.Verify(body["access_token"].(string), now)
	if err != nil || info.Role != "app-role" || !info.Expiry.Equal(now.Add(time.Minute)) {
		t.Fatalf("token: %+v %v", info, err)
	}
	if _, err := verifier.Verify(body["access_token"].(string), now.Add(time.Minute)); err == nil {
		t.Fatal("the token outlived its TTL")
	}

	code, body = post(t, srv, url.Values{"grant_type": {"client_credentials"}}, "plain", "pw2")
	if code != 200 {
		t.Fatalf("basic client auth: %d %v", code, body)
	}
	if info, err := (&auth.TokenVerifier{Secret: secret}).Verify(body["access_token"].(string), now); err != nil || info.Role != "plain" {
		t.Fatalf("role defaults to the client id: %+v %v", info, err)
	}

	for name, f := range map[string]url.Values{
		"wrong secret":   {"grant_type": {"client_credentials"}, "client_id": {"app"}, "client_secret": {"no"}},
		"unknown client": {"grant_type": {"client_credentials"}, "client_id": {"who"}, "client_secret": {"pw"}},
		"other grant":    {"grant_type": {"password"}, "client_id": {"app"}, "client_secret": {"pw"}},
	} {
		if code, body := post(t, srv, f); code/100 != 4 || body["error"] == nil {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
}
