package testkit

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/admin/view"
)

// ReportDirEnv names the environment variable that sets the folder where a
// failing test's report is written. Without it the report goes to the
// test's artifact folder (testing.T.ArtifactDir), which `go test -artifacts`
// keeps and a plain `go test` removes when the test ends.
const ReportDirEnv = "PULSARSIM_REPORT_DIR"

// reportSize is the number of messages a report pictures.
const reportSize = 12

// ViewURL returns the address of the broker's live web view,
// "http://127.0.0.1:PORT/view/" on the admin port (AdminURL): its topics,
// subscriptions, consumers and pending entries, and a picture of any
// message's life. It is served from the first call until the test ends. A
// broker of a cluster shows the events of the whole cluster (Cluster's
// history), each named by its broker, and the topics' moves between them;
// a broker of StartClusters' clusters shows the events of every cluster, so
// that a message's page draws its copies on the other clusters.
func (b *Broker) ViewURL() string {
	b.tb.Helper()
	return b.AdminURL() + "/view/"
}

// WriteReport writes a report of the broker to path, as one self-contained
// HTML file: the state of every topic and subscription, and a picture of the
// life of each of the busiest messages (the ones with the most events), as
// a failing test's report has; for a broker of a cluster, the lives are
// those of the cluster's events, as its web view shows them. It fails the
// test when the file cannot be written.
func (b *Broker) WriteReport(path string) {
	b.tb.Helper()
	b.must(b.writeReport(path, fmt.Sprintf("What the broker saw during %s.", b.tb.Name()), false), "write the report %s", path)
}

func (b *Broker) writeReport(path, note string, failed bool) error {
	events, topics := b.shownEvents(), func(string) bool { return true }
	if failed {
		var scope string
		events, scope, topics = b.failureScope()
		if scope != "" {
			note = fmt.Sprintf("%s failed. These are the lives of the busiest messages%s, as the broker saw them; the other cases' topics are left out.", b.tb.Name(), scope)
		}
	}
	rep := view.NewReport(b.srv, events, reportSize)
	rep.Topics = slices.DeleteFunc(rep.Topics, func(t view.TopicState) bool { return !topics(t.Name) })
	rep.Title = b.tb.Name()
	rep.Note, rep.Failed = note, failed
	rep.History = b.shownHistory().Stats()
	return writeReportFile(path, rep)
}

// writeReportFile writes rep to path.
func writeReportFile(path string, rep view.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := view.WriteReport(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shownHistory is the history the broker's view and reports read.
func (b *Broker) shownHistory() *view.History {
	if b.shown != nil {
		return b.shown
	}
	return b.history
}

// shownEvents returns the events of shownHistory, once they have reached it.
func (b *Broker) shownEvents() []Event {
	b.srv.DeliverEvents()
	h := b.shownHistory()
	h.Deliver()
	return h.Events()
}

// reportFailure writes the failing test's report and logs where it is.
func (b *Broker) reportFailure() {
	note := fmt.Sprintf("%s failed. These are the lives of its busiest messages, as the broker saw them.", b.tb.Name())
	reportFailure(b.tb, func(path string) error { return b.writeReport(path, note, true) })
}

// reportFailure writes a failing test's report with write, to the report
// folder, and logs where it is.
func reportFailure(tb testing.TB, write func(path string) error) { reportFailureAs(tb, "", write) }

// reportFailureAs is reportFailure for one of several reports of a test,
// whose file name ends with suffix. The reports of one test are written
// from one cleanup: the test's artifact folder goes at the end of the
// cleanup that first asks for it.
func reportFailureAs(tb testing.TB, suffix string, write func(path string) error) {
	dir, kept := os.Getenv(ReportDirEnv), true
	if dir == "" {
		dir = tb.ArtifactDir()
		f := flag.Lookup("test.artifacts")
		kept = f != nil && f.Value.String() == "true"
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Logf("pulsarsim: no report: %v", err)
		return
	}
	name := strings.NewReplacer("/", "__", "\\", "_", ":", "_", " ", "_").Replace(tb.Name() + suffix)
	path := filepath.Join(dir, name+".html")
	if err := write(path); err != nil {
		tb.Logf("pulsarsim: no report: %v", err)
		return
	}
	how := ""
	if !kept {
		how = fmt.Sprintf(" (removed when the test ends: set %s, or run go test -artifacts, to keep it)", ReportDirEnv)
	}
	tb.Logf("pulsarsim: pictures of the busiest messages' lives: %s%s", path, how)
}
