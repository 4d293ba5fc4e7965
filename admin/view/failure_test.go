package view_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// failingEnv makes TestScenarioThatFails run (and fail): the tests of the
// failure report run it in a child process.
const failingEnv = "PULSARSIM_VIEW_FAIL_ON_PURPOSE"

// TestScenarioThatFails runs the orders scenario and fails, so that testkit
// writes its failure report. It only runs in the child process that
// failingReport starts.
func TestScenarioThatFails(t *testing.T) {
	if os.Getenv(failingEnv) == "" {
		t.Skip("runs only as the child process of the failure report tests")
	}
	runOrders(t)
	t.Error("failing on purpose, for the report")
}

// reportLine is the line testkit logs when it writes a failure report.
var reportLine = regexp.MustCompile(`pulsarsim: pictures of the busiest messages' lives: (\S+\.html)`)

// failingReport runs TestScenarioThatFails in a child process with its
// report folder set to dir, and returns the report's path from the log.
func failingReport(t *testing.T, dir string) string {
	t.Helper()
	path, _ := failingReportOf(t, "TestScenarioThatFails", dir)
	return path
}

// failingReportOf runs the test named in a child process, as failingReport
// does, and also returns its output.
func failingReportOf(t *testing.T, test, dir string) (path, log string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), failingEnv+"=1", testkit.ReportDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failing on purpose") {
		t.Fatalf("the child test did not fail as planned (%v):\n%s", err, out)
	}
	m := reportLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("the failing test logged no report:\n%s", out)
	}
	return string(m[1]), string(out)
}

func TestAFailingTestWritesItsReportAndLogsThePath(t *testing.T) {
	dir := t.TempDir()
	path := failingReport(t, dir)
	if filepath.Dir(path) != dir {
		t.Fatalf("report %s, want it in %s", path, dir)
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(body)
	for _, want := range []string{"TestScenarioThatFails failed", `<svg class="life"`, `data-outcome="dead-lettered"`, "<style>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// Self-contained: nothing to load from elsewhere.
	for _, ref := range []string{`src="`, `href="http`, `<link`, "@import", "url(http"} {
		if strings.Contains(html, ref) {
			t.Errorf("the report refers to something outside it: %q", ref)
		}
	}
}
