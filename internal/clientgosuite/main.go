// Command clientgosuite runs pulsar-client-go's own integration tests against
// pulsarsim and writes CONFORMANCE.md. scripts/clientgo-suite is its entry
// point; see the README's Conformance section.
//
// It copies the client module from the module cache to a temporary folder,
// builds the test binary of its pulsar package once, starts the pulsarsim
// binary configured as the suite's own standalone (its standalone.conf, with
// TLS, token, basic and TLS authentication and authorization, on
// 127.0.0.1:6650, :6651, :8080 and :8443, the addresses the suite has built
// in), grants what the suite's start script grants, and runs every test in
// a process of its own, a few at a time, each with a timeout. Results come
// from test2json.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

const clientModule = "github.com/apache/pulsar-client-go"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clientgo-suite:", err)
		os.Exit(1)
	}
}

type options struct {
	run      string
	parallel int
	timeout  time.Duration
	out      string
	keep     bool
	retries  int
}

func run() error {
	var o options
	flag.StringVar(&o.run, "run", ".", "regular expression selecting the tests to run")
	flag.IntVar(&o.parallel, "parallel", 4, "tests running at once")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Second, "timeout of each test")
	flag.StringVar(&o.out, "out", "CONFORMANCE.md", "report to write (empty: none)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder")
	flag.IntVar(&o.retries, "retries", 0, "run a failed test again, alone, up to this many times; "+
		"one that then passes counts as passed and is reported as passing on a retry")
	flag.Parse()

	for _, addr := range suiteAddrs {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("%s is in use: the suite needs it for pulsarsim", addr)
		}
	}
	tmp, err := os.MkdirTemp("", "clientgo-suite-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(tmp)
	}
	version, err := goOutput("", "list", "-m", "-f", "{{.Version}}", clientModule)
	if err != nil {
		return err
	}
	var dl struct{ Dir string }
	js, err := goOutput("", "mod", "download", "-json", clientModule+"@"+version)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(js), &dl); err != nil {
		return err
	}
	mod := filepath.Join(tmp, "pulsar-client-go")
	logf("copying %s@%s to %s", clientModule, version, mod)
	if err := copyTree(dl.Dir, mod); err != nil {
		return err
	}
	logf("building the test binary, pulsarsim and test2json")
	testBin := filepath.Join(tmp, "pulsar.test")
	simBin := filepath.Join(tmp, "pulsarsim")
	t2j := filepath.Join(tmp, "test2json")
	if _, err := goOutput(mod, "test", "-c", "-o", testBin, "./pulsar"); err != nil {
		return err
	}
	if _, err := goOutput("", "build", "-o", simBin, "./cmd/pulsarsim"); err != nil {
		return err
	}
	if _, err := goOutput("", "build", "-o", t2j, "cmd/test2json"); err != nil {
		return err
	}
	commit := gitCommit()

	list, err := exec.Command(testBin, "-test.list", o.run).Output()
	if err != nil {
		return fmt.Errorf("listing tests: %w", err)
	}
	var tests []string
	for _, l := range strings.Fields(string(list)) {
		if strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	if len(tests) == 0 {
		return fmt.Errorf("no test matches %q", o.run)
	}

	simArgs, err := standaloneArgs(mod, tmp)
	if err != nil {
		return err
	}
	sim := exec.Command(simBin, simArgs...)
	simLog, err := os.Create(filepath.Join(tmp, "pulsarsim.log"))
	if err != nil {
		return err
	}
	defer simLog.Close()
	sim.Stdout, sim.Stderr = simLog, simLog
	if err := sim.Start(); err != nil {
		return err
	}
	defer func() {
		_ = sim.Process.Signal(os.Interrupt)
		_ = sim.Wait()
	}()
	if err := waitListening(suiteAddrs...); err != nil {
		return err
	}
	// The tests that start a Pulsar container with Testcontainers get one
	// from pulsarsim's Docker Engine API, a pulsarsim process each.
	dockerSock := filepath.Join(tmp, "docker.sock")
	docker := exec.Command(simBin, "-docker-api", "unix://"+dockerSock)
	docker.Stdout, docker.Stderr = simLog, simLog
	if err := docker.Start(); err != nil {
		return err
	}
	defer func() {
		_ = docker.Process.Signal(os.Interrupt)
		_ = docker.Wait()
	}()
	if err := waitSocket(dockerSock); err != nil {
		return err
	}
	os.Setenv("DOCKER_HOST", "unix://"+dockerSock)
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	if err := grantAsTestService(mod); err != nil {
		return fmt.Errorf("configuring pulsarsim as pulsar-test-service-start.sh does: %w", err)
	}

	logf("running %d tests, %d at a time, %s each", len(tests), o.parallel, o.timeout)
	start := time.Now()
	results := make([]result, len(tests))
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.parallel)
	var shared stateLocks
	for i, name := range tests {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer shared.hold(name)()
			results[i] = runOne(t2j, testBin, filepath.Join(mod, "pulsar"), name, o.timeout)
			r := results[i]
			logf("%-4s %-60s %6.1fs", r.Status, r.Name, r.Seconds)
		}()
	}
	wg.Wait()
	// A test that fails on its timing (the suite's own sleeps and windows)
	// can fail while others run beside it: it runs again, alone.
	for i := range results {
		for try := 1; try <= o.retries && results[i].Status == statusFail; try++ {
			first := results[i]
			r := runOne(t2j, testBin, filepath.Join(mod, "pulsar"), first.Name, o.timeout)
			logf("%-4s %-60s %6.1fs (run again alone, try %d)", r.Status, r.Name, r.Seconds, try)
			if r.Status == statusPass {
				r.Detail = fmt.Sprintf("passed when run again alone (try %d); the first run failed: %s", try, first.Detail)
				r.Retried = true
			}
			results[i] = r
		}
	}
	for _, r := range results {
		switch {
		case r.Retried:
			logf("passed on a retry: %s", r.Name)
		case r.Status == statusFail:
			logf("failed: %s: %s", r.Name, r.Detail)
		}
	}
	elapsed := time.Since(start)
	sum := summarize(results)
	logf("%d passed, %d failed, %d skipped in %s", sum[statusPass], sum[statusFail], sum[statusSkip], elapsed.Round(time.Second))
	if o.out != "" {
		report := renderReport(results, commit, version, o, elapsed)
		if err := os.WriteFile(o.out, report, 0o644); err != nil {
			return err
		}
		logf("wrote %s", o.out)
	}
	if sum[statusFail] > 0 {
		return errors.New("some tests failed")
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// goOutput runs the go command in dir (the current folder when empty).
func goOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// gitCommit names the pulsarsim commit, marked when the tree has changes.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// copyTree copies a folder, making the copy writable (the module cache is
// read-only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

func waitListening(addrs ...string) error {
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range addrs {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pulsarsim is not listening on %s", a)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

const (
	statusPass = "pass"
	statusFail = "fail"
	statusSkip = "skip"
)

// result is the outcome of one top-level test.
type result struct {
	Name    string
	Status  string
	Seconds float64
	// Detail is the skip reason or the first lines of the failure output
	// (for a test that passed on a retry, the first run's).
	Detail string
	// Retried is set on a test that failed, then passed when run again.
	Retried bool
}

// testEvent is one line of test2json output.
type testEvent struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// runOne runs one test in its own process under test2json.
func runOne(t2j, testBin, dir, name string, timeout time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, t2j, "-t", "-p", "pulsar", testBin,
		"-test.v=test2json", "-test.run", "^"+regexp.QuoteMeta(name)+"$",
		"-test.timeout", timeout.String(), "-test.count", "1")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, _ := cmd.Output()
	r := result{Name: name, Status: statusFail, Seconds: time.Since(start).Seconds()}
	var output []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	got := false
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Test != name && !strings.HasPrefix(ev.Test, name+"/") && ev.Test != "" {
			continue
		}
		switch {
		case ev.Action == "output":
			output = append(output, ev.Output)
		case ev.Test == name && (ev.Action == statusPass || ev.Action == statusFail || ev.Action == statusSkip):
			r.Status, r.Seconds, got = ev.Action, ev.Elapsed, true
		}
	}
	switch {
	case !got && ctx.Err() != nil:
		r.Detail = "killed after " + (timeout + 30*time.Second).String()
	case r.Status == statusSkip:
		r.Detail = skipReason(output)
	case r.Status == statusFail:
		r.Detail = failureDetail(output)
	}
	return r
}

var noise = regexp.MustCompile(`^\s*(=== |--- |$|time=|PASS|FAIL|ok\s|exit status|Error Trace:|Test:|/|[a-z_]+_test\.go:\d+:\s*$)`)

// failureDetail keeps the first meaningful lines of a failing test's output.
func failureDetail(output []string) string {
	var keep []string
	for _, l := range output {
		l = strings.TrimRight(l, "\n")
		if noise.MatchString(l) || strings.Contains(l, "level=") {
			continue
		}
		keep = append(keep, strings.Join(strings.Fields(l), " "))
		if len(keep) == 4 {
			break
		}
	}
	return strings.Join(keep, " ")
}

func skipReason(output []string) string {
	for _, l := range output {
		if strings.Contains(l, "--- SKIP") || strings.TrimSpace(l) == "" || strings.HasPrefix(l, "=== ") {
			continue
		}
		return strings.TrimSpace(l)
	}
	return ""
}

func summarize(rs []result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// renderReport writes CONFORMANCE.md.
func renderReport(rs []result, commit, version string, o options, elapsed time.Duration) []byte {
	sorted := append([]result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	sum := summarize(sorted)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Conformance: pulsar-client-go's test suite against pulsarsim\n\n")
	fmt.Fprintf(&b, "- pulsarsim commit: %s\n", commit)
	fmt.Fprintf(&b, "- client: %s@%s, package `pulsar`, tests selected by `-run %s`\n", clientModule, version, o.run)
	fmt.Fprintf(&b, "- run: %s, %d tests at a time, %s per test, whole run %s\n",
		time.Now().UTC().Format("2006-01-02"), o.parallel, o.timeout, elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- result: **%d passed, %d failed, %d skipped** of %d\n", sum[statusPass], sum[statusFail], sum[statusSkip], len(sorted))
	for _, r := range sorted {
		if r.Retried {
			fmt.Fprintf(&b, "- passed only when run again alone: `%s` (%s)\n", r.Name, r.Detail)
		}
	}
	fmt.Fprintf(&b, "\n")
	fmt.Fprintf(&b, "Written by `scripts/clientgo-suite`; see the README's Conformance section. ")
	fmt.Fprintf(&b, "Tests behind build tags (clustered, extensible load manager, blue-green migration, transactions disabled) are not compiled by a plain `go test` and do not appear.\n\n")

	fmt.Fprintf(&b, "## Failing and skipped tests\n\n")
	fmt.Fprintf(&b, "| test | result | reason | detail |\n|---|---|---|---|\n")
	for _, r := range sorted {
		if r.Status == statusPass {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Name, r.Status, reasonFor(r.Name), cell(r.Detail))
	}
	fmt.Fprintf(&b, "\n## All tests\n\n| test | result | seconds |\n|---|---|---|\n")
	for _, r := range sorted {
		fmt.Fprintf(&b, "| %s | %s | %.1f |\n", r.Name, r.Status, r.Seconds)
	}
	return b.Bytes()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// waitSocket waits up to 10 s for a unix socket to accept connections.
func waitSocket(path string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pulsarsim's Docker Engine API is not listening on %s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
