package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// startOn starts the standalone on data directory dir and returns it with
// its service and admin URLs.
func startOn(t *testing.T, dir string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--", "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-view=false", "-data-dir", dir)
	cmd.Env = append(os.Environ(), asStandalone+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urls := make(chan [2]string, 1)
	go func() {
		var svc string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				svc = m[1]
			}
			if m := adminLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- [2]string{svc, m[1]}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		return cmd, u[0], u[1]
	case <-time.After(30 * time.Second):
		t.Fatal("the standalone logged no URLs")
	}
	return nil, "", ""
}

func clientOf(t *testing.T, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger(), OperationTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAKilledStandaloneComesBackWithEveryReceiptedMessageAndItsMetadata(t *testing.T) {
	dir := t.TempDir()
	cmd, url, adminURL := startOn(t, dir)
	req, _ := http.NewRequest(http.MethodPut, adminURL+"/admin/v2/tenants/acme", strings.NewReader(`{"allowedClusters":["standalone"]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("creating a tenant: %v %v", resp, err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := "persistent://public/default/killed"
	c := clientOf(t, url)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cons.Close()
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	_, url, adminURL = startOn(t, dir)
	resp, err = http.Get(adminURL + "/admin/v2/tenants")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"acme"`) {
		t.Fatalf("the tenants after the kill: %s", body)
	}
	c = clientOf(t, url)
	defer c.Close()
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("message %d after the kill: %v", i, err)
		}
		if string(m.Payload()) != fmt.Sprint(i) {
			t.Fatalf("message %d after the kill is %q", i, m.Payload())
		}
	}
}

func TestAnUnknownDataSyncPolicyIsRefused(t *testing.T) {
	refused(t, []string{"-data-dir", t.TempDir(), "-data-sync", "sometimes"}, `unknown sync policy "sometimes"`, "fsync", "write")
}
