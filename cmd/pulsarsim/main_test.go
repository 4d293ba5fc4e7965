package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/pulsarsim/pulsarsim/auth"
)

// asStandalone makes the test binary run the standalone instead of the
// tests, with the arguments after "--".
const asStandalone = "PULSARSIM_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asStandalone) != "" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{os.Args[0]}, os.Args[i+1:]...)
				break
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}

var viewLine = regexp.MustCompile(`msg="pulsarsim web view" url=(\S+)`)

func TestStandaloneLogsTheWebViewURLAndServesIt(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := viewLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("the standalone logged no web view URL")
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<h1>Topics</h1>") {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	// The admin port's root leads to the view.
	root := strings.TrimSuffix(url, "view/")
	resp, err = http.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.String() != url {
		t.Errorf("GET %s ended at %s, want the view", root, resp.Request.URL)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the standalone did not stop cleanly on SIGTERM: %v", err)
	}
}

var wsLine = regexp.MustCompile(`msg="pulsarsim WebSocket API" url=(\S+)`)

func TestStandaloneServesTheWebSocketAPIAndStopsWithASessionOpen(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-websocket")
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := wsLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("the standalone logged no WebSocket URL")
	}
	c, _, err := websocket.DefaultDialer.Dial(base+"consumer/persistent/public/default/cmd/s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, _, err := websocket.DefaultDialer.Dial(base+"producer/persistent/public/default/cmd", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WriteJSON(map[string]string{"payload": "aGk=", "context": "1"}); err != nil {
		t.Fatal(err)
	}
	var ack map[string]any
	if err := p.ReadJSON(&ack); err != nil || ack["result"] != "ok" {
		t.Fatalf("answer %v %v", ack, err)
	}
	var m map[string]any
	if err := c.ReadJSON(&m); err != nil || m["payload"] != "aGk=" {
		t.Fatalf("pushed %v %v", m, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the standalone did not stop cleanly on SIGTERM with sessions open: %v", err)
	}
	var ce *websocket.CloseError
	if _, _, err := c.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("a session at the standalone's stop: %v", err)
	}
}

func TestStandaloneWebSocketUnderTokenAuthentication(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	token := func(role string) string {
		tok, err := auth.SignToken(map[string]any{"sub": role}, secret)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-websocket",
		"-auth-providers", "token", "-token-secret-key", keyFile, "-authorization", "-superusers", "admin",
		"-websocket-token", token("admin"))
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := wsLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("the standalone logged no WebSocket URL")
	}
	url := base + "producer/persistent/public/default/secured"
	if _, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + token("bob")}}); err == nil ||
		resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a role without grants: %v %v, want 403", err, resp)
	}
	p, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + token("admin")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WriteJSON(map[string]string{"payload": "aGk="}); err != nil {
		t.Fatal(err)
	}
	var ack map[string]any
	if err := p.ReadJSON(&ack); err != nil || ack["result"] != "ok" {
		t.Fatalf("a super-user's producer, through the internal client's token: %v %v", ack, err)
	}
}
