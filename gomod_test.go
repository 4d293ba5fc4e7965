package pulsarsim_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestGoModIsTidy runs go mod tidy -diff: go.mod must list every module the
// code imports directly as a direct requirement, and nothing it does not
// need. It is skipped when the go command or the modules it needs are out
// of reach (no network and an empty module cache).
func TestGoModIsTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goCmd, "mod", "tidy", "-diff").CombinedOutput()
	if err == nil {
		return
	}
	if strings.Contains(string(out), "diff current/go.mod") || strings.Contains(string(out), "diff current/go.sum") {
		t.Fatalf("go mod tidy -diff is not empty: run go mod tidy\n%s", out)
	}
	t.Skipf("go mod tidy -diff could not run: %v\n%s", err, out)
}
