package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestTopicStatsCountExpiriesAndTheOldestBacklogAge(t *testing.T) {
	clk := broker.NewManualClock(time.Now())
	b, url := serveAdmin(t, broker.WithClock(clk), broker.WithPreciseBacklogQuotaCheck(true))
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/default/expiring"
	tn := topicName(t, topic)
	c := newClient(t, b)
	// A subscription without consumers, and three messages in its backlog.
	internalStatsConsumer(t, c, topic, "s", pulsar.Shared).Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 3 {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.Topics().GetStats(tn)
	if err != nil {
		t.Fatal(err)
	}
	if age := oldestBacklogAge(t, url, topic); age != -1 {
		t.Errorf("oldestBacklogMessageAgeSeconds before any check by age: %d, want -1", age)
	}

	// A message_age quota makes the periodic check measure the backlog's
	// age; the stats count it to now.
	if err := b.UpdateNamespacePolicies("public/default", func(p *broker.Policies) {
		p.MessageAgeBacklogQuota = &broker.BacklogQuota{LimitBytes: -1, LimitSeconds: 3600, Policy: broker.ProducerRequestHold}
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(90 * time.Second)
	b.RunBacklogQuotaCheck()
	// The messages were published by the wall clock shortly after the
	// broker clock started.
	if age := oldestBacklogAge(t, url, topic); age < 80 || age > 90 {
		t.Errorf("oldestBacklogMessageAgeSeconds 90 s later: %d", age)
	}

	if err := b.ExpireMessages(topic, "s", time.Minute); err != nil {
		t.Fatal(err)
	}
	if st, err = a.Topics().GetStats(tn); err != nil {
		t.Fatal(err)
	}
	s := st.Subscriptions["s"]
	if s.TotalMsgExpired != 3 || s.LastExpireTimestamp != clk.Now().UnixMilli() || s.MsgBacklog != 0 {
		t.Errorf("after the expiry: %d expired at %d, backlog %d; want 3 at %d, 0",
			s.TotalMsgExpired, s.LastExpireTimestamp, s.MsgBacklog, clk.Now().UnixMilli())
	}
}

// oldestBacklogAge reads a topic's oldestBacklogMessageAgeSeconds, which
// pulsaradmin's TopicStats does not have.
func oldestBacklogAge(t *testing.T, url, topic string) int64 {
	t.Helper()
	resp, err := http.Get(url + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Age *int64 `json:"oldestBacklogMessageAgeSeconds"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Age == nil {
		t.Fatalf("stats: %v, age %v", err, st.Age)
	}
	return *st.Age
}

// Topic stats leave out the producers and the consumers that the request's
// excludePublishers and excludeConsumers name (the lists written empty, as
// Pulsar 4.0.8 writes them), on a topic and on a partitioned topic's sum
// and partitions.
func TestTopicStatsExcludeProducersAndConsumersOnRequest(t *testing.T) {
	b, url := serveAdmin(t)
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CreatePartitionedTopic("persistent://public/default/excluded-parted", 1); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b)
	for _, topic := range []string{"persistent://public/default/excluded", "persistent://public/default/excluded-parted"} {
		cons := internalStatsConsumer(t, c, topic, "s", pulsar.Shared)
		defer cons.Close()
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
	}
	for _, exclude := range []bool{false, true} {
		opts := utils.GetStatsOptions{ExcludePublishers: exclude, ExcludeConsumers: exclude}
		want := 1
		if exclude {
			want = 0
		}
		check := func(what string, publishers []utils.PublisherStats, subs map[string]utils.SubscriptionStats) {
			if len(publishers) != want || len(subs["s"].Consumers) != want {
				t.Errorf("%s, exclude %v: %d producers and %d consumers in the stats, want %d of each", what, exclude,
					len(publishers), len(subs["s"].Consumers), want)
			}
		}
		st, err := a.Topics().GetStatsWithOption(topicName(t, "persistent://public/default/excluded"), opts)
		if err != nil {
			t.Fatal(err)
		}
		check("topic", st.Publishers, st.Subscriptions)
		ps, err := a.Topics().GetPartitionedStatsWithOption(topicName(t, "persistent://public/default/excluded-parted"), true, opts)
		if err != nil {
			t.Fatal(err)
		}
		check("partitioned sum", ps.Publishers, ps.Subscriptions)
		for name, part := range ps.Partitions {
			check(name, part.Publishers, part.Subscriptions)
		}
	}
}
