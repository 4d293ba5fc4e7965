package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standalone runs the standalone (this test binary as main) with args until
// it exits, and returns its exit code and what it printed. It fails the
// test when the standalone does not exit: every call here gives it
// something it must refuse, or asks for its usage.
func standalone(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("pulsarsim %s did not exit: it started, where it should have refused\n%s", strings.Join(args, " "), out)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatal(err)
	return 0, ""
}

// refused runs the standalone with args and checks that it exits 1 with a
// message holding each of want.
func refused(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, out := standalone(t, append([]string{"-addr", "127.0.0.1:0", "-http", ""}, args...)...)
	if code != 1 {
		t.Errorf("pulsarsim %s exited %d, want 1\n%s", strings.Join(args, " "), code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("pulsarsim %s said %q, want it to name %q", strings.Join(args, " "), strings.TrimSpace(out), w)
		}
	}
}

func TestHelpPrintsTheUsageAndExitsZero(t *testing.T) {
	for _, flag := range []string{"-h", "-help", "--help"} {
		code, out := standalone(t, flag)
		if code != 0 || !strings.Contains(out, "-max-message-size") || strings.Contains(out, "help requested") {
			t.Errorf("pulsarsim %s exited %d and printed:\n%s", flag, code, out)
		}
	}
}

func TestAnArgumentThatIsNotAFlagIsRefused(t *testing.T) {
	refused(t, []string{"extra-arg"}, `unexpected argument "extra-arg"`)
}

func TestNumericFlagsOutOfRangeAreRefused(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"-max-message-size", "0", "-max-message-size 0: must be at least 1"},
		{"-max-message-size", "-5", "-max-message-size -5: must be at least 1"},
		{"-max-consumers-per-topic", "-1", "-max-consumers-per-topic -1"},
		{"-delete-inactive-topics-frequency", "0", "-delete-inactive-topics-frequency 0"},
		{"-handshake-timeout", "-1s", "-handshake-timeout -1s"},
		{"-backlog-quota-default-limit-bytes", "-2", "-backlog-quota-default-limit-bytes -2"},
	} {
		refused(t, []string{c.flag, c.value}, c.want)
	}
	refused(t, []string{"-write-buffer-low-water-mark", "100", "-write-buffer-high-water-mark", "10"},
		"-write-buffer-low-water-mark 100: must not be above -write-buffer-high-water-mark 10")
}

func TestAnEnumFlagOutsideItsValuesNamesThem(t *testing.T) {
	refused(t, []string{"-backlog-quota-default-policy", "drop_everything"},
		"producer_request_hold", "producer_exception", "consumer_backlog_eviction")
	refused(t, []string{"-delete-inactive-topics-mode", "delete_when_bored"},
		"delete_when_no_subscriptions", "delete_when_subscriptions_caught_up")
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestAConfigLineThatIsNotKeyValueIsRefused(t *testing.T) {
	conf := writeConf(t, "# a comment\nmaxMessageSize=1048576\nthis is junk\n")
	refused(t, []string{"-config", conf}, "standalone.conf:3", `"this is junk" is not a key=value line`)
}

func TestAConfigValueItsFlagRefusesNamesTheKey(t *testing.T) {
	refused(t, []string{"-config", writeConf(t, "brokerServicePort=abc\n")}, "brokerServicePort=abc", "not a port number")
	refused(t, []string{"-config", writeConf(t, "maxMessageSize=lots\n")}, "maxMessageSize=lots")
}

func TestUnknownConfigKeysAreNamedAndTheBrokerStarts(t *testing.T) {
	conf := writeConf(t, "maxMessageSize=1048576\nmanagedLedgerDefaultEnsembleSize=1\nzookeeperServers=\nbrokerShutdownTimeoutMs=9000\n")
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "", "-config", conf)
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stderr)
		close(lines)
	}()
	var warning string
	timeout := time.After(30 * time.Second)
	for serving := false; !serving; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the standalone exited before serving (warning %q)", warning)
			}
			if strings.Contains(l, "ignores the keys") {
				warning = l
			}
			serving = strings.Contains(l, `msg="pulsarsim serving"`)
		case <-timeout:
			t.Fatal("the standalone did not start")
		}
	}
	// Keys with a value are named; an empty one sets nothing and is not.
	if !strings.Contains(warning, "keys=brokerShutdownTimeoutMs,managedLedgerDefaultEnsembleSize") ||
		!strings.Contains(warning, "count=2") || strings.Contains(warning, "zookeeperServers") {
		t.Errorf("the warning about unknown keys is %q", warning)
	}
	cmd.Process.Kill()
	cmd.Wait()
}
