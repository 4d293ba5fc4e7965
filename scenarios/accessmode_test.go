package scenarios_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// accessOutcome tries producers with each access mode next to an exclusive
// one and reports, per attempt, the Pulsar error kind the client got.
func accessOutcome(t *testing.T, tg *scenarios.Target, topic string) []string {
	client := tg.Client()
	holder, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	kind := func(err error) string {
		if err == nil {
			return "ok"
		}
		for _, k := range []string{"ProducerFenced", "ProducerBusy"} {
			if strings.Contains(err.Error(), k) {
				return k
			}
		}
		return "other: " + err.Error()
	}
	var out []string
	for _, mode := range []pulsar.ProducerAccessMode{pulsar.ProducerAccessModeExclusive, pulsar.ProducerAccessModeShared} {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: mode})
		if err == nil {
			p.Close()
		}
		out = append(out, fmt.Sprintf("mode %d beside an exclusive producer: %s", mode, kind(err)))
	}
	_, err = holder.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("still the holder")})
	out = append(out, "holder sends: "+kind(err))
	return out
}

// TestDifferentialProducerAccessModes compares what producers see beside an
// exclusive producer on pulsarsim and on a real Pulsar.
func TestDifferentialProducerAccessModes(t *testing.T) {
	url := oracleURL(t)
	topic := fmt.Sprintf("persistent://public/default/access-%x", rand.Uint32())
	sim := accessOutcome(t, scenarios.SimTarget(t), topic)
	real := accessOutcome(t, scenarios.RemoteTarget(t, url, ""), topic)
	if diff := cmp.Diff(real, sim); diff != "" {
		t.Fatalf("access modes differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both: %v", sim)
}
