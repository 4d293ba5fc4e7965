package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// A cluster of two brokers compared with a real one (scripts/real-pulsar-cluster,
// whose brokers scripts/oracle-check names in PULSAR_CLUSTER_URLS and
// PULSAR_CLUSTER_ADMIN_URLS, its load manager in PULSAR_CLUSTER_LOAD_MANAGER).
// Each story runs on a pulsarsim cluster with the same load manager and on the
// real one. Which broker leads and which one a lookup picks differ between
// runs (Pulsar's leader picks the least loaded broker), so the stories name
// the brokers by their roles ("the leader", "the owner", "the other broker")
// and compare the shape of the answers, not the choice.

// clusterSide is one of the two clusters a story runs on: its brokers'
// service URLs and admin URLs, by index, and which of them leads.
type clusterSide struct {
	urls, admins []string
	leader       int
	extensible   bool
}

// clusterLoadManager is the load manager the real cluster runs with.
func clusterLoadManager() testkit.LoadManager {
	if os.Getenv("PULSAR_CLUSTER_LOAD_MANAGER") == "extensible" {
		return testkit.ExtensibleLoadManager
	}
	return testkit.ModularLoadManager
}

// realCluster returns the real cluster named by the environment, skipping
// the test when it names none.
func realCluster(t *testing.T) *clusterSide {
	t.Helper()
	urls := splitList(os.Getenv("PULSAR_CLUSTER_URLS"))
	admins := splitList(os.Getenv("PULSAR_CLUSTER_ADMIN_URLS"))
	if len(urls) != 2 || len(admins) != 2 {
		t.Skip("set PULSAR_CLUSTER_URLS and PULSAR_CLUSTER_ADMIN_URLS to the two brokers of a real Pulsar cluster " +
			"(scripts/real-pulsar-cluster start; scripts/oracle-check does) to compare it with a pulsarsim cluster")
	}
	return newClusterSide(t, urls, admins, clusterLoadManager() == testkit.ExtensibleLoadManager)
}

// simCluster starts a pulsarsim cluster of two brokers with the real
// cluster's load manager.
func simCluster(t *testing.T) *clusterSide {
	t.Helper()
	c := testkit.StartCluster(t, 2, testkit.WithLoadManager(clusterLoadManager()))
	return newClusterSide(t, []string{c.Broker(0).URL(), c.Broker(1).URL()}, c.AdminURLs(),
		clusterLoadManager() == testkit.ExtensibleLoadManager)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSuffix(strings.TrimSpace(f), "/"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func newClusterSide(t *testing.T, urls, admins []string, extensible bool) *clusterSide {
	t.Helper()
	side := &clusterSide{urls: urls, admins: admins, leader: -1, extensible: extensible}
	var leader struct {
		ServiceURL string `json:"serviceUrl"`
	}
	status, body := adminCall(t, "GET", admins[0]+"/admin/v2/brokers/leaderBroker", "")
	if status != http.StatusOK || json.Unmarshal([]byte(body), &leader) != nil {
		t.Fatalf("leader: %d %s", status, body)
	}
	for i, a := range admins {
		if strings.TrimSuffix(leader.ServiceURL, "/") == a {
			side.leader = i
		}
	}
	if side.leader < 0 {
		t.Fatalf("the leader %s is none of the brokers %v", leader.ServiceURL, admins)
	}
	return side
}

// id is broker i's id, host:webServicePort, as Pulsar names brokers.
func (s *clusterSide) id(i int) string { return strings.TrimPrefix(s.admins[i], "http://") }

// index returns the broker whose service URL, admin URL or id is u, or -1.
func (s *clusterSide) index(u string) int {
	u = strings.TrimSuffix(u, "/")
	for i := range s.urls {
		if u == s.urls[i] || u == s.admins[i] || u == s.id(i) {
			return i
		}
	}
	return -1
}

// leaderRole names broker i by whether it leads.
func (s *clusterSide) leaderRole(i int) string {
	switch {
	case i < 0:
		return "a broker outside the cluster"
	case i == s.leader:
		return "the leader"
	}
	return "the non-leader"
}

// ownerRole names broker i relative to owner.
func ownerRole(i, owner int) string {
	switch {
	case i < 0:
		return "a broker outside the cluster"
	case i == owner:
		return "the owner"
	}
	return "the other broker"
}

// mask replaces the brokers' addresses in text by their roles (role(i)),
// longest first (a service URL holds its host).
func (s *clusterSide) mask(text string, role func(int) string) string {
	var pairs []string
	for i := range s.urls {
		pairs = append(pairs, s.urls[i], "<"+role(i)+">", s.admins[i], "<"+role(i)+" web>", s.id(i), "<"+role(i)+" id>")
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// clientURL names every broker, as a client of a cluster is given.
func (s *clusterSide) clientURL() string {
	hosts := make([]string, len(s.urls))
	for i, u := range s.urls {
		hosts[i] = strings.TrimPrefix(u, "pulsar://")
	}
	return "pulsar://" + strings.Join(hosts, ",")
}

// freshClusterTopic returns a topic of public/default that no earlier run
// used, with its bundle ("0x..._0x...").
func freshClusterTopic(t *testing.T, side *clusterSide, name string) (topic, bundle string) {
	t.Helper()
	topic = fmt.Sprintf("persistent://public/default/%s-%x", name, rand.Uint64())
	status, body := adminCall(t, "GET", side.admins[0]+"/lookup/v2/topic/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/bundle", "")
	if status != http.StatusOK {
		t.Fatalf("bundle of %s: %d %s", topic, status, body)
	}
	return topic, body
}

// freeBundle unloads bundle wherever it is owned, so that the next lookup
// assigns it: each broker is asked without following redirects; the owner
// unloads, the others point at it or have nothing to do.
func freeBundle(t *testing.T, side *clusterSide, bundle string) {
	t.Helper()
	for _, a := range side.admins {
		status, body := noRedirectCall(t, "PUT", a+"/admin/v2/namespaces/public/default/"+bundle+"/unload")
		if status != http.StatusNoContent && status != http.StatusTemporaryRedirect {
			t.Fatalf("unload %s at %s: %d %s", bundle, a, status, body)
		}
	}
}

// noRedirectCall sends a request without following a redirect and returns
// the status and the Location header or the body.
func noRedirectCall(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// clusterWire is a raw connection to each broker of a side.
type clusterWire struct {
	side  *clusterSide
	conns []*wireClient
	rid   uint64
}

func dialCluster(t *testing.T, side *clusterSide) *clusterWire {
	w := &clusterWire{side: side, rid: 1000}
	for _, u := range side.urls {
		w.conns = append(w.conns, dialWire(t, u))
	}
	return w
}

func (w *clusterWire) nextID() uint64 { w.rid++; return w.rid }

// lookup asks broker i for topic and returns its answer.
func (w *clusterWire) lookup(i int, topic string, authoritative bool) *pb.CommandLookupTopicResponse {
	c := w.conns[i]
	c.t.Helper()
	rid := w.nextID()
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic),
		RequestId: proto.Uint64(rid), Authoritative: proto.Bool(authoritative)}))
	r := c.read()
	if r.LookupTopicResponse == nil || r.LookupTopicResponse.GetRequestId() != rid {
		c.t.Fatalf("lookup at broker %d: %v", i, r)
	}
	return r.LookupTopicResponse
}

// lookupStep is one answer of a lookup chain.
type lookupStep struct {
	asked, target int
	authoritative bool
	answer        *pb.CommandLookupTopicResponse
}

// assign looks topic up as a client does, starting at the broker that does
// not lead, not authoritatively, and following Redirects with the
// authoritative flag each gives. It returns the chain and the owner, the
// broker of the final Connect.
func (w *clusterWire) assign(topic string) ([]lookupStep, int) {
	t := w.conns[0].t
	t.Helper()
	at, auth := 1-w.side.leader, false
	var chain []lookupStep
	for range 5 {
		r := w.lookup(at, topic, auth)
		target := w.side.index(r.GetBrokerServiceUrl())
		chain = append(chain, lookupStep{asked: at, target: target, authoritative: auth, answer: r})
		switch r.GetResponse() {
		case pb.CommandLookupTopicResponse_Connect:
			w.awaitOwnerSeen(topic, target)
			return chain, target
		case pb.CommandLookupTopicResponse_Redirect:
			if target < 0 {
				t.Fatalf("redirect outside the cluster: %v", r)
			}
			at, auth = target, r.GetAuthoritative()
		default:
			t.Fatalf("lookup of %s at broker %d: %v %v %q", topic, at, r.GetResponse(), r.GetError(), r.GetMessage())
		}
	}
	t.Fatalf("lookup of %s: more than 5 redirects: %v", topic, chain)
	return nil, -1
}

// awaitOwnerSeen waits until every broker of the side answers a lookup of
// topic with Connect to owner. A real cluster's brokers learn of a new
// owner from a metadata store notification, a few milliseconds after the
// assignment; until then a broker that does not lead redirects to the
// leader as if the bundle were free. pulsarsim's brokers share one table
// and see the owner at once, so the first lookup there already answers.
// No lookup takes an owned bundle from its owner, so asking changes
// nothing the story compares.
func (w *clusterWire) awaitOwnerSeen(topic string, owner int) {
	t := w.conns[0].t
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := range w.conns {
		if i == owner {
			continue
		}
		for {
			r := w.lookup(i, topic, false)
			if r.GetResponse() == pb.CommandLookupTopicResponse_Connect && w.side.index(r.GetBrokerServiceUrl()) == owner {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d still answers %v %s for %s, owned by broker %d", i, r.GetResponse(), r.GetBrokerServiceUrl(), topic, owner)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// describeChain names each answer of a lookup chain by roles. The last
// hop, the assignment, is the same answer whether the broker that assigns
// picks itself (Connect, authoritative) or the other broker (a Redirect,
// authoritative, that the other answers with Connect): the choice is the
// load manager's, the shape is compared.
func describeChain(side *clusterSide, chain []lookupStep) []string {
	const assigns = ": assigns the bundle to the broker it picks, authoritatively (Connect when it picks itself, " +
		"or with the modular load manager a Redirect to the other, which answers Connect when asked authoritatively)"
	var out []string
	for k := 0; k < len(chain); k++ {
		s := chain[k]
		a := s.answer
		asked := fmt.Sprintf("%s (authoritative=%v)", side.leaderRole(s.asked), s.authoritative)
		switch {
		case a.GetResponse() == pb.CommandLookupTopicResponse_Redirect && a.GetAuthoritative() && k+1 < len(chain) &&
			chain[k+1].asked == s.target && chain[k+1].authoritative && chain[k+1].answer.GetResponse() == pb.CommandLookupTopicResponse_Connect &&
			chain[k+1].target == s.target && chain[k+1].answer.GetAuthoritative() && !chain[k+1].answer.GetProxyThroughServiceUrl():
			out = append(out, asked+assigns)
			k++
		case a.GetResponse() == pb.CommandLookupTopicResponse_Connect && s.target == s.asked && a.GetAuthoritative() && !a.GetProxyThroughServiceUrl() &&
			(k > 0 || side.extensible):
			out = append(out, asked+assigns)
		case a.GetResponse() == pb.CommandLookupTopicResponse_Connect && s.target != s.asked && a.GetAuthoritative() && !a.GetProxyThroughServiceUrl() &&
			side.extensible:
			// The extensible load manager answers Connect to the owner it
			// picked or found, never Redirect.
			out = append(out, asked+assigns)
		default:
			out = append(out, fmt.Sprintf("%s: %v to %s authoritative=%v proxyThroughServiceUrl=%v", asked, a.GetResponse(),
				side.leaderRole(s.target), a.GetAuthoritative(), a.GetProxyThroughServiceUrl()))
		}
	}
	return out
}

// describeLookup names a lookup answer's target relative to owner.
func describeLookup(a *pb.CommandLookupTopicResponse, target, owner int) string {
	if a.GetResponse() == pb.CommandLookupTopicResponse_Failed {
		return fmt.Sprintf("Failed %v", a.GetError())
	}
	return fmt.Sprintf("%v to %s authoritative=%v proxyThroughServiceUrl=%v", a.GetResponse(), ownerRole(target, owner),
		a.GetAuthoritative(), a.GetProxyThroughServiceUrl())
}

// lookupStory assigns a fresh topic's bundle through the binary lookup and
// asks both brokers again once it is owned, binary and HTTP.
func lookupStory(t *testing.T, side *clusterSide) []string {
	topic, bundle := freshClusterTopic(t, side, "cluster-lookup")
	if !side.extensible {
		freeBundle(t, side, bundle)
	}
	var out []string
	path := "/lookup/v2/topic/persistent/" + strings.TrimPrefix(topic, "persistent://")
	if !side.extensible {
		// Before the bundle has an owner the broker that does not lead
		// sends the HTTP lookup to the leader (without assigning).
		nl := 1 - side.leader
		status, loc := noRedirectCall(t, "GET", side.admins[nl]+path)
		out = append(out, fmt.Sprintf("HTTP lookup at the non-leader, unowned: %d %s", status,
			side.mask(strings.Replace(loc, path, "<path>", 1), side.leaderRole)))
	}
	w := dialCluster(t, side)
	chain, owner := w.assign(topic)
	for _, s := range chain {
		t.Logf("lookup at broker %d (authoritative=%v): %v %s authoritative=%v", s.asked, s.authoritative,
			s.answer.GetResponse(), s.answer.GetBrokerServiceUrl(), s.answer.GetAuthoritative())
	}
	out = append(out, describeChain(side, chain)...)
	for _, i := range []int{owner, 1 - owner} {
		for _, auth := range []bool{false, true} {
			a := w.lookup(i, topic, auth)
			out = append(out, fmt.Sprintf("once owned, LOOKUP at %s (authoritative=%v): %s", ownerRole(i, owner), auth,
				describeLookup(a, side.index(a.GetBrokerServiceUrl()), owner)))
		}
		status, body := noRedirectCall(t, "GET", side.admins[i]+path)
		var doc map[string]any
		if json.Unmarshal([]byte(body), &doc) == nil {
			canon, _ := json.Marshal(doc)
			body = string(canon)
		}
		out = append(out, fmt.Sprintf("once owned, HTTP lookup at %s: %d %s", ownerRole(i, owner), status,
			side.mask(body, func(j int) string { return ownerRole(j, owner) })))
	}
	return out
}

// TestClusterLookupsMatchPulsar compares the lookup of a fresh topic with a
// real cluster's: the broker that does not lead sends it to the leader, not
// authoritatively, which assigns the bundle (modular load manager; the
// extensible one answers Connect at once); once owned, both brokers answer
// Connect to the owner, binary and HTTP.
func TestClusterLookupsMatchPulsar(t *testing.T) {
	real := realCluster(t)
	got := lookupStory(t, simCluster(t))
	want := lookupStory(t, real)
	sameOnBoth(t, want, got)
}

// ownedTopic assigns a fresh topic's bundle and returns the topic, its
// bundle, the owner and the raw connections.
func ownedTopic(t *testing.T, side *clusterSide, name string) (string, string, int, *clusterWire) {
	t.Helper()
	topic, bundle := freshClusterTopic(t, side, name)
	w := dialCluster(t, side)
	_, owner := w.assign(topic)
	if owner < 0 {
		t.Fatalf("%s: no owner", topic)
	}
	return topic, bundle, owner, w
}

// refusalStory asks the broker that does not own a topic for a producer and
// a consumer.
func refusalStory(t *testing.T, side *clusterSide) []string {
	topic, bundle, owner, w := ownedTopic(t, side, "cluster-refusal")
	other := 1 - owner
	c := w.conns[other]
	mask := func(s string) string {
		s = strings.NewReplacer(topic, "<topic>", "public/default/"+bundle, "<its bundle>").Replace(s)
		return side.mask(s, func(j int) string { return ownerRole(j, owner) })
	}
	var out []string
	rid := w.nextID()
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(7), RequestId: proto.Uint64(rid)}))
	out = append(out, "PRODUCER at the other broker: "+mask(describe(c.read())))
	rid = w.nextID()
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(7), RequestId: proto.Uint64(rid)}))
	out = append(out, "SUBSCRIBE at the other broker: "+mask(describe(c.read())))
	// The connection stays open: the owner of the answer is still there.
	a := w.lookup(other, topic, false)
	out = append(out, "then LOOKUP there: "+describeLookup(a, side.index(a.GetBrokerServiceUrl()), owner))
	return out
}

// TestClusterRefusalsMatchPulsar compares what the broker that does not own
// a topic answers a PRODUCER and a SUBSCRIBE with: ServiceNotReady naming
// the bundle and the broker, "Please redo the lookup".
func TestClusterRefusalsMatchPulsar(t *testing.T) {
	real := realCluster(t)
	got := refusalStory(t, simCluster(t))
	want := refusalStory(t, real)
	sameOnBoth(t, want, got)
}

// describeClose names a CLOSE_PRODUCER or CLOSE_CONSUMER, the URL it
// assigns by its role.
func describeClose(side *clusterSide, cmd *pb.BaseCommand, owner int) string {
	role := func(u string) string {
		if u == "" {
			return "none"
		}
		if i := side.index(u); i >= 0 && i != owner {
			return "the destination"
		}
		return side.mask(u, func(j int) string { return ownerRole(j, owner) })
	}
	reqID := func(id uint64) string {
		if id == ^uint64(0) {
			return "-1"
		}
		return fmt.Sprint(id)
	}
	switch {
	case cmd.CloseProducer != nil:
		c := cmd.CloseProducer
		return fmt.Sprintf("CLOSE_PRODUCER producer=%d request=%s assignedBrokerServiceUrl=%s assignedBrokerServiceUrlTls=%s",
			c.GetProducerId(), reqID(c.GetRequestId()), role(c.GetAssignedBrokerServiceUrl()), role(c.GetAssignedBrokerServiceUrlTls()))
	case cmd.CloseConsumer != nil:
		c := cmd.CloseConsumer
		return fmt.Sprintf("CLOSE_CONSUMER consumer=%d request=%s assignedBrokerServiceUrl=%s assignedBrokerServiceUrlTls=%s",
			c.GetConsumerId(), reqID(c.GetRequestId()), role(c.GetAssignedBrokerServiceUrl()), role(c.GetAssignedBrokerServiceUrlTls()))
	}
	return describe(cmd)
}

// unloadStory attaches a raw producer and consumer to a topic at its owner
// and unloads its bundle there (to the other broker when transfer is set)
// and notes the frames they get and the admin call's status.
func unloadStory(t *testing.T, side *clusterSide, transfer bool) []string {
	topic, bundle, owner, w := ownedTopic(t, side, "cluster-unload")
	c := w.conns[owner]
	rid := w.nextID()
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(1), RequestId: proto.Uint64(rid)}))
	if r := c.read(); r.ProducerSuccess == nil {
		t.Fatalf("producer at the owner: %s", describe(r))
	}
	rid = w.nextID()
	c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(2), RequestId: proto.Uint64(rid)}))
	if r := c.read(); r.Success == nil {
		t.Fatalf("subscribe at the owner: %s", describe(r))
	}
	url := side.admins[owner] + "/admin/v2/namespaces/public/default/" + bundle + "/unload"
	if transfer {
		url += "?destinationBroker=" + side.id(1-owner)
	}
	type answer struct {
		status int
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		req, err := http.NewRequest("PUT", url, nil)
		if err != nil {
			done <- answer{0, err.Error()}
			return
		}
		c := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			done <- answer{0, err.Error()}
			return
		}
		resp.Body.Close()
		done <- answer{resp.StatusCode, resp.Header.Get("Location")}
	}()
	var frames []string
	for len(frames) < 2 {
		frames = append(frames, describeClose(side, c.read(), owner))
	}
	sort.Strings(frames)
	a := <-done
	out := append([]string{fmt.Sprintf("unload at the owner: %d %s", a.status, a.body)}, frames...)
	// The old owner no longer serves the topic.
	rid = w.nextID()
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(3), RequestId: proto.Uint64(rid)}))
	r := c.read()
	msg := describe(r)
	if r.Error != nil {
		msg = fmt.Sprintf("ERROR %v", r.Error.GetError())
	}
	if side.extensible && !transfer {
		// The extensible load manager assigns a free bundle at the
		// ownership check a PRODUCER makes, to either broker.
		t.Logf("then PRODUCER at the old owner: %s", msg)
		return out
	}
	out = append(out, "then PRODUCER at the old owner: "+msg)
	return out
}

// TestClusterUnloadFramesMatchPulsar compares a bundle unload at its owner
// while a producer and a consumer are attached: each gets its CLOSE frame,
// request id -1, no URL to go to, and the admin call answers 204.
func TestClusterUnloadFramesMatchPulsar(t *testing.T) {
	real := realCluster(t)
	got := unloadStory(t, simCluster(t), false)
	want := unloadStory(t, real, false)
	sameOnBoth(t, want, got)
}

// TestClusterTransferFramesMatchPulsar compares a transfer, the extensible
// load manager's unload with a destination broker: the CLOSE frames carry
// the destination's URL, so that clients go there without a lookup.
func TestClusterTransferFramesMatchPulsar(t *testing.T) {
	real := realCluster(t)
	if !real.extensible {
		t.Skip("a transfer needs the extensible load manager: set PULSAR_CLUSTER_LOAD_MANAGER=extensible " +
			"with a cluster started by scripts/real-pulsar-cluster start --extensible")
	}
	got := unloadStory(t, simCluster(t), true)
	want := unloadStory(t, real, true)
	sameOnBoth(t, want, got)
}

// countsStory has a Shared consumer of pulsar-client-go ack two messages,
// negatively acknowledge one (received again, with its count one up) and
// hold the rest, then moves the topic's bundle to the other broker and
// notes what comes back, with which redelivery counts, until a message
// published after the move.
func countsStory(t *testing.T, side *clusterSide) []string {
	topic, bundle := freshClusterTopic(t, side, "cluster-counts")
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: side.clientURL(), Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 10 * time.Millisecond, AckWithResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	send := func(from, to int) []pulsar.MessageID {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var ids []pulsar.MessageID
		for i := from; i < to; i++ {
			id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m%d", i))})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	ids := send(0, 6)
	receive := func() pulsar.Message {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		return m
	}
	note := func(m pulsar.Message) string { return fmt.Sprintf("%s count=%d", m.Payload(), m.RedeliveryCount()) }
	// Until the six came and m2 came back, which may be before m5 came.
	var before []string
	for first, again := 0, false; first < 6 || !again; {
		m := receive()
		before = append(before, note(m))
		if m.RedeliveryCount() > 0 {
			again = again || string(m.Payload()) == "m2"
			continue
		}
		first++
		switch string(m.Payload()) {
		case "m0", "m1":
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		case "m2":
			cons.Nack(m)
		}
	}
	sort.Strings(before)
	// Pulsar answers an acknowledgement before its cursor has persisted
	// it. The first one has the cursor create its ledger (the cursor is
	// NoLedger until then), and an unload meanwhile brought the acknowledged
	// m1 back after the move in one run out of five. The move waits until
	// the cursor is Open with m1 as its mark-delete position.
	m1 := fmt.Sprintf("%d:%d", ids[1].LedgerID(), ids[1].EntryID())
	if !eventually(func() bool { return cursorState(t, side, topic, "s") == "Open at "+m1 }) {
		t.Fatalf("the cursor is %s, not Open at m1's %s", cursorState(t, side, topic, "s"), m1)
	}
	// The move: an unload of the bundle at its owner, with the other broker
	// as its destination.
	status, body := adminCall(t, "GET", side.admins[0]+"/lookup/v2/topic/persistent/"+strings.TrimPrefix(topic, "persistent://"), "")
	var lookup struct {
		BrokerURL string `json:"brokerUrl"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &lookup) != nil || side.index(lookup.BrokerURL) < 0 {
		t.Fatalf("lookup before the move: %d %s", status, body)
	}
	owner := side.index(lookup.BrokerURL)
	status, body = adminCall(t, "PUT", side.admins[owner]+"/admin/v2/namespaces/public/default/"+bundle+
		"/unload?destinationBroker="+side.id(1-owner), "")
	out := append([]string{"before the move: " + strings.Join(before, ", ")},
		fmt.Sprintf("unload with the other broker as destination: %d %s", status, body))
	after := send(6, 7)
	var back []string
	var order []pulsar.MessageID
	lowest := map[string]uint32{}
	for {
		m := receive()
		back = append(back, note(m))
		order = append(order, m.ID())
		if c, ok := lowest[string(m.Payload())]; !ok || m.RedeliveryCount() < c {
			lowest[string(m.Payload())] = m.RedeliveryCount()
		}
		if string(m.Payload()) == "m6" {
			break
		}
	}
	sort.Strings(back)
	t.Logf("after the move, until m6: %s", strings.Join(back, ", "))
	if side.extensible {
		// After a real transfer the consumer now and then gets the
		// negatively acknowledged message twice, at count 0 and 1, for a
		// reason not known (FIDELITY.md): each message is noted once, with
		// the lowest count it came with.
		back = back[:0]
		for p, c := range lowest {
			back = append(back, fmt.Sprintf("%s count=%d", p, c))
		}
		sort.Strings(back)
		out = append(out, "after the move, until m6, each message at its lowest count: "+strings.Join(back, ", "))
	} else {
		out = append(out, "after the move, until m6: "+strings.Join(back, ", "))
	}
	// Pulsar opens a new ledger at each load, pulsarsim goes on in the one
	// it had (FIDELITY.md): the ids are compared by their order only.
	all := append(ids, after...)
	ascending := true
	for k := 1; k < len(all); k++ {
		p, q := all[k-1], all[k]
		if p.LedgerID() > q.LedgerID() || p.LedgerID() == q.LedgerID() && p.EntryID() >= q.EntryID() {
			ascending = false
		}
	}
	out = append(out, fmt.Sprintf("the ids of m0..m6 ascend in publishing order: %v", ascending))
	t.Logf("ids: %v; m6 came back as %v", all, order[len(order)-1])
	return out
}

// TestClusterCountsAfterMoveMatchPulsar compares what a Shared consumer
// gets back after its topic moved to the other broker: every message not
// acknowledged, the one it had negatively acknowledged among them, with the
// redelivery counts the new owner gives.
func TestClusterCountsAfterMoveMatchPulsar(t *testing.T) {
	real := realCluster(t)
	got := countsStory(t, simCluster(t))
	want := countsStory(t, real)
	sameOnBoth(t, want, got)
}

// cursorState returns the state and mark-delete position of topic's
// subscription sub in its internal stats ("Open at 3:1"), asked at the
// first broker (the request follows the redirect to the owner).
func cursorState(t *testing.T, side *clusterSide, topic, sub string) string {
	t.Helper()
	status, body := adminCall(t, "GET", side.admins[0]+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/internalStats", "")
	var stats struct {
		Cursors map[string]struct {
			State              string `json:"state"`
			MarkDeletePosition string `json:"markDeletePosition"`
		} `json:"cursors"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &stats) != nil {
		t.Fatalf("internal stats of %s: %d %s", topic, status, body)
	}
	c := stats.Cursors[sub]
	return c.State + " at " + c.MarkDeletePosition
}
