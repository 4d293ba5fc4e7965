package testkit_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// topicInRange returns a topic of ns whose bundle hash falls in the range
// "0x..._0x...".
func topicInRange(t *testing.T, ns, rng, prefix string) string {
	t.Helper()
	lo, hi, _ := strings.Cut(rng, "_")
	l, _ := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 32)
	h, _ := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 32)
	for i := range 1 << 20 {
		full := fmt.Sprintf("persistent://%s/%s-%d", ns, prefix, i)
		if x := uint64(crc32.ChecksumIEEE([]byte(full))); x >= l && x < h {
			return full
		}
	}
	t.Fatalf("no topic name found in %s", rng)
	return ""
}

func TestClusterSplitKeepsBothHalvesWithTheOwnerAndItsTopicsLoaded(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/split-me"
	c.Move(topic, 1)
	p, err := c.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	parent := c.Bundle(topic)
	rng := strings.TrimPrefix(parent, "public/default/")
	before := c.Bundles("public/default")
	admins := c.AdminURLs()

	// Asked of broker 0, the leader, the split goes to the owner, with
	// authoritative=true.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodPut, admins[0]+"/admin/v2/namespaces/"+parent+"/split", nil)
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect ||
		loc != admins[1]+"/admin/v2/namespaces/"+parent+"/split?authoritative=true" {
		t.Fatalf("split at broker 0: %s, Location %q; want 307 to broker 1, authoritative", resp.Status, loc)
	}
	req, _ = http.NewRequest(http.MethodPut, admins[0]+"/admin/v2/namespaces/"+parent+"/split", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("split followed to the owner: %s", resp.Status)
	}

	after := c.Bundles("public/default")
	i := slices.Index(before, rng)
	lo, hi, _ := strings.Cut(rng, "_")
	l, _ := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 32)
	h, _ := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 32)
	mid := fmt.Sprintf("0x%08x", l+(h-l)/2)
	halves := []string{lo + "_" + mid, mid + "_" + hi}
	want := slices.Concat(before[:i], halves, before[i+1:])
	if !slices.Equal(after, want) {
		t.Fatalf("bundles after the split %v, want %v", after, want)
	}
	// Each half is owned by the owner, a topic of either half looked up at
	// either broker is sent there, and its bundle is the half's.
	for _, half := range halves {
		other := topicInRange(t, "public/default", half, "half")
		if got := c.Owner(other); got != 1 {
			t.Errorf("owner of %s (in %s): %d, want 1", other, half, got)
		}
		for _, a := range admins {
			var lookup map[string]string
			getJSON(t, a+"/lookup/v2/topic/persistent/"+strings.TrimPrefix(other, "persistent://"), &lookup)
			if lookup["brokerUrl"] != c.Broker(1).URL() {
				t.Errorf("lookup of %s at %s: %v, want broker 1", other, a, lookup)
			}
			resp, err := http.Get(a + "/lookup/v2/topic/persistent/" + strings.TrimPrefix(other, "persistent://") + "/bundle")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != half {
				t.Errorf("bundle of %s at %s: %q (%v), want %q", other, a, body, err, half)
			}
		}
	}
	// The topic stayed loaded where it was: its producer was not closed.
	if ts, ok := c.Broker(1).Topic(topic); !ok || len(ts.Producers) != 1 {
		t.Errorf("the topic at broker 1: %+v", ts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after the split")}); err != nil {
		t.Errorf("send after the split: %v", err)
	}
	c.Broker(1).DeliverEvents()
	for _, e := range c.Broker(1).Events() {
		if e.Kind == testkit.EventProducerClosed {
			t.Errorf("a producer was closed by the split: %+v", e)
		}
	}
}

func TestClusterSplitWithUnloadFreesTheHalvesAndTheClientsLookThemUpAgain(t *testing.T) {
	c := testkit.StartCluster(t, 2)
	const topic = "persistent://public/default/split-unload"
	c.Move(topic, 1)
	p, err := c.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	rng := strings.TrimPrefix(c.Bundle(topic), "public/default/")
	halves := c.SplitBundle("public/default", rng, testkit.SplitUnload())
	if len(halves) != 2 || !strings.HasPrefix(rng, strings.Split(halves[0], "_")[0]) {
		t.Fatalf("halves %v of %s", halves, rng)
	}
	if !slices.Contains(halves, strings.TrimPrefix(c.Bundle(topic), "public/default/")) {
		t.Errorf("the topic's bundle %s is not a half %v", c.Bundle(topic), halves)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The producer was closed; it looks the topic up again, which gives the
	// half an owner, and sends there.
	if raceDetector { // see race_on_test.go: a new producer sends
		p.Close()
		if p, err = c.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("after")}); err != nil {
		t.Fatalf("send after the split: %v", err)
	}
	if got := c.Owner(topic); got < 0 {
		t.Errorf("the topic's half has no owner after a lookup")
	}
	c.Broker(1).DeliverEvents()
	closed := false
	for _, e := range c.Broker(1).Events() {
		closed = closed || e.Kind == testkit.EventProducerClosed && e.Topic == topic
	}
	if !closed {
		t.Error("the split with unload did not close the topic's producer at its owner")
	}
	other := topicInRange(t, "public/default", halves[0], "free")
	if c.Bundle(other) == c.Bundle(topic) {
		other = topicInRange(t, "public/default", halves[1], "free")
	}
	if got := c.Owner(other); got != -1 {
		t.Errorf("the other half, looked up by nobody, is owned by %d", got)
	}
}

func TestALoneBrokerSplitsItsBundles(t *testing.T) {
	b := testkit.Start(t)
	b.CreateNamespace("public/lone")
	halves := b.SplitBundle("public/lone", "0x00000000_0x40000000")
	if want := []string{"0x00000000_0x20000000", "0x20000000_0x40000000"}; !slices.Equal(halves, want) {
		t.Fatalf("halves %v, want %v", halves, want)
	}
	if got := b.Bundles("public/lone"); len(got) != 5 || got[0] != halves[0] {
		t.Errorf("bundles %v", got)
	}
	topic := topicInRange(t, "public/lone", halves[1], "t")
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer on a topic of a half: %v", err)
	}
	p.Close()
}

// With the extensible load manager a split that finds nowhere to split
// fails (500), and unload=true is ignored: the halves stay with the owner.
func TestExtensibleSplitFailsWhenNowhereToSplitAndIgnoresUnload(t *testing.T) {
	c := testkit.StartCluster(t, 2, testkit.WithLoadManager(testkit.ExtensibleLoadManager))
	const topic = "persistent://public/default/split-extensible"
	p, err := c.Client().CreateProducer(pulsar.ProducerOptions{Topic: topic}) // assigns the bundle
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	owner := c.Owner(topic)
	rng := strings.TrimPrefix(c.Bundle(topic), "public/default/")
	admins := c.AdminURLs()
	put := func(query string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, admins[0]+"/admin/v2/namespaces/public/default/"+rng+"/split"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	status, body := put("?splitAlgorithmName=topic_count_equally_divide")
	if status != http.StatusInternalServerError ||
		!strings.Contains(body, `Message: Bundle public/default/`+rng+` not found under namespace`) {
		t.Errorf("split by topic count of a bundle without topics: %d %s", status, body)
	}
	if status, body := put("?unload=true"); status != http.StatusNoContent {
		t.Fatalf("split with unload: %d %s", status, body)
	}
	if slices.Contains(c.Bundles("public/default"), rng) {
		t.Fatalf("%s is still a bundle: %v", rng, c.Bundles("public/default"))
	}
	for _, half := range c.Bundles("public/default") {
		if strings.HasPrefix(rng, strings.Split(half, "_")[0]) || strings.HasSuffix(rng, strings.Split(half, "_")[1]) {
			if got := c.Owner(topicInRange(t, "public/default", half, "ext")); got != owner {
				t.Errorf("half %s of %s owned by %d, want %d (unload ignored)", half, rng, got, owner)
			}
		}
	}
}
