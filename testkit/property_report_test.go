package testkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// brokenHandlerEnv makes TestBrokenHandlerPropertyFails run: it fails on
// purpose, so it runs only as the child process of
// TestAFailingPropertyReportsOnlyItsShrunkCase.
const brokenHandlerEnv = "PULSARSIM_TEST_BROKEN_HANDLER"

// TestBrokenHandlerPropertyFails is the README's property check of a
// handler with a bug: it looks up what to do by the message's key and has
// nothing for "k1", so it panics on every delivery of such a message, and
// the message never settles.
func TestBrokenHandlerPropertyFails(t *testing.T) {
	if os.Getenv(brokenHandlerEnv) == "" {
		t.Skip("fails on purpose; run by TestAFailingPropertyReportsOnlyItsShrunkCase")
	}
	byKey := map[string]func(pulsar.Consumer, pulsar.Message){
		"k0": func(c pulsar.Consumer, m pulsar.Message) { c.Ack(m) },
		"k2": func(c pulsar.Consumer, m pulsar.Message) { c.Ack(m) },
	}
	b := testkit.Start(t)
	rapid.Check(t, func(rt *rapid.T) {
		c := testkit.HandlerCases().Draw(rt, "case")
		b.CheckHandler(rt, c, func(c pulsar.Consumer, m pulsar.Message) { byKey[m.Key()](c, m) })
	})
}

var (
	reportLine   = regexp.MustCompile(`pictures of the busiest messages' lives: (\S+\.html)`)
	caseTopic    = regexp.MustCompile(`handler-\d+`)
	topicHeading = regexp.MustCompile(`persistent://public/default/(handler-\d+)`)
)

// TestAFailingPropertyReportsOnlyItsShrunkCase runs the broken handler's
// property check in a child process and reads what it wrote: the case
// fails as soon as the handler's panic is known (not after the settle
// limit), and the busiest messages' log and the HTML report show only the
// topic of the last case run, the shrunk one rapid prints.
func TestAFailingPropertyReportsOnlyItsShrunkCase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a failing property check in a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenHandlerPropertyFails$", "-test.count=1", "-rapid.nofailfile")
	cmd.Env = append(os.Environ(), brokenHandlerEnv+"=1", testkit.ReportDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the broken handler's property check passed:\n%s", out)
	}
	text := string(out)
	if strings.Contains(text, "not settled after") {
		t.Errorf("a case waited for the settle limit after its failure was known:\n%s", tail(text))
	}
	if !strings.Contains(text, "the handler panicked") {
		t.Errorf("the failure does not name the handler's panic:\n%s", tail(text))
	}
	// The last case run is the shrunk one rapid prints: its topic is the
	// highest numbered.
	last := ""
	for _, m := range caseTopic.FindAllString(text, -1) {
		if len(m) > len(last) || len(m) == len(last) && m > last {
			last = m
		}
	}
	_, log, found := strings.Cut(text, "what the broker saw")
	if !found {
		t.Fatalf("no busiest-messages log:\n%s", tail(text))
	}
	for _, m := range topicHeading.FindAllStringSubmatch(log, -1) {
		if m[1] != last && m[1] != last+"-DLQ" {
			t.Errorf("the busiest-messages log shows %s, not only the final case's %s", m[1], last)
		}
	}
	rep := reportLine.FindStringSubmatch(text)
	if rep == nil {
		t.Fatalf("no report path logged:\n%s", tail(text))
	}
	html, err := os.ReadFile(filepath.Clean(rep[1]))
	if err != nil {
		t.Fatal(err)
	}
	topics := map[string]bool{}
	for _, m := range topicHeading.FindAllStringSubmatch(string(html), -1) {
		topics[m[1]] = true
	}
	if !topics[last] {
		t.Errorf("the report does not show the final case's topic %s (it shows %v)", last, topics)
	}
	for tp := range topics {
		if tp != last && tp != last+"-DLQ" {
			t.Errorf("the report shows %s, not only the final case's %s", tp, last)
		}
	}
}

// tail returns the end of a long output, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
