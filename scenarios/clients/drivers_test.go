package clients_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateEnv turns the real-client scenarios on: their first build fetches
// crates, jars and wheels from the registries and takes minutes.
const gateEnv = "PULSARSIM_CLIENTS"

// runCommand is the documented way to run these tests.
const runCommand = "PULSARSIM_CLIENTS=1 go test -count=1 -timeout 30m ./scenarios/clients/"

// cacheDir holds the drivers' builds between runs: the Rust target folder,
// the Java jar with its dependencies and the Python venv.
func cacheDir() string {
	if d := os.Getenv("PULSARSIM_CACHE"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "pulsarsim")
	}
	return filepath.Join(os.TempDir(), "pulsarsim-cache")
}

// strict reports whether a missing toolchain or an unreachable registry is a
// failure rather than a skip: in CI's dedicated real-client step.
func strict() bool { return os.Getenv("CI") == "true" && os.Getenv(gateEnv) == "1" }

// driverDir is this folder, where the drivers' sources live.
func driverDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// client is one real Pulsar client and how to build and start its driver.
type client struct {
	name    string
	library string
	version string   // the version the driver is pinned to
	tools   []string // toolchain commands the build needs
	// build builds (or finds cached) the driver and returns the command that
	// starts it, without the scenario argument.
	build func(cache string) ([]string, error)

	once  sync.Once
	argv  []string
	err   error
	spent time.Duration
}

var clients = []*client{
	{name: "rust", library: "pulsar (crates.io)", version: "6.9.1", tools: []string{"cargo"}, build: buildRust},
	{name: "java", library: "org.apache.pulsar:pulsar-client (Maven Central)", version: "4.0.13", tools: []string{"mvn", "java"}, build: buildJava},
	{name: "python", library: "pulsar-client (PyPI, C++ 4.2.0 inside)", version: "3.13.0", tools: []string{"python3"}, build: buildPython},
}

// networkTrouble matches what cargo, Maven and pip print when a registry
// cannot be reached.
var networkTrouble = regexp.MustCompile(`(?i)(could not resolve host|temporary failure in name resolution|name or service not known|network is unreachable|connection refused|connection timed out|connection reset|failed to connect|unknownhost|could not transfer artifact|could not resolve dependencies|failed to get .*response|spurious network error|failed to download|no matching distribution found|failed to establish a new connection|max retries exceeded|ssl.*(error|handshake))`)

// errRegistry marks a build that failed because a registry was out of reach.
var errRegistry = errors.New("a package registry could not be reached")

// ensure builds the client's driver once per test binary. It skips the test,
// or fails it in strict mode, when the toolchain is missing or a registry is
// out of reach; any other build failure fails the test.
func (c *client) ensure(t *testing.T) []string {
	t.Helper()
	for _, tool := range c.tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s driver: toolchain command %q not found on PATH; install it to run the %s scenarios", c.name, tool, c.name)
			if strict() {
				t.Fatal(msg + " (CI=true and " + gateEnv + "=1: a missing toolchain is a failure)")
			}
			t.Skip(msg)
		}
	}
	c.once.Do(func() {
		start := time.Now()
		c.argv, c.err = c.build(cacheDir())
		c.spent = time.Since(start)
	})
	if c.err != nil {
		if errors.Is(c.err, errRegistry) && !strict() {
			t.Skipf("%s driver: build skipped: %v", c.name, c.err)
		}
		t.Fatalf("%s driver: build failed: %v", c.name, c.err)
	}
	t.Logf("%s driver ready (%s %s) in %v", c.name, c.library, c.version, c.spent.Round(time.Millisecond))
	return c.argv
}

// niced runs a build command at a lower priority when nice exists: the
// machine's cores are shared.
func niced(dir string, env []string, argv ...string) *exec.Cmd {
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "10"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runBuild runs a build step, classifying a failure as registry trouble when
// its output says so.
func runBuild(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	tail := string(out)
	if len(tail) > 4000 {
		tail = "…" + tail[len(tail)-4000:]
	}
	if networkTrouble.MatchString(string(out)) {
		return fmt.Errorf("%w: %s: %v\n%s", errRegistry, strings.Join(cmd.Args, " "), err, tail)
	}
	return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tail)
}

// stamp hashes build inputs, so that a cached build is reused only while its
// inputs are unchanged.
func stamp(files ...string) (string, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func stampMatches(path, want string) bool {
	got, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(got)) == want
}

// buildRust builds the cargo project with its committed Cargo.lock; cargo's
// own fingerprints make a warm build a no-op.
func buildRust(cache string) ([]string, error) {
	dir := filepath.Join(driverDir(), "rust")
	target := filepath.Join(cache, "cargo-target")
	cmd := niced(dir, []string{"CARGO_BUILD_JOBS=1", "CARGO_TERM_COLOR=never"},
		"cargo", "build", "--release", "--locked", "--target-dir", target)
	if err := runBuild(cmd); err != nil {
		return nil, err
	}
	return []string{filepath.Join(target, "release", "pulsarsim-rust-driver")}, nil
}

// buildJava packages the Maven project into cache/java-target (driver.jar
// and lib/), skipping Maven when the pom and the source are unchanged.
func buildJava(cache string) ([]string, error) {
	dir := filepath.Join(driverDir(), "java")
	out := filepath.Join(cache, "java-target")
	jar := filepath.Join(out, "driver.jar")
	want, err := stamp(filepath.Join(dir, "pom.xml"), filepath.Join(dir, "src", "main", "java", "pulsarsim", "driver", "Driver.java"))
	if err != nil {
		return nil, err
	}
	stampFile := filepath.Join(cache, "java.stamp")
	if _, err := os.Stat(jar); err != nil || !stampMatches(stampFile, want) {
		cmd := niced(dir, nil, "mvn", "-B", "-q", "package", "-Dmaven.test.skip=true", "-Dpulsarsim.cache="+cache)
		if err := runBuild(cmd); err != nil {
			return nil, err
		}
		if err := os.WriteFile(stampFile, []byte(want+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	// A short-lived JVM starts faster with the client compiler only.
	return []string{"java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar}, nil
}

// buildPython makes a venv in the cache and installs requirements.txt into
// it, skipping pip when the requirements are unchanged.
func buildPython(cache string) ([]string, error) {
	dir := filepath.Join(driverDir(), "python")
	venv := filepath.Join(cache, "py-venv")
	py := filepath.Join(venv, "bin", "python")
	req := filepath.Join(dir, "requirements.txt")
	want, err := stamp(req)
	if err != nil {
		return nil, err
	}
	stampFile := filepath.Join(cache, "python.stamp")
	if _, err := os.Stat(py); err != nil || !stampMatches(stampFile, want) {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return nil, err
		}
		if err := runBuild(exec.Command("python3", "-m", "venv", venv)); err != nil {
			return nil, err
		}
		pip := exec.Command(py, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", req)
		if err := runBuild(pip); err != nil {
			return nil, err
		}
		if err := os.WriteFile(stampFile, []byte(want+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return []string{py, filepath.Join(dir, "driver.py")}, nil
}

// traceLine is one JSON line a driver prints.
type traceLine struct {
	Event           string            `json:"event"`
	TMs             float64           `json:"t_ms"`
	Client          string            `json:"client"`
	Version         string            `json:"version"`
	I               int               `json:"i"`
	Attempt         int               `json:"attempt"`
	ID              string            `json:"id"`
	Payload         string            `json:"payload"`
	RedeliveryCount *int              `json:"redelivery_count"`
	Properties      map[string]string `json:"properties"`
	Action          string            `json:"action"`
	Reason          string            `json:"reason"`
	Message         string            `json:"message"`
	// A "txn" line: the transaction, its outcome ("committed",
	// "aborted") and the id of the output it produced.
	Txn      string `json:"txn"`
	Outcome  string `json:"outcome"`
	OutputID string `json:"output_id"`
}

// process is a running driver.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	lines  []traceLine
	raw    []string
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

// lockedWriter lets the process's stderr be read while it is written.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startDriver starts argv with the scenario file as its last argument. The
// driver runs until its stdin is closed (the scenarios set stop.stdin_eof) or
// its deadline passes.
func startDriver(t *testing.T, argv []string, scenarioFile string) *process {
	t.Helper()
	p := &process{exited: make(chan struct{})}
	args := append(append([]string{}, argv[1:]...), scenarioFile)
	p.cmd = exec.Command(argv[0], args...)
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var tl traceLine
			p.mu.Lock()
			p.raw = append(p.raw, line)
			// Lines that are not the trace's JSON (library output) are kept
			// in raw only.
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &tl) == nil && tl.Event != "" {
				p.lines = append(p.lines, tl)
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		<-done
		err := p.cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p
}

// snapshot returns a copy of the trace so far.
func (p *process) snapshot() []traceLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]traceLine(nil), p.lines...)
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop closes the driver's stdin and waits for it to exit.
func (p *process) stop(ctx context.Context) error {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("driver did not exit after its stdin closed: %w", ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// dump is the driver's output, for failure messages.
func (p *process) dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	stderr := p.stderr.String()
	if len(stderr) > 6000 {
		stderr = "…" + stderr[len(stderr)-6000:]
	}
	return "stdout:\n" + strings.Join(p.raw, "\n") + "\nstderr:\n" + stderr
}
