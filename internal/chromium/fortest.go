package chromium

import (
	"context"
	"os"
	"testing"
	"time"
)

// ForTest starts a browser for a test and closes it when the test ends.
// Without a browser on the machine the test is skipped, unless CI=true, where
// .ci/run installs one and its absence is a failure.
func ForTest(tb testing.TB) *Browser {
	tb.Helper()
	path, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("CI=true and %v", err)
		}
		tb.Skipf("skipped: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Start(ctx, path)
	if err != nil {
		tb.Fatalf("start %s: %v", path, err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}
