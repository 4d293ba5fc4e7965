package testkit_test

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// A namespace's bookie affinity group, set with pulsaradmin, is one of its
// local policies, kept in the store: a restart and a crash on the data
// directory keep it.
func TestBookieAffinityGroupSurvivesARestartAndACrash(t *testing.T) {
	for _, stop := range []string{"restart", "crash"} {
		t.Run(stop, func(t *testing.T) {
			b := testkit.Start(t, testkit.WithDataDir(t.TempDir()))
			a := pulsaradminFor(t, b)
			want := utils.BookieAffinityGroupData{BookkeeperAffinityGroupPrimary: "rack-a", BookkeeperAffinityGroupSecondary: "rack-b"}
			if err := a.Namespaces().SetBookieAffinityGroup("public/default", want); err != nil {
				t.Fatal(err)
			}
			if stop == "crash" {
				b.Crash()
			}
			b.Restart()
			got, err := pulsaradminFor(t, b).Namespaces().GetBookieAffinityGroup("public/default")
			if err != nil || got == nil || *got != want {
				t.Fatalf("after the %s: %+v, %v, want %+v", stop, got, err, want)
			}
		})
	}
}
