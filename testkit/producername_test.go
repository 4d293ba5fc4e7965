package testkit_test

import (
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// A broker restarted on its data directory generates producer names that
// its earlier run never gave out (Pulsar's brokers take the number in them
// from a counter in the metadata store), so a deduplicating topic takes a
// new producer for a new one: it starts at sequence id 0, not after the
// last one an earlier producer of the same name stored.
func TestARestartedBrokerGivesNewProducersNewNames(t *testing.T) {
	b := testkit.Start(t, testkit.WithDataDir(t.TempDir()), testkit.WithDeduplication())
	topic := "persistent://public/default/names"
	cons := subscribe(t, b.Client(), topic, "s")
	produceN(t, b.Client(), topic, 3)
	first := b.Messages(topic)[0].Producer
	b.Restart()
	produceN(t, b.Client(), topic, 3)
	ms := b.Messages(topic)
	if len(ms) != 6 {
		t.Fatalf("%d messages stored, want 6: the second producer's were taken for the first one's", len(ms))
	}
	if seq := ms[3].SequenceID; seq != 0 {
		t.Fatalf("the new producer's first message has sequence id %d, want 0", seq)
	}
	second := ms[5].Producer
	if first == second || !strings.HasPrefix(first, "standalone-0-") || !strings.HasPrefix(second, "standalone-1-") {
		t.Fatalf("producer names %q then %q, want standalone-0-… then standalone-1-…", first, second)
	}
	if got := payloads(receiveN(t, cons, 6)); len(got) != 6 {
		t.Fatalf("received %v", got)
	}
}
