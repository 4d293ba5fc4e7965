package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The suite's own broker is a standalone started from
// integration-tests/conf/standalone.conf in a container where the module's
// certs, tokens and .htpasswd sit under /pulsar/ (its Dockerfile), then
// configured by scripts/pulsar-test-service-start.sh. pulsarsim runs from
// the same file, with those paths pointed at the module copy and the bind
// address kept on loopback.

// suiteAddrs are the addresses the suite has built in.
var suiteAddrs = []string{"127.0.0.1:6650", "127.0.0.1:8080", "127.0.0.1:6651", "127.0.0.1:8443"}

// standaloneArgs writes the suite's standalone.conf with its paths moved to
// the module copy at mod, and returns pulsarsim's arguments.
func standaloneArgs(mod, tmp string) ([]string, error) {
	it := filepath.Join(mod, "integration-tests")
	conf, err := os.ReadFile(filepath.Join(it, "conf", "standalone.conf"))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.ReplaceAll(line, "/pulsar/certs/", filepath.Join(it, "certs")+"/")
		line = strings.ReplaceAll(line, "/pulsar/tokens/", filepath.Join(it, "tokens")+"/")
		if strings.HasPrefix(line, "bindAddress=") {
			line = "bindAddress=127.0.0.1" // the suite's 0.0.0.0, kept on loopback
		}
		out.WriteString(line + "\n")
	}
	path := filepath.Join(tmp, "standalone.conf")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return nil, err
	}
	// The Dockerfile hands the broker .htpasswd with -Dpulsar.auth.basic.conf.
	return []string{"-config", path, "-htpasswd", filepath.Join(it, "conf", ".htpasswd")}, nil
}

// grantAsTestService does what scripts/pulsar-test-service-start.sh does
// with pulsar-admin once the broker is up, over the admin REST API with the
// suite's admin token.
func grantAsTestService(mod string) error {
	tok, err := os.ReadFile(filepath.Join(mod, "integration-tests", "tokens", "admin-token"))
	if err != nil {
		return err
	}
	steps := []struct{ method, path, body string }{
		// tenants update public -r anonymous
		{"POST", "/admin/v2/tenants/public", `{"adminRoles":["anonymous"],"allowedClusters":["standalone"]}`},
		// namespaces grant-permission public/default --actions produce,consume --role anonymous
		{"POST", "/admin/v2/namespaces/public/default/permissions/anonymous", `["produce","consume"]`},
		// tenants create private
		{"PUT", "/admin/v2/tenants/private", `{"allowedClusters":["standalone"]}`},
		// namespaces create private/auth
		{"PUT", "/admin/v2/namespaces/private/auth", ``},
		// namespaces grant-permission private/auth --actions produce,consume --role token-principal
		{"POST", "/admin/v2/namespaces/private/auth/permissions/token-principal", `["produce","consume"]`},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, s := range steps {
		req, err := http.NewRequest(s.method, "http://127.0.0.1:8080"+s.path, strings.NewReader(s.body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: HTTP %d", s.method, s.path, resp.StatusCode)
		}
	}
	return nil
}
