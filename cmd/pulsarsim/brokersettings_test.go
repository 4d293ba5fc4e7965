package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

var (
	servingLine = regexp.MustCompile(`msg="pulsarsim serving" url=(\S+)`)
	adminLine   = regexp.MustCompile(`msg="pulsarsim admin API serving" url=(\S+)`)
)

// startStandalone runs the standalone with args and returns its service
// URL and admin URL once it logs them.
func startStandalone(t *testing.T, args ...string) (service, admin string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
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
		var found [2]string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found[0] = m[1]
			}
			if m := adminLine.FindStringSubmatch(sc.Text()); m != nil {
				found[1] = m[1]
				urls <- found
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		return u[0], u[1]
	case <-time.After(30 * time.Second):
		t.Fatal("the standalone logged no URLs")
	}
	return "", ""
}

func TestStandaloneConfSetsPartitionedAutoCreationAndSchemaValidation(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(conf, []byte("allowAutoTopicCreationType=partitioned\ndefaultNumPartitions=3\n"+
		"isSchemaValidationEnforced=true\n"), 0o600))
	service, admin := startStandalone(t, "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-config", conf)
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: service, Logger: log.DefaultNopLogger()})
	must(t, err)
	defer client.Close()

	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "new-topic"})
	must(t, err)
	p.Close()
	if parts, err := client.TopicPartitions("new-topic"); err != nil || len(parts) != 3 {
		t.Fatalf("a producer's new topic has partitions %v (%v), want 3", parts, err)
	}

	req, _ := http.NewRequest("POST", admin+"/admin/v2/schemas/public/default/typed/schema",
		strings.NewReader(`{"type":"STRING","schema":"","properties":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("posting a schema: %s", resp.Status)
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "typed"})
	if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
		t.Fatalf("a producer without a schema on a topic with one: %v, want IncompatibleSchema", err)
	}
}
