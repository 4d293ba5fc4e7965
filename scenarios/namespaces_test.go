package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Namespaces that must exist: on Pulsar only public/default (and the
// standalone's system namespaces) exist at start, and a topic of any other
// namespace is refused until the namespace is created.

// instance masks the broker address in the refusal of a producer or
// consumer whose namespace is not served (Pulsar names its web service
// address there, as pulsarsim does once it serves its admin API; the
// address differs between the two brokers).
var instance = regexp.MustCompile(`not served by this instance:[^ ]+\. `)

// missingNamespaceAnswers sends each command a client may send about a
// topic of namespace ns, which does not exist, and describes the answers.
func missingNamespaceAnswers(t *testing.T, url, ns string) []string {
	c := dialWire(t, url)
	topic := "persistent://" + ns + "/t"
	var out []string
	ask := func(what string, cmd *pb.BaseCommand) {
		c.send(cmd)
		out = append(out, what+": "+instance.ReplaceAllString(describe(c.read()), "not served by this instance:<broker>. "))
	}
	ask("LOOKUP", protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{
		Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
	ask("PARTITIONED_METADATA", protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
		Topic: proto.String(topic), RequestId: proto.Uint64(2)}))
	ask("PARTITIONED_METADATA auto-creating", protocol.Base(pb.BaseCommand_PARTITIONED_METADATA, &pb.CommandPartitionedTopicMetadata{
		Topic: proto.String(topic), RequestId: proto.Uint64(3), MetadataAutoCreationEnabled: proto.Bool(true)}))
	ask("PRODUCER", protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(4)}))
	ask("SUBSCRIBE", protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(5)}))
	c.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, &pb.CommandGetTopicsOfNamespace{
		Namespace: proto.String(ns), RequestId: proto.Uint64(6)}))
	r := c.read().GetGetTopicsOfNamespaceResponse()
	out = append(out, fmt.Sprintf("GET_TOPICS_OF_NAMESPACE: topics=%v hash=%s", r.GetTopics(), r.GetTopicsHash()))
	return out
}

// clientErrors reports what pulsar-client-go says when it produces to and
// consumes from a topic of namespace ns, which does not exist.
func clientErrors(t *testing.T, url, ns string) []string {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger(),
		OperationTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	topic := "persistent://" + ns + "/t"
	var out []string
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	out = append(out, fmt.Sprintf("producer: %v", err))
	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	out = append(out, fmt.Sprintf("consumer: %v", err))
	return out
}

// TestDifferentialNamespacesMustExist compares how both brokers refuse a
// topic of a namespace that does not exist, in a tenant that exists and in
// one that does not, on the wire and as pulsar-client-go reports it.
func TestDifferentialNamespacesMustExist(t *testing.T) {
	url := oracleURL(t)
	sim := scenarios.SimTarget(t)
	for _, ns := range []string{"public/missing-ns", "missing-tenant/ns"} {
		got := missingNamespaceAnswers(t, sim.URL, ns)
		want := missingNamespaceAnswers(t, url, ns)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: the answers differ (-real +pulsarsim):\n%s", ns, diff)
		}
		t.Logf("%s, both:\n%s", ns, strings.Join(got, "\n"))
		got = clientErrors(t, sim.URL, ns)
		want = clientErrors(t, url, ns)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: the client's errors differ (-real +pulsarsim):\n%s", ns, diff)
		}
		t.Logf("%s, the client, both:\n%s", ns, strings.Join(got, "\n"))
	}
}

// TestTopicsOfANamespaceWorkOnceItIsCreated checks the other half: once the
// namespace exists, its topics work as public/default's do.
func TestTopicsOfANamespaceWorkOnceItIsCreated(t *testing.T) {
	tg := scenarios.NewTarget(t)
	admin := tg.AdminURL
	if tg.Sim != nil {
		admin = tg.Sim.AdminURL()
	}
	if admin == "" {
		t.Skip("needs PULSAR_ADMIN_URL")
	}
	// A name unique to the run against a real Pulsar, which keeps its
	// namespaces between runs.
	ns := "public/" + strings.TrimPrefix(tg.Topic("created"), "persistent://public/default/")
	req, err := http.NewRequest(http.MethodPut, admin+"/admin/v2/namespaces/"+ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("creating %s: %d", ns, resp.StatusCode)
	}
	topic := "persistent://" + ns + "/t"
	tg.Produce(topic, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := tg.ReadN(ctx, topic, 2); len(got) != 2 {
		t.Fatalf("read %d messages", len(got))
	}
}

// createdWithPermissions creates a namespace of a unique name with a
// policies document that grants permissions, as Pulsar's own test setups
// do, and describes what the admin API then answers about its permissions;
// a body that does not parse must create nothing.
func createdWithPermissions(t *testing.T, admin, run string) []string {
	ns := "public/perms-" + run
	topic := "persistent://" + ns + "/t"
	body := `{"auth_policies":{"namespace_auth":{"alice":["produce","consume"]},` +
		`"destination_auth":{"` + topic + `":{"bob":["consume"]}}},"replication_clusters":["standalone"]}`
	var out []string
	call := func(what, method, path, body string, keepBody bool) {
		status, answer := adminCall(t, method, admin+path, body)
		var doc map[string][]string
		if json.Unmarshal([]byte(answer), &doc) == nil {
			// Pulsar writes the roles, and each role's actions (a set
			// ordered by the JVM's hash codes, so not the same from one
			// broker start to the next), in its own order.
			for _, actions := range doc {
				slices.Sort(actions)
			}
			canon, _ := json.Marshal(doc)
			answer = string(canon)
		}
		if !keepBody {
			answer = ""
		}
		out = append(out, fmt.Sprintf("%s: %d %s", what, status, answer))
	}
	call("create", "PUT", "/admin/v2/namespaces/"+ns, body, true)
	call("namespace permissions", "GET", "/admin/v2/namespaces/"+ns+"/permissions", "", true)
	call("create topic", "PUT", "/admin/v2/persistent/"+ns+"/t", "", true)
	call("topic permissions", "GET", "/admin/v2/persistent/"+ns+"/t/permissions", "", true)
	// Jackson's and Go's words for the syntax error differ; the status not.
	call("create with a bad body", "PUT", "/admin/v2/namespaces/"+ns+"-bad", `{"auth_policies":`, false)
	call("its permissions", "GET", "/admin/v2/namespaces/"+ns+"-bad/permissions", "", false)
	adminCall(t, "DELETE", admin+"/admin/v2/persistent/"+ns+"/t", "")
	adminCall(t, "DELETE", admin+"/admin/v2/namespaces/"+ns, "")
	return out
}

// TestDifferentialNamespaceCreatedWithPermissions compares what both
// brokers keep of the auth_policies a namespace is created with.
func TestDifferentialNamespaceCreatedWithPermissions(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	run := strings.TrimPrefix(sim.Topic("p"), "persistent://public/default/")
	got := createdWithPermissions(t, sim.Sim.AdminURL(), run)
	want := createdWithPermissions(t, realAdmin, run)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}

// TestNamespaceCreatedWithPermissionsAdmitsItsRoles checks, through
// pulsar-client-go with authorization on, that the roles a namespace's
// creation body grants may use its topics and that other roles may not.
func TestNamespaceCreatedWithPermissionsAdmitsItsRoles(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	req, err := http.NewRequest(http.MethodPut, b.AdminURL()+"/admin/v2/namespaces/public/private",
		strings.NewReader(`{"auth_policies":{"namespace_auth":{"alice":["produce","consume"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.Token("admin"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("creating the namespace: %d", resp.StatusCode)
	}
	topic := "persistent://public/private/t"
	clientAs := func(role string) pulsar.Client {
		return b.Client(func(o *pulsar.ClientOptions) {
			o.Authentication = pulsar.NewAuthenticationToken(b.Token(role))
			o.OperationTimeout = 3 * time.Second
		})
	}
	alice := clientAs("alice")
	c, err := alice.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatalf("alice subscribes: %v", err)
	}
	defer c.Close()
	p, err := alice.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("alice produces: %v", err)
	}
	defer p.Close()
	if _, err := p.Send(scenarios.Ctx(t), &pulsar.ProducerMessage{Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Receive(scenarios.Ctx(t)); err != nil || string(m.Payload()) != "hello" {
		t.Fatalf("alice receives %v, %v", m, err)
	}
	if _, err := clientAs("bob").CreateProducer(pulsar.ProducerOptions{Topic: topic}); err == nil ||
		!strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("bob, without a grant, produces: %v", err)
	}
}

// TestMissingTenantIsTopicNotFoundUnderAuthorization checks, through
// pulsar-client-go with authorization on, what Pulsar 4.0.8 answers a role
// that is not a super-user about a topic of a tenant that does not exist:
// the tenant check of its authorization fails, and the partitioned-metadata
// request gets TopicNotFound, not AuthorizationError; a tenant that exists
// still refuses the role without a grant.
func TestMissingTenantIsTopicNotFoundUnderAuthorization(t *testing.T) {
	b := testkit.Start(t, testkit.WithTokenAuth(), testkit.WithAuthorization("admin"))
	alice := b.Client(func(o *pulsar.ClientOptions) {
		o.Authentication = pulsar.NewAuthenticationToken(b.Token("alice"))
		o.OperationTimeout = 3 * time.Second
	})
	_, err := alice.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://no-such-tenant/ns/t"})
	if err == nil || !strings.Contains(err.Error(), "TopicNotFound") {
		t.Fatalf("producer on a missing tenant: %v", err)
	}
	_, err = alice.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/t"})
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Fatalf("producer without a grant on an existing tenant: %v", err)
	}
}
