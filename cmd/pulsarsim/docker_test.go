package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/dockerapi"
)

// dockerClient speaks the Docker Engine API over a unix socket, as Docker
// clients do.
type dockerClient struct {
	t    *testing.T
	http *http.Client
}

// startDockerAPI serves pulsarsim's Docker Engine API on a socket of the
// test's own, its containers processes of this test binary run as the
// standalone.
func startDockerAPI(t *testing.T) *dockerClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &dockerapi.Server{
		Runtime: processRuntime{binary: os.Args[0], args: []string{"--"}, env: []string{asStandalone + "=1"}},
		DataDir: t.TempDir(),
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ln.Close()
		srv.Close()
	})
	return &dockerClient{t: t, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}}
}

// call sends a request and returns the status and body.
func (d *dockerClient) call(method, path string, body any) (int, []byte) {
	d.t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://docker/v1.46"+path, in)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// inspect returns a container's state and the host port of 6650/tcp.
func (d *dockerClient) inspect(id string) (state map[string]any, brokerPort string) {
	d.t.Helper()
	st, body := d.call("GET", "/containers/"+id+"/json", nil)
	if st != 200 {
		d.t.Fatalf("inspect: %d %s", st, body)
	}
	var doc struct {
		State           map[string]any
		NetworkSettings struct {
			Ports map[string][]struct{ HostPort string }
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		d.t.Fatal(err)
	}
	if b := doc.NetworkSettings.Ports["6650/tcp"]; len(b) > 0 {
		brokerPort = b[0].HostPort
	}
	return doc.State, brokerPort
}

// demux reads Docker's multiplexed stream into stdout and stderr.
func demux(t *testing.T, b []byte) (stdout, stderr string) {
	t.Helper()
	var out, errs strings.Builder
	for len(b) >= 8 {
		n := int(binary.BigEndian.Uint32(b[4:8]))
		if len(b) < 8+n {
			t.Fatalf("a frame of %d bytes with %d left", n, len(b)-8)
		}
		if b[0] == 2 {
			errs.Write(b[8 : 8+n])
		} else {
			out.Write(b[8 : 8+n])
		}
		b = b[8+n:]
	}
	return out.String(), errs.String()
}

// A container of a Pulsar image, made, started, stopped, started again and
// removed through pulsarsim's Docker Engine API, is a broker pulsar-client-go
// produces to and consumes from on the container's mapped port; its logs
// carry the line Testcontainers waits for; a port check exec'd in it
// succeeds and any other command exits 126; the names and images Docker
// refuses are refused.
func TestDockerAPIRunsAPulsarContainerAsABroker(t *testing.T) {
	d := startDockerAPI(t)
	if st, body := d.call("POST", "/images/create?fromImage=redis&tag=7", nil); st != 404 || !strings.Contains(string(body), "pull access denied") {
		t.Fatalf("pulling redis: %d %s", st, body)
	}
	if st, _ := d.call("POST", "/images/create?fromImage=apachepulsar/pulsar&tag=4.0.8", nil); st != 200 {
		t.Fatalf("pulling pulsar: %d", st)
	}
	create := map[string]any{
		"Image": "apachepulsar/pulsar:4.0.8", "Cmd": []string{"bin/pulsar", "standalone"},
		"Env":          []string{"clusterName=docker-test", "PULSAR_MEM=-Xmx512m"},
		"ExposedPorts": map[string]any{"6650/tcp": map[string]any{}, "8080/tcp": map[string]any{}},
	}
	st, body := d.call("POST", "/containers/create?name=pulsar-one", create)
	if st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	var made struct{ Id string }
	json.Unmarshal(body, &made)
	if st, body := d.call("POST", "/containers/create?name=pulsar-one", create); st != 409 {
		t.Fatalf("a second container of the same name: %d %s", st, body)
	}
	if state, _ := d.inspect(made.Id); state["Status"] != "created" {
		t.Fatalf("state before start: %v", state)
	}
	if st, body := d.call("POST", "/containers/"+made.Id+"/start", nil); st != 204 {
		t.Fatalf("start: %d %s", st, body)
	}
	state, port := d.inspect(made.Id)
	if state["Running"] != true || port == "" {
		t.Fatalf("after start: %v, port %q", state, port)
	}
	url := "pulsar://127.0.0.1:" + port
	waitReady(t, d, made.Id, 1)
	produceAndConsume(t, url, "persistent://public/default/in-a-container")

	// The cluster is named by the container's environment.
	_, body = d.call("GET", "/containers/"+made.Id+"/json", nil)
	var doc struct {
		NetworkSettings struct {
			Ports map[string][]struct{ HostPort string }
		}
	}
	json.Unmarshal(body, &doc)
	resp, err := http.Get("http://127.0.0.1:" + doc.NetworkSettings.Ports["8080/tcp"][0].HostPort + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	clusters, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(clusters) != `["docker-test"]` {
		t.Fatalf("clusters of the container: %s", clusters)
	}

	exec := func(cmd ...string) (int, string) {
		st, body := d.call("POST", "/containers/"+made.Id+"/exec", map[string]any{"Cmd": cmd, "AttachStdout": true, "AttachStderr": true})
		if st != 201 {
			t.Fatalf("exec create: %d %s", st, body)
		}
		var e struct{ Id string }
		json.Unmarshal(body, &e)
		_, out := d.call("POST", "/exec/"+e.Id+"/start", map[string]any{"Detach": false})
		_, stderr := demux(t, out)
		_, body = d.call("GET", "/exec/"+e.Id+"/json", nil)
		var info struct{ ExitCode int }
		json.Unmarshal(body, &info)
		return info.ExitCode, stderr
	}
	if code, _ := exec("/bin/sh", "-c", "true && (cat /proc/net/tcp* | grep -i :19fa || nc -vz -w 1 localhost 6650 || /bin/sh -c '</dev/tcp/localhost/6650')"); code != 0 {
		t.Fatalf("the port check exited %d", code)
	}
	if code, stderr := exec("bin/pulsar-admin", "topics", "list", "public/default"); code != 126 || !strings.Contains(stderr, "no shell") {
		t.Fatalf("another command exited %d: %q", code, stderr)
	}

	// Kept across the stop: a message a subscription has not acknowledged.
	keep := "persistent://public/default/kept-across-a-stop"
	sendUnacked(t, url, keep)

	if st, _ := d.call("POST", "/containers/"+made.Id+"/stop?t=10", nil); st != 204 {
		t.Fatalf("stop: %d", st)
	}
	if state, _ := d.inspect(made.Id); state["Running"] != false || state["Status"] != "exited" {
		t.Fatalf("after stop: %v", state)
	}
	if st, _ := d.call("POST", "/containers/"+made.Id+"/stop", nil); st != 304 {
		t.Fatalf("stopping a stopped container: %d, want 304", st)
	}
	if st, _ := d.call("POST", "/containers/"+made.Id+"/start", nil); st != 204 {
		t.Fatalf("start again: %d", st)
	}
	if _, again := d.inspect(made.Id); again != port {
		t.Fatalf("started again on port %s, want %s", again, port)
	}
	waitReady(t, d, made.Id, 2)
	produceAndConsume(t, url, "persistent://public/default/after-a-restart")
	if got := receiveOne(t, url, keep); got != "kept" {
		t.Fatalf("after the restart the subscription received %q, want the message sent before the stop", got)
	}

	if st, _ := d.call("DELETE", "/containers/"+made.Id, nil); st != 409 {
		t.Fatalf("removing a running container without force: %d, want 409", st)
	}
	if st, _ := d.call("POST", "/containers/"+made.Id+"/kill", nil); st != 204 {
		t.Fatalf("kill: %d", st)
	}
	if state, _ := d.inspect(made.Id); state["ExitCode"] != float64(137) {
		t.Fatalf("exit code after SIGKILL: %v, want 137", state["ExitCode"])
	}
	if st, _ := d.call("DELETE", "/containers/"+made.Id+"?force=1", nil); st != 204 {
		t.Fatalf("remove: %d", st)
	}
	if st, _ := d.call("GET", "/containers/"+made.Id+"/json", nil); st != 404 {
		t.Fatalf("inspect after remove: %d", st)
	}
}

// waitReady waits until the container's logs carry, n times, the line
// Testcontainers' Pulsar modules wait for (once per start).
func waitReady(t *testing.T, d *dockerClient, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := d.call("GET", "/containers/"+id+"/logs?stdout=1&stderr=1", nil)
		stdout, _ := demux(t, body)
		if strings.Count(stdout, dockerapi.ReadyLine) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container never logged that it is ready:\n%s", stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sendUnacked makes subscription "keep" on topic and sends it "kept",
// which nobody acknowledges.
func sendUnacked(t *testing.T, url, topic string) {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "keep"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
}

// receiveOne receives one message on subscription "keep" and acknowledges it.
func receiveOne(t *testing.T, url, topic string) string {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "keep"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cons.Ack(m)
	return string(m.Payload())
}

// produceAndConsume sends a message with pulsar-client-go and reads it back.
func produceAndConsume(t *testing.T, url, topic string) {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url})
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
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Payload()) != "hello" {
		t.Fatalf("received %q", m.Payload())
	}
	cons.Ack(m)
}
