// Package testcontainers_test runs what users' tests and scripts do with
// Pulsar containers (Testcontainers for Java and its Pulsar module,
// Testcontainers for Python, the docker command-line client) against
// pulsarsim's Docker Engine API, as `pulsarsim -docker-api` serves it: the
// programs under java/ and python/ start containers, produce and consume
// with the real Java and Python clients, and print one "ok" line per
// check.
//
// Like the real-client scenarios (scenarios/clients), they build from
// Maven Central and PyPI and run only with PULSARSIM_CLIENTS=1; with
// CI=true as well, a missing toolchain or registry is a failure.
package testcontainers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

const gateEnv = "PULSARSIM_CLIENTS"

func strict() bool { return os.Getenv("CI") == "true" && os.Getenv(gateEnv) == "1" }

func cacheDir() string {
	if d := os.Getenv("PULSARSIM_CACHE"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "pulsarsim")
	}
	return filepath.Join(os.TempDir(), "pulsarsim-cache")
}

func here() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// need skips (or, strictly, fails) the test without the tools.
func need(t *testing.T, tools ...string) {
	t.Helper()
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("set %s=1 to run Testcontainers for Java and Python against pulsarsim (builds from Maven Central and PyPI)", gateEnv)
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if strict() {
				t.Fatalf("%s not found on PATH (CI=true: a missing toolchain is a failure)", tool)
			}
			t.Skipf("%s not found on PATH", tool)
		}
	}
}

// dockerAPI builds pulsarsim, serves its Docker Engine API on a socket of
// the test's own and returns DOCKER_HOST for it.
func dockerAPI(t *testing.T) (host string, client *http.Client) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "pulsarsim")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pulsarsim")
	build.Dir = filepath.Join(here(), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pulsarsim: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "docker.sock")
	srv := exec.Command(bin, "-docker-api", "unix://"+sock)
	logf, err := os.Create(filepath.Join(dir, "docker-api.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("the Docker Engine API's log:\n%s", b)
		}
	})
	client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := client.Get("http://docker/_ping"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Docker Engine API never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "unix://" + sock, client
}

// containers lists the server's containers, running or not, by name.
func containers(t *testing.T, c *http.Client) []string {
	t.Helper()
	resp, err := c.Get("http://docker/containers/json?all=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ Names []string }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, strings.Join(c.Names, ","))
	}
	return names
}

// runProgram runs a user's program with DOCKER_HOST set, wants every check
// it prints to pass and its last line "done", then wants the reaper to
// have removed every container the program's session left.
func runProgram(t *testing.T, host string, c *http.Client, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "DOCKER_HOST="+host), env...)
	out, err := cmd.CombinedOutput()
	var checks []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "FAILED ") || l == "done" {
			checks = append(checks, l)
		}
	}
	if err != nil || len(checks) == 0 || checks[len(checks)-1] != "done" {
		t.Fatalf("%s: %v; checks %q\n%s", strings.Join(argv, " "), err, checks, tail(string(out)))
	}
	t.Logf("%s", strings.Join(checks, "\n"))
	// Testcontainers' reaper removes what the session left once it is gone
	// (10 s after its last connection closed, then a moment).
	deadline := time.Now().Add(60 * time.Second)
	for len(containers(t, c)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("containers left a minute after the program ended: %v", containers(t, c))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}

func stamp(files ...string) string {
	h := sha256.New()
	for _, f := range files {
		b, _ := os.ReadFile(f)
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// run runs a build step at a lower priority, failing the test with its
// output.
func run(t *testing.T, dir string, argv ...string) {
	t.Helper()
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "10"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		if !strict() && strings.Contains(strings.ToLower(string(out)), "could not resolve") {
			t.Skipf("a registry is out of reach: %s", tail(string(out)))
		}
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, tail(string(out)))
	}
}

// Testcontainers for Java's PulsarContainer (its Pulsar module, 1.21.4)
// starts, serves the Java client, and starts again with transactions on,
// as a Docker Pulsar standalone would.
func TestJavaPulsarContainer(t *testing.T) {
	need(t, "mvn", "java", "go")
	cache := cacheDir()
	dir := filepath.Join(here(), "java")
	out := filepath.Join(cache, "testcontainers-java")
	jar := filepath.Join(out, "tc.jar")
	want := stamp(filepath.Join(dir, "pom.xml"), filepath.Join(dir, "src", "main", "java", "pulsarsim", "tc", "Main.java"))
	stampFile := filepath.Join(cache, "testcontainers-java.stamp")
	if got, _ := os.ReadFile(stampFile); strings.TrimSpace(string(got)) != want || !exists(jar) {
		run(t, dir, "mvn", "-B", "-q", "package", "-Dmaven.test.skip=true", "-Dpulsarsim.cache="+cache)
		os.WriteFile(stampFile, []byte(want+"\n"), 0o644)
	}
	host, c := dockerAPI(t)
	runProgram(t, host, c, nil, "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar)
}

// Testcontainers for Python (4.15.0) starts a Pulsar container on fixed
// ports with its cluster named by the environment, as the Python client's
// own failover test does, serves the Python client, stops and starts again.
func TestPythonDockerContainer(t *testing.T) {
	need(t, "python3", "go")
	cache := cacheDir()
	dir := filepath.Join(here(), "python")
	venv := filepath.Join(cache, "testcontainers-py")
	py := filepath.Join(venv, "bin", "python")
	req := filepath.Join(dir, "requirements.txt")
	want := stamp(req)
	stampFile := filepath.Join(cache, "testcontainers-py.stamp")
	if got, _ := os.ReadFile(stampFile); strings.TrimSpace(string(got)) != want || !exists(py) {
		run(t, dir, "python3", "-m", "venv", venv)
		run(t, dir, py, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", req)
		os.WriteFile(stampFile, []byte(want+"\n"), 0o644)
	}
	host, c := dockerAPI(t)
	// Inside a container (as CI may run), Testcontainers for Python would
	// reach containers through the gateway: use the host's ports instead.
	runProgram(t, host, c, []string{"TESTCONTAINERS_HOST_OVERRIDE=localhost", "TESTCONTAINERS_CONNECTION_MODE=docker_host"},
		py, filepath.Join(dir, "tc.py"))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// The docker command-line client (as CI scripts run a standalone: `docker
// run -d -p 6650:6650 -p 8080:8080 apachepulsar/pulsar ...`) runs, lists,
// logs, stops, starts and removes a Pulsar container, and pulsar-client-go
// produces and consumes on its ports; run attached with --rm, it streams
// the broker's output until the container stops, and the container goes.
func TestDockerCLIRunsAStandalone(t *testing.T) {
	need(t, "docker", "go")
	host, c := dockerAPI(t)
	docker := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("docker", args...)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	broker, web := freePort(t), freePort(t)
	id := docker("run", "-d", "--name", "cli-standalone", "-p", broker+":6650", "-p", web+":8080",
		"-e", "clusterName=cli", "apachepulsar/pulsar:4.0.8", "bin/pulsar", "standalone")
	if len(id) != 64 {
		t.Fatalf("docker run printed %q, want a container id", id)
	}
	if ps := docker("ps", "--format", "{{.Names}} {{.Status}} {{.Ports}}"); !strings.HasPrefix(ps, "cli-standalone Up") || !strings.Contains(ps, broker+"->6650/tcp") {
		t.Fatalf("docker ps: %q", ps)
	}
	waitHTTP(t, "http://127.0.0.1:"+web+"/admin/v2/clusters", `["cli"]`)
	roundtrip(t, "pulsar://127.0.0.1:"+broker, "persistent://public/default/cli")
	// The line Testcontainers' Pulsar modules wait for comes once the
	// admin API answers, as the server sees it: it may follow the client's
	// first answers by a poll, so the test waits for it as they do.
	deadline := time.Now().Add(30 * time.Second)
	for logs := ""; !strings.Contains(logs, "Successfully updated the policies on namespace public/default"); {
		if time.Now().After(deadline) {
			t.Fatalf("docker logs: %s", logs)
		}
		time.Sleep(50 * time.Millisecond)
		logs = docker("logs", "cli-standalone")
	}
	docker("stop", "cli-standalone")
	if ps := docker("ps", "-a", "--format", "{{.Names}} {{.Status}}"); !strings.HasPrefix(ps, "cli-standalone Exited") {
		t.Fatalf("docker ps -a after the stop: %q", ps)
	}
	docker("start", "cli-standalone")
	waitHTTP(t, "http://127.0.0.1:"+web+"/admin/v2/clusters", `["cli"]`)
	roundtrip(t, "pulsar://127.0.0.1:"+broker, "persistent://public/default/cli-again")
	docker("rm", "-f", "cli-standalone")
	if left := containers(t, c); len(left) != 0 {
		t.Fatalf("containers after docker rm -f: %v", left)
	}

	// Attached, as the quick start runs it (`docker run --rm ... bin/pulsar
	// standalone` in a terminal): the broker's output streams to the
	// client until the container is stopped, which --rm then removes.
	attached := exec.Command("docker", "run", "--rm", "--name", "cli-attached", "-p", broker+":6650", "-p", web+":8080",
		"apachepulsar/pulsar:4.0.8", "bin/pulsar", "standalone")
	attached.Env = append(os.Environ(), "DOCKER_HOST="+host)
	var out strings.Builder
	attached.Stdout, attached.Stderr = &out, &out
	if err := attached.Start(); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, "http://127.0.0.1:"+web+"/admin/v2/clusters", `["standalone"]`)
	roundtrip(t, "pulsar://127.0.0.1:"+broker, "persistent://public/default/cli-attached")
	docker("stop", "cli-attached")
	if err := attached.Wait(); err != nil {
		t.Fatalf("docker run (attached) after docker stop: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Successfully updated the policies on namespace public/default") {
		t.Fatalf("the attached client saw no broker output:\n%s", out.String())
	}
	if left := containers(t, c); len(left) != 0 {
		t.Fatalf("containers after the --rm container stopped: %v", left)
	}
}

// freePort returns a free local port, as a string.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// waitHTTP waits up to 30 s for url to answer want.
func waitHTTP(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if last = string(b); last == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s answered %q, want %q", url, last, want)
}

// roundtrip produces a message with pulsar-client-go and consumes it.
func roundtrip(t *testing.T, url, topic string) {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil || string(m.Payload()) != "hello" {
		t.Fatalf("received %v, %v", m, err)
	}
	cons.Ack(m)
}
