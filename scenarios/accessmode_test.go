package scenarios_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
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
	// The whole error: the code and the broker's message, with the
	// broker's number in generated producer names masked.
	kind := func(err error) string {
		if err == nil {
			return "ok"
		}
		return producerNumber.ReplaceAllString(err.Error(), "standalone-0-N")
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

	shared, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic + "-shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic + "-shared", ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	out = append(out, "exclusive beside a shared producer: "+kind(err))
	return out
}

// producerNumber matches the number a standalone gives a producer it names.
var producerNumber = regexp.MustCompile(`standalone-0-[0-9]+`)

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
