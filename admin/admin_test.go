package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	padmin "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/broker"
)

// serveAdmin starts a broker with these options and its admin API, both
// closed when the test ends, and returns the broker and the API's URL.
func serveAdmin(t *testing.T, opts ...broker.Option) (*broker.Broker, string) {
	t.Helper()
	b := broker.New(opts...)
	if err := b.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin.New(b))
	t.Cleanup(func() {
		srv.Close()
		b.Close()
	})
	return b, srv.URL
}

// startAdmin starts a broker with its admin API and returns both, with a
// pulsaradmin client for the API.
func startAdmin(t *testing.T) (*broker.Broker, padmin.Client, string) {
	t.Helper()
	b, url := serveAdmin(t)
	a, err := padmin.New(&config.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return b, a, url
}

func topicName(t *testing.T, s string) utils.TopicName {
	t.Helper()
	tn, err := utils.GetTopicName(s)
	if err != nil {
		t.Fatal(err)
	}
	return *tn
}

// wantStatus checks that err is a pulsaradmin error with the HTTP code.
func wantStatus(t *testing.T, err error, code int) {
	t.Helper()
	var re rest.Error
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("got error %v, want HTTP %d", err, code)
	}
	if re.Reason == "" {
		t.Fatalf("error %d without a reason", code)
	}
}

func newClient(t *testing.T, b *broker.Broker) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestAdminTenantsAndNamespaces(t *testing.T) {
	_, a, _ := startAdmin(t)
	if err := a.Tenants().Create(utils.TenantData{Name: "acme", AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Tenants().Create(utils.TenantData{Name: "acme"}), http.StatusConflict)
	tenants, err := a.Tenants().List()
	if err != nil || !slices.Contains(tenants, "acme") || !slices.Contains(tenants, "public") {
		t.Fatalf("tenants %v, %v", tenants, err)
	}
	if err := a.Namespaces().CreateNamespace("acme/orders"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Namespaces().CreateNamespace("acme/orders"), http.StatusConflict)
	wantStatus(t, a.Namespaces().CreateNamespace("nobody/orders"), http.StatusNotFound)
	nss, err := a.Namespaces().GetNamespaces("acme")
	if err != nil || !slices.Equal(nss, []string{"acme/orders"}) {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	wantStatus(t, a.Tenants().Delete("acme"), http.StatusConflict)
	if err := a.Namespaces().DeleteNamespace("acme/orders"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Namespaces().DeleteNamespace("acme/orders"), http.StatusNotFound)
	if err := a.Tenants().Delete("acme"); err != nil {
		t.Fatal(err)
	}
}

func TestAdminTopicsAndPartitionedTopics(t *testing.T) {
	_, a, _ := startAdmin(t)
	plain := topicName(t, "persistent://public/default/plain")
	parted := topicName(t, "persistent://public/default/parted")
	if err := a.Topics().Create(plain, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Topics().Create(plain, 0), http.StatusConflict)
	if err := a.Topics().Create(parted, 2); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Topics().Create(parted, 2), http.StatusConflict)
	wantStatus(t, a.Topics().Create(topicName(t, "persistent://public/missing/x"), 0), http.StatusNotFound)

	md, err := a.Topics().GetMetadata(parted)
	if err != nil || md.Partitions != 2 {
		t.Fatalf("metadata %+v, %v", md, err)
	}
	if err := a.Topics().Update(parted, 3); err != nil {
		t.Fatal(err)
	}
	if md, _ := a.Topics().GetMetadata(parted); md.Partitions != 3 {
		t.Fatalf("after update: %d partitions", md.Partitions)
	}
	if err := a.Topics().Update(parted, 1); err == nil {
		t.Fatal("shrinking a partitioned topic succeeded")
	}
	ns, _ := utils.GetNamespaceName("public/default")
	partitioned, others, err := a.Topics().List(*ns)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(partitioned, []string{parted.String()}) {
		t.Fatalf("partitioned topics %v", partitioned)
	}
	slices.Sort(others)
	want := []string{parted.String() + "-partition-0", parted.String() + "-partition-1",
		parted.String() + "-partition-2", plain.String()}
	if !slices.Equal(others, want) {
		t.Fatalf("topics %v, want %v", others, want)
	}
	if err := a.Topics().Delete(plain, false, true); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Topics().Delete(plain, false, true), http.StatusNotFound)
	if err := a.Topics().Delete(parted, true, false); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Topics().Delete(parted, true, false), http.StatusNotFound)
}

func TestAdminStatsShowBacklogUnackedAndConsumers(t *testing.T) {
	b, a, _ := startAdmin(t)
	c := newClient(t, b)
	topic := "persistent://public/default/stats"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		Properties: map[string]string{"team": "blue"}, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Ack(m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.Topics().GetStats(topicName(t, topic))
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := st.Subscriptions["s"]
	if !ok || ss.MsgBacklog != 2 || ss.UnAckedMessages != 2 || ss.SubType != "Shared" || len(ss.Consumers) != 1 {
		t.Fatalf("subscription stats %+v", ss)
	}
	if ss.MsgOutCounter != 3 || ss.Consumers[0].Metadata["team"] != "blue" {
		t.Fatalf("consumer stats %+v", ss.Consumers[0])
	}
	if len(st.Publishers) != 1 || st.MsgCounterIn != 3 {
		t.Fatalf("topic stats %+v", st)
	}
	_, err = a.Topics().GetStats(topicName(t, "persistent://public/default/none"))
	wantStatus(t, err, http.StatusNotFound)
}

func TestAdminPartitionedStatsSumPartitions(t *testing.T) {
	b, a, _ := startAdmin(t)
	tn := topicName(t, "persistent://public/default/pstats")
	if err := a.Topics().Create(tn, 2); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, b)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < 4; i++ {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.Topics().GetPartitionedStats(tn, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Metadata.Partitions != 2 || len(st.Partitions) != 2 {
		t.Fatalf("partitioned stats %+v", st)
	}
}

func TestAdminMessageTTLPolicies(t *testing.T) {
	_, a, _ := startAdmin(t)
	if err := a.Namespaces().SetNamespaceMessageTTL("public/default", 30); err != nil {
		t.Fatal(err)
	}
	if ttl, err := a.Namespaces().GetNamespaceMessageTTL("public/default"); err != nil || ttl != 30 {
		t.Fatalf("namespace TTL %d, %v", ttl, err)
	}
	_, err := a.Namespaces().GetNamespaceMessageTTL("public/none")
	wantStatus(t, err, http.StatusNotFound)
	tn := topicName(t, "persistent://public/default/ttl")
	wantStatus(t, a.Topics().SetMessageTTL(tn, 5), http.StatusNotFound)
	if err := a.Topics().Create(tn, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Topics().SetMessageTTL(tn, 5); err != nil {
		t.Fatal(err)
	}
	if ttl, err := a.Topics().GetMessageTTL(tn); err != nil || ttl != 5 {
		t.Fatalf("topic TTL %d, %v", ttl, err)
	}
	if err := a.Topics().RemoveMessageTTL(tn); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := a.Topics().GetMessageTTL(tn); ttl != -1 {
		t.Fatalf("topic TTL after removal %d, want -1 (unset, as pulsaradmin reads it)", ttl)
	}
	if err := a.Namespaces().RemoveNamespaceMessageTTL("public/default"); err != nil {
		t.Fatal(err)
	}
}

func TestAdminSubscriptionsAndMessageByID(t *testing.T) {
	b, a, _ := startAdmin(t)
	tn := topicName(t, "persistent://public/default/subs")
	if err := a.Topics().Create(tn, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscriptions().Create(tn, "early", utils.Earliest); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Subscriptions().Create(tn, "early", utils.Earliest), http.StatusConflict)
	c := newClient(t, b)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	id, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("hello"),
		Properties: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := a.Subscriptions().GetMessagesByID(tn, id.LedgerID(), id.EntryID())
	if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "hello" || msgs[0].Properties["k"] != "v" {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	subs, err := a.Subscriptions().List(tn)
	if err != nil || !slices.Equal(subs, []string{"early"}) {
		t.Fatalf("subscriptions %v, %v", subs, err)
	}
	st, _ := a.Topics().GetStats(tn)
	if st.Subscriptions["early"].MsgBacklog != 1 {
		t.Fatalf("backlog of the earliest subscription: %+v", st.Subscriptions["early"])
	}
	if err := a.Subscriptions().Delete(tn, "early"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, a.Subscriptions().Delete(tn, "early"), http.StatusNotFound)
}

func TestAdminLookupSchemaAndUnload(t *testing.T) {
	b, a, _ := startAdmin(t)
	tn := topicName(t, "persistent://public/default/looked-up")
	ld, err := a.Topics().Lookup(tn)
	if err != nil || ld.BrokerURL != b.URL() {
		t.Fatalf("lookup %+v, %v", ld, err)
	}
	_, err = a.Schemas().GetSchemaInfo(tn.String())
	wantStatus(t, err, http.StatusNotFound)
	if err := a.Schemas().CreateSchemaByPayload(tn.String(), utils.PostSchemaPayload{
		SchemaType: "JSON", Schema: `{"type":"record","name":"R","fields":[]}`,
	}); err != nil {
		t.Fatal(err)
	}
	info, err := a.Schemas().GetSchemaInfoWithVersion(tn.String())
	if err != nil || info.Version != 0 || info.SchemaInfo.Type != "JSON" {
		t.Fatalf("schema %+v, %v", info, err)
	}

	c := newClient(t, b)
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tn.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	closed, reopened := make(chan struct{}, 1), make(chan struct{}, 1)
	stop := b.OnEvent(func(e broker.Event) {
		switch {
		case e.Kind == broker.EventProducerClosed && e.Reason == "broker":
			select {
			case closed <- struct{}{}:
			default:
			}
		case e.Kind == broker.EventProducerOpened:
			select {
			case reopened <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	if err := a.Topics().Unload(tn); err != nil {
		t.Fatal(err)
	}
	// The producer is told to close and connects again (as soon as it reads
	// CLOSE_PRODUCER, possibly before the unload's answer arrives). No send
	// here: pulsar-client-go has a data race between its reconnection and a
	// send.
	for what, ch := range map[string]chan struct{}{"closed by the unload": closed, "reconnected": reopened} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the producer was not %s", what)
		}
	}
	wantStatus(t, a.Topics().Unload(topicName(t, "persistent://public/default/none")), http.StatusNotFound)
}

func TestWithHandlerServesBesideTheAPI(t *testing.T) {
	b := broker.New()
	extra := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("extra")) })
	srv := httptest.NewServer(admin.New(b, admin.WithHandler("/extra/", extra)))
	defer srv.Close()
	if status, body := call(t, srv.URL, "GET", "/extra/page", ""); status != http.StatusOK || string(body) != "extra" {
		t.Fatalf("mounted handler: %d %q", status, body)
	}
	if status, _ := call(t, srv.URL, "GET", "/admin/v2/tenants", ""); status != http.StatusOK {
		t.Fatalf("the API beside it: %d", status)
	}
}

// A terminate answers the topic's last message id in the shape Pulsar 4.0.8
// writes it, batch fields included, for an empty topic too.
func TestTerminateAnswersTheLastMessageIDAsPulsarWritesIt(t *testing.T) {
	b, _, base := startAdmin(t)
	for _, name := range []string{"empty", "full"} {
		if err := b.CreateTopic(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Publish("full", broker.ProducerMessage{Payload: []byte("m")}, broker.ProducerMessage{Payload: []byte("n")}); err != nil {
		t.Fatal(err)
	}
	for name, entry := range map[string]string{"empty": "-1", "full": "1"} {
		status, body := call(t, base, "POST", "/admin/v2/persistent/public/default/"+name+"/terminate", "")
		if status != 200 {
			t.Fatalf("%s: status %d %s", name, status, body)
		}
		re := regexp.MustCompile(`^\{"ledgerId":\d+,"entryId":` + entry + `,"partitionIndex":-1,"batchSize":0,"batchIndex":-1\}\n?$`)
		if !re.Match(body) {
			t.Fatalf("%s: body %s", name, body)
		}
	}
}
