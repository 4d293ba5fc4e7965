package pulsarsim_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// readmeSnippets returns the Go snippets of README.md, in order.
func readmeSnippets(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(readme), "```go\n")[1:] {
		code, _, ok := strings.Cut(block, "\n```")
		if !ok {
			t.Fatalf("a Go snippet of README.md does not end:\n%s", block)
		}
		out = append(out, code+"\n")
	}
	return out
}

// snippetImports may be imported by a README snippet: a user's test needs
// testkit alone of pulsarsim, beside the standard library, the Pulsar
// client and rapid.
var snippetImports = regexp.MustCompile(`^("[a-z/]+"|"github\.com/pulsarsim/pulsarsim/testkit"|"github\.com/apache/pulsar-client-go/pulsar[a-z/]*"|"pgregory\.net/rapid")$`)

// TestReadmeSnippetsCompileAndPassInANewModule copies every Go snippet of
// README.md, as printed, into a module of its own that requires pulsarsim
// (this checkout), and runs go test there: each snippet is a whole test
// file, imports, package clause and all, which imports testkit and no other
// package of pulsarsim.
func TestReadmeSnippetsCompileAndPassInANewModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the README's snippets in a module of their own")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	snippets := readmeSnippets(t)
	if len(snippets) < 3 {
		t.Fatalf("README.md has %d Go snippets, want at least the three tests it shows", len(snippets))
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, code := range snippets {
		pkg, _, _ := strings.Cut(strings.TrimPrefix(code, "package "), "\n")
		if !strings.HasPrefix(code, "package ") || !strings.HasSuffix(pkg, "_test") {
			t.Errorf("README snippet %d does not start with the package clause of a test file:\n%s", i+1, code)
			continue
		}
		_, imports, _ := strings.Cut(code, "import (\n")
		imports, _, _ = strings.Cut(imports, "\n)")
		for _, line := range strings.Split(imports, "\n") {
			if line = strings.TrimSpace(line); line != "" && !snippetImports.MatchString(line) {
				t.Errorf("README snippet %d imports %s: a test should need testkit alone of pulsarsim", i+1, line)
			}
		}
		sub := filepath.Join(dir, fmt.Sprintf("snippet%d", i+1))
		must(t, os.MkdirAll(sub, 0o755))
		must(t, os.WriteFile(filepath.Join(sub, "snippet_test.go"), []byte(code), 0o644))
	}
	// The new module requires what pulsarsim requires, at the same versions,
	// so that it builds from the same module cache.
	data, err := os.ReadFile("go.mod")
	must(t, err)
	ours, err := modfile.Parse("go.mod", data, nil)
	must(t, err)
	mod := &modfile.File{}
	must(t, mod.AddModuleStmt("example.com/readme"))
	must(t, mod.AddGoStmt(ours.Go.Version))
	must(t, mod.AddRequire(ours.Module.Mod.Path, "v0.0.0"))
	for _, r := range ours.Require {
		must(t, mod.AddRequire(r.Mod.Path, r.Mod.Version))
	}
	must(t, mod.AddReplace(ours.Module.Mod.Path, "", root, ""))
	text, err := mod.Format()
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), text, 0o644))
	sum, err := os.ReadFile("go.sum")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))

	cmd := exec.Command(goCmd, "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go test of the README's snippets: %v\n%s", err, out.String())
	}
	t.Logf("the README's %d snippets:\n%s", len(snippets), out.String())
}

// TestReadmeNamesTheGoVersionOfGoMod checks that the README's set-up asks
// for the Go version go.mod requires.
func TestReadmeNamesTheGoVersionOfGoMod(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	must(t, err)
	mod, err := modfile.Parse("go.mod", data, nil)
	must(t, err)
	readme, err := os.ReadFile("README.md")
	must(t, err)
	want := "for Go " + mod.Go.Version + " or later"
	if !strings.Contains(string(readme), want) || !strings.Contains(string(readme), "`"+mod.Module.Mod.Path+"`") {
		t.Errorf("README.md does not say %q with the module path %s", want, mod.Module.Mod.Path)
	}
}

// TestReadmeFidelityRowsStayShort keeps the README's fidelity table
// readable: the detail of a row belongs in FIDELITY.md.
func TestReadmeFidelityRowsStayShort(t *testing.T) {
	const most = 300
	readme, err := os.ReadFile("README.md")
	must(t, err)
	_, section, _ := strings.Cut(string(readme), "\n## Fidelity\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		rows++
		if n := len([]rune(line)); n > most {
			t.Errorf("a fidelity row of %d characters (at most %s): %.80s…", n, strconv.Itoa(most), line)
		}
	}
	if rows < 10 {
		t.Errorf("the README's fidelity table has %d rows", rows)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeSaysWhatAGoClientSeesOfAnAbortedTransaction keeps the README's
// account of aborted transactions with pulsar-client-go v0.19.0 (their
// messages are delivered, as on Pulsar 4.0.8) tied to the test that pins
// that behaviour.
func TestReadmeSaysWhatAGoClientSeesOfAnAbortedTransaction(t *testing.T) {
	const pin = "TestGoClientsAbortedMessagesAreDeliveredAsOnPulsar"
	readme, err := os.ReadFile("README.md")
	must(t, err)
	if strings.Contains(string(readme), "acknowledged unseen") || !strings.Contains(string(readme), "`"+pin+"`") {
		t.Errorf("README.md does not say that a Go client's aborted messages are delivered, naming %s", pin)
	}
	src, err := os.ReadFile(filepath.Join("broker", "txn_test.go"))
	must(t, err)
	if !strings.Contains(string(src), "func "+pin+"(") {
		t.Errorf("broker/txn_test.go has no %s: the README names a test that is gone", pin)
	}
}
