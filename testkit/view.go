package testkit

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
// message's life. It is served from the first call until the test ends.
func (b *Broker) ViewURL() string {
	b.tb.Helper()
	return b.AdminURL() + "/view/"
}

// WriteReport writes a report of the broker to path, as one self-contained
// HTML file: the state of every topic and subscription, and a picture of the
// life of each of the busiest messages (the ones with the most events), as
// a failing test's report has. It fails the test when the file cannot be
// written.
func (b *Broker) WriteReport(path string) {
	b.tb.Helper()
	b.must(b.writeReport(path, fmt.Sprintf("What the broker saw during %s.", b.tb.Name()), false), "write the report %s", path)
}

func (b *Broker) writeReport(path, note string, failed bool) error {
	events, topics := b.Events(), func(string) bool { return true }
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
	rep.History = b.history.Stats()
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

// reportFailure writes the failing test's report and logs where it is.
func (b *Broker) reportFailure() {
	dir, kept := os.Getenv(ReportDirEnv), true
	if dir == "" {
		dir = b.tb.ArtifactDir()
		f := flag.Lookup("test.artifacts")
		kept = f != nil && f.Value.String() == "true"
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.tb.Logf("pulsarsim: no report: %v", err)
		return
	}
	name := strings.NewReplacer("/", "__", "\\", "_", ":", "_", " ", "_").Replace(b.tb.Name())
	path := filepath.Join(dir, name+".html")
	note := fmt.Sprintf("%s failed. These are the lives of its busiest messages, as the broker saw them.", b.tb.Name())
	if err := b.writeReport(path, note, true); err != nil {
		b.tb.Logf("pulsarsim: no report: %v", err)
		return
	}
	how := ""
	if !kept {
		how = fmt.Sprintf(" (removed when the test ends: set %s, or run go test -artifacts, to keep it)", ReportDirEnv)
	}
	b.tb.Logf("pulsarsim: pictures of the busiest messages' lives: %s%s", path, how)
}
