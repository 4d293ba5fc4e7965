package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// restartable is a broker a test can stop and start again on its data.
type restartable struct {
	url, admin string
	// restart stops the broker (SIGKILL when kill, else a clean stop) and
	// starts it again on the same data, returning once it serves.
	restart func(t *testing.T, kill bool)
	// suffix makes topic names unique on a broker that keeps them.
	suffix string
}

// realRestartable is the real standalone named by PULSAR_RESTART_PORT and
// PULSAR_RESTART_HTTP_PORT, which the test stops and starts again with
// scripts/real-pulsar --keep-data. It skips the test when they are unset.
func realRestartable(t *testing.T) *restartable {
	port, httpPort := os.Getenv("PULSAR_RESTART_PORT"), os.Getenv("PULSAR_RESTART_HTTP_PORT")
	if port == "" || httpPort == "" {
		t.Skip("set PULSAR_RESTART_PORT and PULSAR_RESTART_HTTP_PORT to a real standalone (scripts/real-pulsar start) this test may restart on its data")
	}
	script, err := filepath.Abs("../scripts/real-pulsar")
	if err != nil {
		t.Fatal(err)
	}
	admin := "http://127.0.0.1:" + httpPort
	run := func(t *testing.T, args ...string) {
		out, err := exec.Command(script, append(args, "--port", port, "--http-port", httpPort)...).CombinedOutput()
		if err != nil {
			t.Fatalf("real-pulsar %v: %v\n%s", args, err, out)
		}
	}
	return &restartable{
		url:    "pulsar://127.0.0.1:" + port,
		admin:  admin,
		suffix: fmt.Sprintf("-%d", time.Now().UnixNano()),
		restart: func(t *testing.T, kill bool) {
			if kill {
				killPidFile(t, realPidFile(port))
			} else {
				run(t, "stop")
			}
			run(t, "start", "--keep-data")
			waitServes(t, admin)
		},
	}
}

func realPidFile(port string) string {
	cache := os.Getenv("PULSARSIM_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "pulsarsim")
	}
	return filepath.Join(cache, "real-pulsar", "run-"+port, "broker.pid")
}

func killPidFile(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// waitGone waits until process pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// simRestartable is cmd/pulsarsim run as a process with -data-dir, as a
// developer runs it: built once, started on free ports, stopped with
// SIGTERM (or SIGKILL) and started again on the same directory.
func simRestartable(t *testing.T) *restartable {
	bin := filepath.Join(t.TempDir(), "pulsarsim")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/pulsarsim").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/pulsarsim: %v\n%s", err, out)
	}
	data := t.TempDir()
	addr, httpAddr := freeAddr(t), freeAddr(t)
	admin := "http://" + httpAddr
	var cmd *exec.Cmd
	logFile := filepath.Join(t.TempDir(), "pulsarsim.log")
	start := func(t *testing.T) {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd = exec.Command(bin, "-addr", addr, "-http", httpAddr, "-data-dir", data, "-view=false")
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			waitServes(t, admin)
		}()
		<-done
		if t.Failed() {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("pulsarsim -data-dir does not serve; its log:\n%s", log)
		}
	}
	stop := func(sig syscall.Signal) {
		if cmd == nil {
			return
		}
		_ = cmd.Process.Signal(sig)
		_ = cmd.Wait()
		cmd = nil
	}
	start(t)
	t.Cleanup(func() { stop(syscall.SIGKILL) })
	return &restartable{
		url:   "pulsar://" + addr,
		admin: admin,
		restart: func(t *testing.T, kill bool) {
			if kill {
				stop(syscall.SIGKILL)
			} else {
				stop(syscall.SIGTERM)
			}
			start(t)
		},
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitServes waits until the broker's admin API answers for public/default.
func waitServes(t *testing.T, admin string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := http.Get(admin + "/admin/v2/namespaces/public/default")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s does not serve: %v", admin, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// idMapper writes message ids with the ledgers numbered in the order the
// story first meets them (L0, L1, ...), so that the two brokers' ids
// compare: a real broker's ledger ids depend on what it did before.
type idMapper map[int64]string

func (m idMapper) id(id pulsar.MessageID) string {
	l, ok := m[id.LedgerID()]
	if !ok {
		l = fmt.Sprintf("L%d", len(m))
		m[id.LedgerID()] = l
	}
	s := fmt.Sprintf("%s:%d", l, id.EntryID())
	if id.BatchSize() > 1 {
		s += fmt.Sprintf(":%d/%d", id.BatchIdx(), id.BatchSize())
	}
	return s
}

// subStats are a subscription's backlog and delayed messages.
type subStats struct {
	MsgBacklog int64 `json:"msgBacklog"`
	MsgDelayed int64 `json:"msgDelayed"`
}

func restartStats(t *testing.T, admin, topic string) map[string]subStats {
	t.Helper()
	var st struct {
		Subscriptions map[string]subStats `json:"subscriptions"`
	}
	resp, err := http.Get(admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stats of %s: %s", topic, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Subscriptions
}

// backlogNotes notes every subscription's backlog, in name order.
func backlogNotes(t *testing.T, admin, topic, label string) []string {
	st := restartStats(t, admin, topic)
	var names []string
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s %s backlog %d", label, n, st[n].MsgBacklog))
	}
	return out
}

type restartSub struct {
	name string
	typ  pulsar.SubscriptionType
}

// the subscriptions of the story's main topic, made before it is produced
// to; "earliest" and "latest" are made after.
var restartSubs = []restartSub{
	{"exclusive", pulsar.Exclusive},
	{"shared", pulsar.Shared},
	{"failover", pulsar.Failover},
	{"keyshared", pulsar.KeyShared},
	{"seeked", pulsar.Exclusive},
}

func restartSubscribe(t *testing.T, c pulsar.Client, topic, name string, typ pulsar.SubscriptionType,
	pos pulsar.SubscriptionInitialPosition) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: name, Type: typ,
		SubscriptionInitialPosition: pos, AckWithResponse: true, NackRedeliveryDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("subscribe %s: %v", name, err)
	}
	return cons
}

func restartClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: log.DefaultNopLogger(), OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustAck(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// restartStory settles messages on subscriptions of the four types (acks,
// a cumulative ack, a nack and its redelivery, a batch partly acknowledged,
// a delayed message, a subscription made from the earliest position, one
// seeked back), restarts the broker cleanly on its data, and notes what
// every subscription has and gets again afterwards: backlogs, the messages
// redelivered with their redelivery counts and ids, and where the next
// message goes.
func restartStory(t *testing.T, b *restartable) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	topic := "persistent://public/default/restart" + b.suffix
	batchTopic := "persistent://public/default/restart-batch" + b.suffix
	delayedTopic := "persistent://public/default/restart-delayed" + b.suffix
	ids := map[string]idMapper{topic: {}, batchTopic: {}, delayedTopic: {}}
	var notes []string
	note := func(f string, args ...any) { notes = append(notes, fmt.Sprintf(f, args...)) }

	c := restartClient(t, b.url)
	cons := map[string]pulsar.Consumer{}
	for _, s := range restartSubs {
		cons[s.name] = restartSubscribe(t, c, topic, s.name, s.typ, pulsar.SubscriptionPositionLatest)
	}
	batchCons := restartSubscribe(t, c, batchTopic, "batch", pulsar.Shared, pulsar.SubscriptionPositionLatest)
	delayedCons := restartSubscribe(t, c, delayedTopic, "delayed", pulsar.Shared, pulsar.SubscriptionPositionLatest)

	// Ten single messages, a batch of five, and on the third topic a
	// message delayed by an hour between two others.
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{byte(i)}, Key: fmt.Sprintf("k%d", i%3),
			Properties: map[string]string{"i": strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
		note("published i=%d at %s", i, ids[topic].id(id))
	}
	bp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: batchTopic, BatchingMaxMessages: 5,
		BatchingMaxPublishDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 5)
	for i := range 5 {
		bp.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte{byte(i)}, Properties: map[string]string{"i": strconv.Itoa(i)}},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { sent <- err })
	}
	if err := bp.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	dp, err := c.CreateProducer(pulsar.ProducerOptions{Topic: delayedTopic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, delay := range []time.Duration{0, time.Hour, 0} {
		if _, err := dp.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{byte(i)}, DeliverAfter: delay,
			Properties: map[string]string{"i": strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
	}

	msgs := map[string][]pulsar.Message{}
	for _, s := range restartSubs {
		msgs[s.name] = receiveN(t, cons[s.name], 10)
	}
	// exclusive: a cumulative ack of the first five.
	mustAck(t, cons["exclusive"].AckCumulative(msgs["exclusive"][4]))
	// shared: the even ones acknowledged, i=1 negatively acknowledged and
	// received again (redelivery count 1), the rest left.
	for i := 0; i < 10; i += 2 {
		mustAck(t, cons["shared"].Ack(msgs["shared"][i]))
	}
	cons["shared"].Nack(msgs["shared"][1])
	again := receiveN(t, cons["shared"], 1)[0]
	note("shared before the restart: i=%s again, redelivery count %d", again.Properties()["i"], again.RedeliveryCount())
	// failover: the first three.
	for i := range 3 {
		mustAck(t, cons["failover"].Ack(msgs["failover"][i]))
	}
	// keyshared: the odd ones.
	for i := 1; i < 10; i += 2 {
		mustAck(t, cons["keyshared"].Ack(msgs["keyshared"][i]))
	}
	// seeked: everything acknowledged, then seeked back to i=6.
	mustAck(t, cons["seeked"].AckCumulative(msgs["seeked"][9]))
	if err := cons["seeked"].Seek(msgs["seeked"][6].ID()); err != nil {
		t.Fatal(err)
	}
	// batch: three of the five messages of the batch acknowledged (without
	// batch-index acknowledgement the entry stays unacknowledged).
	bm := receiveN(t, batchCons, 5)
	for i := range 3 {
		mustAck(t, batchCons.Ack(bm[i]))
	}
	note("batch received at %s .. %s", ids[batchTopic].id(bm[0].ID()), ids[batchTopic].id(bm[4].ID()))
	// delayed: the two undelayed ones received and acknowledged.
	for _, m := range receiveN(t, delayedCons, 2) {
		note("delayed received i=%s at %s", m.Properties()["i"], ids[delayedTopic].id(m.ID()))
		mustAck(t, delayedCons.Ack(m))
	}
	// Subscriptions made now from the earliest and the latest position.
	restartSubscribe(t, c, topic, "earliest", pulsar.Exclusive, pulsar.SubscriptionPositionEarliest).Close()
	restartSubscribe(t, c, topic, "latest", pulsar.Exclusive, pulsar.SubscriptionPositionLatest).Close()

	// The broker rewinds the cursor to before i=6 and the consumer comes
	// back; pulsar-client-go then drops the message at the seek's id (its
	// start id is exclusive) and acknowledges it, so the consumer gets
	// i=7..9 and the backlog settles at three.
	for _, m := range receiveN(t, cons["seeked"], 3) {
		note("seeked received i=%s after the seek", m.Properties()["i"])
	}
	waitBacklog(t, b.admin, topic, "seeked", 3)
	notes = append(notes, backlogNotes(t, b.admin, topic, "before")...)
	notes = append(notes, backlogNotes(t, b.admin, batchTopic, "before")...)
	notes = append(notes, backlogNotes(t, b.admin, delayedTopic, "before")...)
	c.Close()

	b.restart(t, false)

	notes = append(notes, backlogNotes(t, b.admin, topic, "after")...)
	notes = append(notes, backlogNotes(t, b.admin, batchTopic, "after")...)
	notes = append(notes, backlogNotes(t, b.admin, delayedTopic, "after")...)
	c = restartClient(t, b.url)
	defer c.Close()
	after := append(append([]restartSub(nil), restartSubs...),
		restartSub{"earliest", pulsar.Exclusive}, restartSub{"latest", pulsar.Exclusive})
	st := restartStats(t, b.admin, topic)
	for _, s := range after {
		cn := restartSubscribe(t, c, topic, s.name, s.typ, pulsar.SubscriptionPositionLatest)
		got := receiveN(t, cn, int(st[s.name].MsgBacklog))
		sort.Slice(got, func(i, j int) bool { return got[i].ID().EntryID() < got[j].ID().EntryID() })
		for _, m := range got {
			note("after %s got i=%s redelivery count %d at %s", s.name, m.Properties()["i"], m.RedeliveryCount(), ids[topic].id(m.ID()))
		}
		cn.Close()
	}
	bc := restartSubscribe(t, c, batchTopic, "batch", pulsar.Shared, pulsar.SubscriptionPositionLatest)
	for _, m := range receiveN(t, bc, 5) {
		note("after batch got i=%s redelivery count %d at %s", m.Properties()["i"], m.RedeliveryCount(), ids[batchTopic].id(m.ID()))
	}
	bc.Close()
	// The delayed message stays delayed: a message published after it comes
	// first, and the subscription counts the delayed one.
	dc := restartSubscribe(t, c, delayedTopic, "delayed", pulsar.Shared, pulsar.SubscriptionPositionLatest)
	dp, err = c.CreateProducer(pulsar.ProducerOptions{Topic: delayedTopic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dp.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{3}, Properties: map[string]string{"i": "3"}}); err != nil {
		t.Fatal(err)
	}
	m := receiveN(t, dc, 1)[0]
	// Pulsar opens a new ledger when it loads a topic, pulsarsim goes on in
	// the topic's one ledger (FIDELITY.md): the ids of messages published
	// after the restart are logged, not compared.
	note("after delayed got i=%s", m.Properties()["i"])
	t.Logf("%s: the first message published after the restart is at %s", b.url, ids[delayedTopic].id(m.ID()))
	mustAck(t, dc.Ack(m))
	dst := restartStats(t, b.admin, delayedTopic)["delayed"]
	note("after delayed backlog %d, delayed %d", dst.MsgBacklog, dst.MsgDelayed)
	dc.Close()
	// Where the next message of the main topic goes.
	p, err = c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the next message of %s is at %s", b.url, topic, ids[topic].id(id))
	p.Close()
	return notes
}

// waitBacklog waits until sub's backlog on topic is n.
func waitBacklog(t *testing.T, admin, topic, sub string, n int64) {
	t.Helper()
	var last int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last = restartStats(t, admin, topic)[sub].MsgBacklog; last == n {
			return
		}
	}
	t.Fatalf("%s on %s: backlog %d, want %d", sub, topic, last, n)
}

// TestRestartRedeliveriesMatchPulsar runs the restart story on pulsarsim
// -data-dir and on a real Pulsar 4.0.8 standalone restarted on its data,
// and compares what every subscription has and redelivers after the
// restart.
func TestRestartRedeliveriesMatchPulsar(t *testing.T) {
	real := realRestartable(t)
	sim := simRestartable(t)
	got := restartStory(t, sim)
	want := restartStory(t, real)
	sameOnBoth(t, want, got)
}
