package admin_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// startSecured starts a broker with the client suite's security settings:
// token and basic authentication, the anonymous role, authorization with
// the super-user "admin".
func startSecured(t *testing.T, anonymous string) (*broker.Broker, string) {
	t.Helper()
	users, err := auth.ParseHtpasswd([]byte("admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"))
	if err != nil {
		t.Fatal(err)
	}
	return serveAdmin(t,
		broker.WithAuthentication(&auth.Authenticator{Token: &auth.TokenVerifier{Secret: testSecret}, Basic: users, AnonymousRole: anonymous}),
		broker.WithAuthorization("admin"),
	)
}

func bearer(role string) string {
	tok, err := auth.SignToken(map[string]any{"sub": role}, testSecret)
	if err != nil {
		panic(err)
	}
	return "Bearer " + tok
}

// httpCall makes one request and returns the status and the body.
func httpCall(t *testing.T, method, url, authz, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func reason(body string) string {
	var r struct{ Reason string }
	_ = json.Unmarshal([]byte(body), &r)
	return r.Reason
}

func TestAdminRefusesWhatTheRoleMayNotDoWithPulsarsAnswers(t *testing.T) {
	_, url := startSecured(t, "anonymous")
	cases := []struct {
		name, method, path, authz string
		status                    int
		reason                    string
	}{
		{"anonymous lists tenants", "GET", "/admin/v2/tenants", "", 401,
			"Unauthorized to validateBothTenantOperationAndSuperUser for originalPrincipal [null] and clientAppId [anonymous] about operation [LIST_TENANTS] "},
		{"a bad token falls back to the anonymous role", "GET", "/admin/v2/tenants", "Bearer abc", 401,
			"Unauthorized to validateBothTenantOperationAndSuperUser for originalPrincipal [null] and clientAppId [anonymous] about operation [LIST_TENANTS] "},
		{"a role creates a tenant", "PUT", "/admin/v2/tenants/t1", bearer("bob"), 401,
			"Unauthorized to validateBothTenantOperationAndSuperUser for originalPrincipal [null] and clientAppId [bob] about operation [CREATE_TENANT] "},
		{"a role looks a topic up", "GET", "/admin/v2/persistent/public/default/h1/partitions?checkAllowAutoCreation=true", bearer("bob"), 401,
			"Unauthorized to validateTopicOperation for operation [LOOKUP] on topic [persistent://public/default/h1]"},
		{"HTTP lookup", "GET", "/lookup/v2/topic/persistent/public/default/h1", bearer("bob"), 401,
			"Unauthorized to validateTopicOperation for operation [LOOKUP] on topic [persistent://public/default/h1]"},
		{"stats", "GET", "/admin/v2/persistent/public/default/h1/stats", "", 401,
			"Unauthorized to validateTopicOperation for operation [GET_STATS] on topic [persistent://public/default/h1]"},
		{"a role peeks", "GET", "/admin/v2/persistent/public/default/h1/subscription/s/position/1", bearer("bob"), 401,
			"Unauthorized to validateTopicOperation for operation [PEEK_MESSAGES] on topic [persistent://public/default/h1]"},
		{"a role asks the last message id", "GET", "/admin/v2/persistent/public/default/h1/lastMessageId", bearer("bob"), 401,
			"Unauthorized to validateTopicOperation for operation [PEEK_MESSAGES] on topic [persistent://public/default/h1]"},
		{"a role grants", "POST", "/admin/v2/namespaces/public/default/permissions/x", bearer("bob"), 403,
			"Unauthorized to validateNamespaceOperation for operation [GRANT_PERMISSION] on namespace [public/default]"},
	}
	for _, c := range cases {
		status, body := httpCall(t, c.method, url+c.path, c.authz, `["consume"]`)
		if status != c.status || reason(body) != c.reason {
			t.Errorf("%s: %d %s, want %d %q", c.name, status, body, c.status, c.reason)
		}
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:123456"))
	for _, authz := range []string{bearer("admin"), basic} {
		if status, body := httpCall(t, "GET", url+"/admin/v2/tenants", authz, ""); status != 200 {
			t.Errorf("super-user with %.6s: %d %s", authz, status, body)
		}
	}
}

func TestAdminWithoutAnonymousRoleWantsCredentials(t *testing.T) {
	_, url := startSecured(t, "")
	status, body := httpCall(t, "GET", url+"/admin/v2/persistent/public/default/x/partitions", "Bearer abc", "")
	if status != 401 || !strings.Contains(body, "Authentication required") {
		t.Fatalf("%d %s", status, body)
	}
}

func TestAdminGrantsAndRevokesPermissions(t *testing.T) {
	b, url := startSecured(t, "anonymous")
	admin := bearer("admin")
	ns := url + "/admin/v2/namespaces/public/default/permissions"
	if status, body := httpCall(t, "POST", ns+"/alice", admin, `["produce","consume"]`); status != 204 {
		t.Fatalf("grant: %d %s", status, body)
	}
	if status, body := httpCall(t, "GET", ns, admin, ""); status != 200 || body != `{"alice":["produce","consume"]}` {
		t.Fatalf("permissions: %d %s", status, body)
	}
	if status, _ := httpCall(t, "GET", url+"/admin/v2/persistent/public/default/h1/partitions?checkAllowAutoCreation=true", bearer("alice"), ""); status != 200 {
		t.Fatalf("alice after the grant: %d", status)
	}
	if status, body := httpCall(t, "POST", ns+"/alice", admin, ""); status != 400 || reason(body) != "Actions should not be null" {
		t.Fatalf("grant without actions: %d %s", status, body)
	}
	if status, body := httpCall(t, "POST", url+"/admin/v2/namespaces/public/none/permissions/alice", admin, `["produce"]`); status != 404 ||
		reason(body) != "Topic's namespace does not exist" {
		t.Fatalf("grant on a missing namespace: %d %s", status, body)
	}

	topic := url + "/admin/v2/persistent/public/default/orders/permissions"
	if status, body := httpCall(t, "POST", topic+"/bob", admin, `["consume"]`); status != 404 ||
		reason(body) != "Topic persistent://public/default/orders not found" {
		t.Fatalf("grant on a missing topic: %d %s", status, body)
	}
	if err := b.CreateTopic("persistent://public/default/orders"); err != nil {
		t.Fatal(err)
	}
	if status, body := httpCall(t, "POST", topic+"/bob", admin, `["consume"]`); status != 204 {
		t.Fatalf("topic grant: %d %s", status, body)
	}
	// Pulsar answers the namespace's grants with the topic's.
	if status, body := httpCall(t, "GET", topic, admin, ""); status != 200 || body != `{"alice":["produce","consume"],"bob":["consume"]}` {
		t.Fatalf("topic permissions: %d %s", status, body)
	}
	if status, _ := httpCall(t, "GET", url+"/admin/v2/persistent/public/default/orders/stats", bearer("bob"), ""); status != 200 {
		t.Fatalf("bob's stats after the topic grant: %d", status)
	}
	for _, path := range []string{topic + "/bob", ns + "/alice"} {
		if status, body := httpCall(t, "DELETE", path, admin, ""); status != 204 {
			t.Fatalf("revoke %s: %d %s", path, status, body)
		}
	}
	if status, _ := httpCall(t, "GET", url+"/admin/v2/persistent/public/default/orders/stats", bearer("bob"), ""); status != 401 {
		t.Fatalf("bob after the revoke: %d", status)
	}
}

func TestAdminTenantAdminRolesGovernTheTenant(t *testing.T) {
	_, url := startSecured(t, "anonymous")
	admin := bearer("admin")
	if status, body := httpCall(t, "PUT", url+"/admin/v2/tenants/acme", admin, `{"adminRoles":["ops"],"allowedClusters":["standalone"]}`); status != 204 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := httpCall(t, "GET", url+"/admin/v2/tenants/acme", admin, ""); status != 200 || !strings.Contains(body, `"adminRoles":["ops"]`) {
		t.Fatalf("get: %d %s", status, body)
	}
	if status, body := httpCall(t, "PUT", url+"/admin/v2/namespaces/acme/ns", bearer("ops"), ""); status != 204 {
		t.Fatalf("tenant admin creates a namespace: %d %s", status, body)
	}
	if status, _ := httpCall(t, "PUT", url+"/admin/v2/namespaces/acme/ns2", bearer("dev"), ""); status != 403 {
		t.Fatalf("a stranger creates a namespace: %d", status)
	}
	if status, body := httpCall(t, "POST", url+"/admin/v2/tenants/acme", admin, `{"adminRoles":["dev"],"allowedClusters":["standalone"]}`); status != 204 {
		t.Fatalf("update: %d %s", status, body)
	}
	if status, _ := httpCall(t, "PUT", url+"/admin/v2/namespaces/acme/ns2", bearer("dev"), ""); status != 204 {
		t.Fatalf("the new admin creates a namespace: %d", status)
	}
	if status, body := httpCall(t, "POST", url+"/admin/v2/tenants/nope", admin, `{"adminRoles":[]}`); status != 404 || reason(body) != "Tenant nope not found" {
		t.Fatalf("update a missing tenant: %d %s", status, body)
	}
}

func TestAdminWebViewIsForSuperUsersWhenAuthorizationIsOn(t *testing.T) {
	users, err := auth.ParseHtpasswd([]byte("admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.WithAuthentication(&auth.Authenticator{Basic: users, AnonymousRole: "anonymous"}),
		broker.WithAuthorization("admin"))
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the view") })
	srv := httptest.NewServer(admin.New(b, admin.WithHandler("/view/", page)))
	t.Cleanup(func() {
		srv.Close()
		b.Close()
	})
	req, _ := http.NewRequest("GET", srv.URL+"/view/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("anonymous: %d %v", resp.StatusCode, resp.Header)
	}
	req.SetBasicAuth("admin", "123456")
	if status, body := httpCall(t, "GET", srv.URL+"/view/", req.Header.Get("Authorization"), ""); status != 200 || body != "the view" {
		t.Fatalf("super-user: %d %s", status, body)
	}
}

// The cluster metadata, broker configuration, broker stats and resource
// quotas are a super-user's, as in Pulsar: another role gets the refusal
// the runtime configuration gets.
func TestAdminClusterAndBrokerRoutesAreForSuperUsers(t *testing.T) {
	_, url := startSecured(t, "anonymous")
	wantStatus, wantBody := httpCall(t, "GET", url+"/admin/v2/brokers/configuration/runtime", bearer("bob"), "")
	if wantStatus == 200 {
		t.Fatalf("the runtime configuration answers bob: %s", wantBody)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/admin/v2/broker-stats/metrics"}, {"GET", "/admin/v2/broker-stats/allocator-stats/default"},
		{"GET", "/admin/v2/resource-quotas"}, {"POST", "/admin/v2/resource-quotas"},
		{"GET", "/admin/v2/resource-quotas/public/default/0x00000000_0x40000000"},
		{"GET", "/admin/v2/clusters/standalone/failureDomains"}, {"PUT", "/admin/v2/clusters/east"},
		{"GET", "/admin/v2/clusters/standalone/namespaceIsolationPolicies"},
		{"POST", "/admin/v2/brokers/configuration/allowAutoTopicCreation/false"},
		{"GET", "/admin/v2/brokers/configuration/values"}, {"GET", "/admin/v2/brokers/internal-configuration"},
	} {
		status, body := httpCall(t, c.method, url+c.path, bearer("bob"), "{}")
		if status != wantStatus || reason(body) != reason(wantBody) {
			t.Errorf("%s %s as bob: %d %s, want %d %s", c.method, c.path, status, body, wantStatus, wantBody)
		}
		if status, body := httpCall(t, c.method, url+c.path, bearer("admin"), "{}"); status == 401 || status == 403 {
			t.Errorf("%s %s as the super-user: %d %s", c.method, c.path, status, body)
		}
	}
}
