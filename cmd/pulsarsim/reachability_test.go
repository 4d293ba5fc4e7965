package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A pulsarsim process is cut off from its clients by SIGUSR1 (its port
// refuses connections, its admin API still answers) and comes back on the
// same port by SIGUSR2.
func TestSIGUSR1CutsTheProcessOffAndSIGUSR2BringsItBack(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// wait returns the first line that contains what.
	wait := func(what string) string {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("pulsarsim exited before logging %q", what)
				}
				if strings.Contains(l, what) {
					return l
				}
			case <-timeout:
				t.Fatalf("pulsarsim did not log %q", what)
			}
		}
	}
	service := servingLine.FindStringSubmatch(wait(`msg="pulsarsim serving"`))[1]
	admin := adminLine.FindStringSubmatch(wait(`msg="pulsarsim admin API serving"`))[1]
	addr := strings.TrimPrefix(service, "pulsar://")
	wait("SIGUSR1 cuts it off")

	must(t, cmd.Process.Signal(syscall.SIGUSR1))
	wait("cut off from its clients")
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect while cut off: %v, want connection refused", err)
	}
	resp, err := http.Get(admin + "/admin/v2/clusters")
	if err != nil {
		t.Fatalf("the admin API while cut off: %v", err)
	}
	resp.Body.Close()

	must(t, cmd.Process.Signal(syscall.SIGUSR2))
	wait("reachable again")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("connect once back: %v", err)
	}
	conn.Close()
}
