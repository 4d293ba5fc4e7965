package testkit_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// Topic properties set with pulsaradmin are kept with the topic's ledger
// and the partitioned metadata: a restart and a crash on the data directory
// keep them, messages produced meanwhile do not touch them, and deleting
// the topic takes them with it.
func TestTopicPropertiesSurviveARestartAndACrash(t *testing.T) {
	for _, stop := range []string{"restart", "crash"} {
		t.Run(stop, func(t *testing.T) {
			b := testkit.Start(t, testkit.WithDataDir(t.TempDir()))
			a := pulsaradminFor(t, b)
			plain, _ := utils.GetTopicName("persistent://public/default/props")
			parted, _ := utils.GetTopicName("persistent://public/default/props-parted")
			if err := a.Topics().CreateWithProperties(*plain, 0, map[string]string{"owner": "team-a"}); err != nil {
				t.Fatal(err)
			}
			if err := a.Topics().UpdateProperties(*plain, map[string]string{"tier": "gold"}); err != nil {
				t.Fatal(err)
			}
			if err := a.Topics().CreateWithProperties(*parted, 2, map[string]string{"schema": "v1"}); err != nil {
				t.Fatal(err)
			}
			// A producer writes to the topic before the stop.
			p, err := b.Client().CreateProducer(pulsar.ProducerOptions{Topic: plain.String()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
				t.Fatal(err)
			}
			p.Close()
			if stop == "crash" {
				b.Crash()
			}
			b.Restart()
			a = pulsaradminFor(t, b)
			for topic, want := range map[utils.TopicName]map[string]string{
				*plain:  {"owner": "team-a", "tier": "gold"},
				*parted: {"schema": "v1"},
			} {
				got, err := a.Topics().GetProperties(topic)
				if err != nil || !maps.Equal(got, want) {
					t.Fatalf("%s after the %s: %v, %v, want %v", topic.String(), stop, got, err, want)
				}
			}
			if err := a.Topics().Delete(*plain, false, true); err != nil {
				t.Fatal(err)
			}
			if err := a.Topics().CreateWithProperties(*plain, 0, nil); err != nil {
				t.Fatal(err)
			}
			if got, err := a.Topics().GetProperties(*plain); err != nil || len(got) != 0 {
				t.Fatalf("a topic created again under the deleted one's name: %v, %v", got, err)
			}
		})
	}
}

// Pulsar 4.0.8 never answers a PUT or a DELETE of the properties of a topic
// that does not exist (its broker leaves the request's future pending);
// pulsarsim answers the 404 its GET answers, which pulsaradmin reports.
func TestTopicPropertiesOfAMissingTopic(t *testing.T) {
	b := testkit.Start(t)
	a := pulsaradminFor(t, b)
	missing, _ := utils.GetTopicName("persistent://public/default/missing")
	for what, err := range map[string]error{
		"get":    second(a.Topics().GetProperties(*missing)),
		"update": a.Topics().UpdateProperties(*missing, map[string]string{"a": "1"}),
		"remove": a.Topics().RemoveProperty(*missing, "a"),
	} {
		var re rest.Error
		if !errors.As(err, &re) || re.Code != http.StatusNotFound || !strings.Contains(re.Reason, "not found") {
			t.Errorf("%s: %v, want a 404", what, err)
		}
	}
}

// second returns the second of two results.
func second[A, B any](_ A, b B) B { return b }
