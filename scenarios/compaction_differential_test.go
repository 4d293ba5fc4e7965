package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Topic compaction compared with a real Pulsar: the admin answers of the
// trigger, its status and the compaction-threshold policy; then the same
// messages (keys, tombstones, messages without a key, batches) compacted
// through the admin API, and what read-compacted readers, a consumer and
// a TableView get, and what the topic's stats say of __compaction.

// compactionAdminScript asks for compaction and thresholds, good and bad.
func compactionAdminScript() []adminStep {
	const nsp, tp = "/admin/v2/namespaces/{ns}/", "/admin/v2/persistent/{ns}/t/"
	return []adminStep{
		{"PUT", "/admin/v2/namespaces/{ns}", ""},
		{"GET", "/admin/v2/persistent/{ns}/none/compaction", ""},
		{"PUT", "/admin/v2/persistent/{ns}/none/compaction", ""},
		{"GET", "/admin/v2/non-persistent/{ns}/np/compaction", ""},
		{"PUT", "/admin/v2/persistent/{ns}/t", ""},
		{"GET", tp + "compaction", ""},
		{"GET", nsp + "compactionThreshold", ""},
		{"PUT", nsp + "compactionThreshold", "-5"},
		{"PUT", nsp + "compactionThreshold", "x"},
		{"PUT", nsp + "compactionThreshold", ""},
		{"PUT", nsp + "compactionThreshold", "1000000"},
		{"GET", nsp + "compactionThreshold", ""},
		{"GET", tp + "compactionThreshold", ""},
		{"GET", tp + "compactionThreshold?applied=true", ""},
		{"POST", tp + "compactionThreshold", "-1"},
		{"POST", tp + "compactionThreshold", ""},
		{"POST", tp + "compactionThreshold", "2000000"},
		{"GET", tp + "compactionThreshold", ""},
		{"GET", "/admin/v2/persistent/{ns}/none/compactionThreshold", ""},
		{"POST", "/admin/v2/persistent/{ns}/t-partition-0/compactionThreshold", "5"},
		{"DELETE", tp + "compactionThreshold", ""},
		{"GET", tp + "compactionThreshold", ""},
		{"GET", tp + "compactionThreshold?applied=true", ""},
		{"DELETE", nsp + "compactionThreshold", ""},
		{"GET", nsp + "compactionThreshold", ""},
		{"GET", "/admin/v2/namespaces/{ns}-none/compactionThreshold", ""},
		{"PUT", "/admin/v2/namespaces/{ns}-none/compactionThreshold", "5"},
		{"PUT", "/admin/v2/persistent/{ns}/p/partitions", "2"},
		{"PUT", "/admin/v2/persistent/{ns}/p/compaction", ""},
		{"GET", "/admin/v2/persistent/{ns}/p/compaction", ""},
		{"PUT", "/admin/v2/persistent/{ns}/q/partitions", "2"},
		{"GET", "/admin/v2/persistent/{ns}/q-partition-1/compaction", ""},
		{"GET", "/admin/v2/persistent/{ns}/q-partition-7/compaction", ""},
		{"PUT", "/admin/v2/persistent/{ns}/q-partition-7/compaction", ""},
		{"GET", "/admin/v2/persistent/{ns}-none/t/compaction", ""},
		{"PUT", "/admin/v2/persistent/{ns}-none/t/compaction", ""},
	}
}

// compactionTrace is what a client sees of a compacted topic.
type compactionTrace struct {
	Admin      []string
	Status     string
	Compacted  []string // read-compacted reader from the earliest message
	Whole      []string // a reader that does not read compacted
	Consumer   []string // a read-compacted Exclusive consumer
	Table      []string // a TableView's entries, sorted
	Subs       []string // the topic's subscriptions in its stats
	CompBackl  float64  // __compaction's msgBacklog after the new messages
	Partition0 string   // a partition's status after the partitioned trigger
	// Tail is what a read-compacted reader gets of a topic that ends in
	// messages the compaction drops, after one compaction and after a
	// second with nothing new; Empty of a topic whose keys are all gone.
	Tail, TailAgain, Empty []string
	// AfterUnload is the status once the compacted topic was unloaded;
	// Dropped what a read-compacted reader gets once the __compaction
	// subscription was deleted.
	AfterUnload string
	Dropped     []string
	// Resumed is what a read-compacted consumer gets when it comes back
	// after acknowledging its first six messages (two whole entries).
	Resumed []string
}

func TestDifferentialCompaction(t *testing.T) {
	url := oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, realAdmin)
	ns := "public/" + strings.TrimPrefix(real.Topic("cmp"), "persistent://public/default/")
	got := runCompaction(t, sim.Client(), sim.Sim.AdminURL(), ns)
	want := runCompaction(t, real.Client(), realAdmin, ns)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pulsarsim differs from Pulsar (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both: admin %q\ncompacted %v\nwhole %v\nconsumer %v\ntable %v\nsubscriptions %v, __compaction backlog %v, partition status %s\ntail %v\nagain %v\nempty %v\nafter unload %s\ndropped %v\nresumed %v",
		got.Admin, got.Compacted, got.Whole, got.Consumer, got.Table, got.Subs, got.CompBackl, got.Partition0, got.Tail, got.TailAgain, got.Empty, got.AfterUnload, got.Dropped, got.Resumed)
}

// runCompaction runs the scenario on one broker.
func runCompaction(t *testing.T, c pulsar.Client, admin, ns string) compactionTrace {
	var tr compactionTrace
	tr.Admin = runAdminSteps(t, admin, ns, compactionAdminScript())
	tr.Partition0 = waitCompaction(t, admin, "persistent/"+ns+"/p-partition-0")
	topic := "persistent://" + ns + "/kv"
	// String schemas throughout: a TableView needs one.
	single, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
		Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	batched, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 5,
		BatchingMaxPublishDelay: time.Hour, Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer batched.Close()
	sendKeyed(t, single, "a", "1", "b", "1", "a", "2", "", "no key", "c", "1", "b", "")
	sendBatch(t, batched, "d", "1", "a", "3", "", "batched no key", "e", "1", "d", "")
	sendKeyed(t, single, "c", "2", "f", "1")
	sendBatch(t, batched, "f", "", "g", "1")
	// A compressed batch: its rewrite must read the same.
	zipped, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 4,
		BatchingMaxPublishDelay: time.Hour, Schema: pulsar.NewStringSchema(nil), CompressionType: pulsar.LZ4})
	if err != nil {
		t.Fatal(err)
	}
	defer zipped.Close()
	sendBatch(t, zipped, "h", "1", "i", "1", "h", "", "j", "1")
	httpDo(t, "PUT", admin+"/admin/v2/persistent/"+ns+"/kv/compaction")
	tr.Status = waitCompaction(t, admin, "persistent/"+ns+"/kv")
	sendKeyed(t, single, "a", "4", "", "late", "b", "2")
	tr.Compacted = readTopic(t, c, topic, true)
	tr.Whole = readTopic(t, c, topic, false)
	tr.Consumer = consumeCompacted(t, c, topic, len(tr.Compacted))
	tr.Resumed = resumeCompacted(t, c, topic, tr.Compacted)
	tr.Table = tableEntries(t, c, topic)
	tr.Subs, tr.CompBackl = compactionStats(t, admin, "persistent/"+ns+"/kv")
	tr.Tail, tr.TailAgain, tr.Empty = runCompactionTails(t, c, admin, ns)
	httpDo(t, "PUT", admin+"/admin/v2/persistent/"+ns+"/tail/unload")
	_, body := httpDo(t, "GET", admin+"/admin/v2/persistent/"+ns+"/tail/compaction")
	tr.AfterUnload = string(body)
	drop := "persistent://" + ns + "/drop"
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: drop, BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendBatch(t, p, "p", "1", "q", "1", "p", "")
	httpDo(t, "PUT", admin+"/admin/v2/persistent/"+ns+"/drop/compaction")
	waitCompaction(t, admin, "persistent/"+ns+"/drop")
	httpDo(t, "DELETE", admin+"/admin/v2/persistent/"+ns+"/drop/subscription/__compaction")
	tr.Dropped = readTopic(t, c, drop, true)
	return tr
}

// runCompactionTails compacts a topic that ends in a keyless message and a
// tombstone (so the compacted view ends before the horizon: a
// read-compacted reader is told of the view's last message), twice, and a
// topic whose keys all end in tombstones (an empty view).
func runCompactionTails(t *testing.T, c pulsar.Client, admin, ns string) (tail, again, empty []string) {
	topic := "persistent://" + ns + "/tail"
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendBatch(t, p, "x", "1", "y", "1", "x", "")
	sendBatch(t, p, "z", "1", "y", "2", "w", "1")
	sendBatch(t, p, "", "no key", "w", "")
	compact := func(name string) {
		httpDo(t, "PUT", admin+"/admin/v2/persistent/"+ns+"/"+name+"/compaction")
		if st := waitCompaction(t, admin, "persistent/"+ns+"/"+name); !strings.Contains(st, "SUCCESS") {
			t.Fatalf("compaction of %s: %s", name, st)
		}
	}
	compact("tail")
	tail = readTopic(t, c, topic, true)
	compact("tail")
	again = readTopic(t, c, topic, true)
	gone := "persistent://" + ns + "/gone"
	p2, err := c.CreateProducer(pulsar.ProducerOptions{Topic: gone, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	sendKeyed(t, p2, "a", "1", "b", "1", "a", "", "b", "")
	compact("gone")
	empty = readTopic(t, c, gone, true)
	return tail, again, empty
}

func sendKeyed(t *testing.T, p pulsar.Producer, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: kv[i], Payload: []byte(kv[i+1])}); err != nil {
			t.Fatal(err)
		}
	}
}

// sendBatch sends the messages as one batch.
func sendBatch(t *testing.T, p pulsar.Producer, kv ...string) {
	t.Helper()
	errs := make(chan error, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: kv[i], Payload: []byte(kv[i+1])},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for range len(kv) / 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func httpDo(t *testing.T, method, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, body)
	}
	return resp.StatusCode, body
}

// waitCompaction polls a topic's compaction status until it is no longer
// RUNNING, and returns it.
func waitCompaction(t *testing.T, admin, topicPath string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := httpDo(t, "GET", admin+"/admin/v2/"+topicPath+"/compaction")
		if !strings.Contains(string(body), `"RUNNING"`) {
			return string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("compaction of %s still running: %s", topicPath, body)
		}
		time.Sleep(50 * time.Millisecond) // polling a real broker's asynchronous compaction
	}
}

// describeKeyed is a message as the trace records it: its entry, batch index,
// key and payload (the ledger differs between brokers).
func describeKeyed(m pulsar.Message) string {
	id := m.ID()
	return fmt.Sprintf("%d:%d %q=%q", id.EntryID(), id.BatchIdx(), m.Key(), m.Payload())
}

func readTopic(t *testing.T, c pulsar.Client, topic string, compacted bool) []string {
	t.Helper()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(),
		ReadCompacted: compacted})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("reading %s after %v: %v", topic, out, err)
		}
		out = append(out, describeKeyed(m))
	}
	return out
}

// consumeCompacted receives n messages with a read-compacted Exclusive
// consumer from the earliest position.
func consumeCompacted(t *testing.T, c pulsar.Client, topic string, n int) []string {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "compacted",
		ReadCompacted: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("consuming %s after %v: %v", topic, out, err)
		}
		out = append(out, describeKeyed(m))
	}
	return out
}

// resumeCompacted receives every message with a read-compacted consumer
// that acknowledges the first six (and waits for the broker's answers),
// closes it, and returns what a new consumer of the same subscription gets
// until the topic's last message.
func resumeCompacted(t *testing.T, c pulsar.Client, topic string, all []string) []string {
	t.Helper()
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "resumed", ReadCompacted: true,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, AckWithResponse: true}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := c.Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		if i < 6 {
			if err := cons.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	cons.Close()
	cons, err = c.Subscribe(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var out []string
	for len(out) == 0 || out[len(out)-1] != all[len(all)-1] {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("consuming %s again after %v: %v", topic, out, err)
		}
		out = append(out, describeKeyed(m))
	}
	return out
}

func tableEntries(t *testing.T, c pulsar.Client, topic string) []string {
	t.Helper()
	tv, err := c.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil),
		SchemaValueType: reflect.TypeOf((*string)(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tv.Close()
	var out []string
	for k, v := range tv.Entries() {
		out = append(out, fmt.Sprintf("%q=%q", k, *v.(*string)))
	}
	sort.Strings(out)
	return out
}

func compactionStats(t *testing.T, admin, topicPath string) ([]string, float64) {
	t.Helper()
	_, body := httpDo(t, "GET", admin+"/admin/v2/"+topicPath+"/stats")
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog float64
			Type       string
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	var subs []string
	for name := range st.Subscriptions {
		// A closed reader's subscription may linger a moment on Pulsar.
		if !strings.HasPrefix(name, "reader-") {
			subs = append(subs, name+" "+st.Subscriptions[name].Type)
		}
	}
	sort.Strings(subs)
	return subs, st.Subscriptions["__compaction"].MsgBacklog
}

// TestDifferentialCompactionThreshold sets a topic's compaction threshold
// below its backlog and lets the broker's periodic check compact it: on
// Pulsar within a minute of real time, on pulsarsim when its clock moves a
// minute. A topic under its threshold is left alone.
func TestDifferentialCompactionThreshold(t *testing.T) {
	url := oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, realAdmin)
	ns := "public/" + strings.TrimPrefix(real.Topic("cth"), "persistent://public/default/")
	run := func(c pulsar.Client, admin string, wait func(topicPath string) string) []string {
		httpDo(t, "PUT", admin+"/admin/v2/namespaces/"+ns)
		var out []string
		for _, name := range []string{"over", "under"} {
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://" + ns + "/" + name,
				DisableBatching: true})
			if err != nil {
				t.Fatal(err)
			}
			sendKeyed(t, p, "a", "1", "b", "1", "a", "2", "", "no key")
			p.Close()
		}
		setThreshold(t, admin, "/admin/v2/persistent/"+ns+"/over/compactionThreshold", "1")
		setThreshold(t, admin, "/admin/v2/persistent/"+ns+"/under/compactionThreshold", "100000000")
		out = append(out, "over: "+wait("persistent/"+ns+"/over"))
		_, body := httpDo(t, "GET", admin+"/admin/v2/persistent/"+ns+"/under/compaction")
		out = append(out, "under: "+string(body))
		subs, _ := compactionStats(t, admin, "persistent/"+ns+"/under")
		out = append(out, fmt.Sprint("under's subscriptions: ", subs))
		out = append(out, readTopic(t, c, "persistent://"+ns+"/over", true)...)
		return out
	}
	got := run(sim.Client(), sim.Sim.AdminURL(), func(topicPath string) string {
		sim.Sim.Advance(time.Minute)
		_, body := httpDo(t, "GET", sim.Sim.AdminURL()+"/admin/v2/"+topicPath+"/compaction")
		return string(body)
	})
	want := run(real.Client(), realAdmin, func(topicPath string) string {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			_, body := httpDo(t, "GET", realAdmin+"/admin/v2/"+topicPath+"/compaction")
			if strings.Contains(string(body), "SUCCESS") || time.Now().After(deadline) {
				return string(body)
			}
			time.Sleep(time.Second) // Pulsar's check runs every 60 s of real time
		}
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pulsarsim differs from Pulsar (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both: %q", got)
}

func setThreshold(t *testing.T, admin, path, v string) {
	t.Helper()
	if status := adminDo(t, admin, "POST", path, v); status != http.StatusNoContent {
		t.Fatalf("POST %s %s: %d", path, v, status)
	}
}
