package testkit_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// migrate posts blue's migration to green to blue's admin API, as an
// operator does (POST /admin/v2/clusters/blue/migrate).
func migrate(t *testing.T, blue, green *testkit.Cluster, migrated bool) {
	t.Helper()
	body := fmt.Sprintf(`{"serviceUrl":%q,"brokerServiceUrl":%q}`, green.Broker(0).AdminURL(), green.Broker(0).URL())
	resp, err := http.Post(fmt.Sprintf("%s/admin/v2/clusters/blue/migrate?migrated=%v", blue.Broker(0).AdminURL(), migrated),
		"application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("migrate: HTTP %d", resp.StatusCode)
	}
}

// Once the blue cluster is migrated, pulsar-client-go's producer is told
// TOPIC_MIGRATED and produces on the green cluster, while its consumer
// stays on blue until it has acknowledged what blue holds, and then moves
// to green and gets what was produced there: nothing lost.
func TestAMigratedClustersProducerMovesAtOnceAndItsConsumerOnceItsBacklogIsAcked(t *testing.T) {
	// Blue checks its loaded topics for a migration, as the compose file
	// of pulsar-client-go's test sets its brokers up.
	blue := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("blue"),
		broker.WithClusterMigrationCheck(time.Second)))
	green := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("green")))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "persistent://public/default/blue-green"
	migrate(t, blue, green, false) // the URL is known, the cluster not migrated yet
	client := blue.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := range 3 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("blue-", i))}); err != nil {
			t.Fatal(err)
		}
	}

	migrate(t, blue, green, true)
	waitProducer(t, green.Broker(0), topic)
	if ts, _ := blue.Broker(0).Topic(topic); len(ts.Producers) != 0 {
		t.Errorf("blue still has producers %v after the migration", ts.Producers)
	}
	if raceDetector { // see race_on_test.go: the producer moved; send with one made on green
		p.Close()
		if p, err = green.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("green-0")}); err != nil {
		t.Fatalf("send after the migration: %v", err)
	}
	if got := storedPayloads(t, green, topic); len(got) != 1 || got[0] != "green-0" {
		t.Errorf("green holds %v, want [green-0]", got)
	}
	if got := storedPayloads(t, blue, topic); len(got) != 3 {
		t.Errorf("blue holds %v, want its 3 messages and no more", got)
	}
	// The consumer has not acknowledged blue's messages: it is still there.
	if s, ok := blue.Broker(0).Subscription(topic, "s"); !ok || len(s.Consumers) != 1 || s.Backlog != 3 {
		t.Fatalf("blue's subscription before the acks: %+v, want its consumer and a backlog of 3", s)
	}
	var got []string
	for len(got) < 4 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive after %v: %v", got, err)
		}
		got = append(got, string(m.Payload()))
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	if want := "[blue-0 blue-1 blue-2 green-0]"; fmt.Sprint(got) != want {
		t.Errorf("the consumer got %v, want %s", got, want)
	}
	if s, _ := blue.Broker(0).Subscription(topic, "s"); len(s.Consumers) != 0 {
		t.Errorf("blue's subscription still has consumers %+v once its backlog was acked", s.Consumers)
	}
}

// Without a migration check (Pulsar's default), a migrated cluster's topics
// loaded before stay as they were, and those loaded after are migrated: a
// new producer there gets TOPIC_MIGRATED and no answer, as on Pulsar 4.0.8;
// pulsar-client-go, which has not registered it yet, ignores it and its
// request times out.
func TestWithoutAMigrationCheckOnlyTheTopicsLoadedAfterTheMigrationMove(t *testing.T) {
	blue := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("blue")))
	green := testkit.StartCluster(t, 1, testkit.WithBroker(broker.WithClusterName("green")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := blue.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = time.Second })
	early, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "early", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	blue.MigrateTo(green)
	if _, err := early.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("still blue")}); err != nil {
		t.Fatalf("send on a topic loaded before the migration: %v", err)
	}
	if got := storedPayloads(t, blue, "early"); len(got) != 1 {
		t.Errorf("blue holds %v on the topic loaded before, want the message sent after the migration", got)
	}
	if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "late"}); err == nil {
		t.Fatal("a producer was created on a migrated cluster")
	}
	var migrated int
	for _, e := range blue.Events() {
		if e.Kind == testkit.EventTopicMigrated {
			migrated++
		}
	}
	if migrated == 0 {
		t.Error("no TOPIC_MIGRATED was sent to the new producer")
	}
}
