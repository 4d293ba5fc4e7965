package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// report is what a run measured.
type report struct {
	o          options
	started    time.Time
	took       time.Duration
	kills      int
	startKills int // kills during a restart, before the broker served
	restarts   []time.Duration
	checks     int
	stored     map[string]int // topic to messages read at the last check
	trimmed    map[string]int // topic to receipted messages gone once every subscription acknowledged them
	dups       int            // keys stored more than once, all allowed
	rec        *record
	wl         *workload
	failures   []error // with -keep-going, every check that failed
}

func (r *report) String() string {
	var b strings.Builder
	o := r.o
	fmt.Fprintf(&b, "crashtest: seed %d, work %s, data %s\n", o.seed, o.workDir, o.dataDir)
	fmt.Fprintf(&b, "  run: %s; %d kills (%d of them while the broker was starting), %d checks after restarts\n",
		r.took.Round(time.Second), r.kills, r.startKills, r.checks)
	if len(r.restarts) > 0 {
		d := slices.Clone(r.restarts)
		slices.Sort(d)
		fmt.Fprintf(&b, "  restart to serving: median %s, max %s\n", d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	if r.rec == nil {
		return b.String()
	}
	rec := r.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	fmt.Fprintf(&b, "  sent %d, receipted %d, failed %d, duplicate receipts (-1:-1) %d, in flight at a kill %d\n",
		rec.sent, len(rec.receipts), rec.failed, rec.dupReceipts, len(rec.inFlightAtKill))
	var topics []string
	for t := range r.stored {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		fmt.Fprintf(&b, "  %s: %d messages stored, %d receipted ones deleted after every subscription acknowledged them\n", t, r.stored[t], r.trimmed[t])
	}
	fmt.Fprintf(&b, "  keys stored twice or more (each in flight at a kill): %d\n", r.dups)
	var subs []string
	for k := range rec.subs {
		subs = append(subs, k)
	}
	sort.Strings(subs)
	for _, k := range subs {
		s := rec.subs[k]
		fmt.Fprintf(&b, "  %s: %d deliveries, %d acknowledgements confirmed, %d negative, %d keys received\n",
			k, s.deliveries, s.confirmed, s.nacks, len(s.received))
	}
	var maxAge time.Duration
	for _, f := range rec.forgotten {
		maxAge = max(maxAge, f.age)
	}
	fmt.Fprintf(&b, "  confirmed acknowledgements a crash forgot: %d entries (oldest %s before its kill); redelivered after a confirmed ack with no kill between: %d\n",
		len(rec.forgotten), maxAge.Round(time.Millisecond), rec.ackedTwice)
	fmt.Fprintf(&b, "  checks that failed: %d\n", len(r.failures))
	if r.wl != nil {
		fmt.Fprintf(&b, "  deliveries whose payload did not check: %d\n", r.wl.badPayloads.Load())
	}
	return b.String()
}

func run(o options) (*report, error) {
	rep := &report{o: o, started: time.Now(), stored: map[string]int{}, trimmed: map[string]int{}}
	defer func() { rep.took = time.Since(rep.started) }()
	rnd := rand.New(rand.NewPCG(o.seed, o.seed>>1))
	rec, err := newRecord(filepath.Join(o.workDir, "record.log"))
	if err != nil {
		return rep, err
	}
	defer rec.close()
	rep.rec = rec
	syncDone := make(chan struct{})
	go rec.syncLoop(syncDone, 50*time.Millisecond)
	defer close(syncDone)

	var tg target
	if o.real != "" {
		tg = newRealTarget(o)
	} else {
		tg = &simTarget{o: o}
	}
	defer tg.stop()
	if err := startAndWait(tg, o, rep); err != nil {
		return rep, err
	}

	run := fmt.Sprintf("%x", rnd.Uint32())
	w := &workload{o: o, rec: rec, topics: []topicSpec{
		{name: "crash-plain-" + run},
		{name: "crash-batched-" + run, batching: true},
	}}
	rep.wl = w
	clog, clogFile, err := newClientLog(filepath.Join(o.workDir, "client.log"))
	if err != nil {
		return rep, err
	}
	defer clogFile.Close()
	newClient := func() (pulsar.Client, error) {
		return pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + o.addr, Logger: clog,
			OperationTimeout: 2 * time.Minute, MaxConnectionsPerBroker: 1})
	}
	if w.prodClient, err = newClient(); err != nil {
		return rep, err
	}
	defer w.prodClient.Close()
	if w.consClient, err = newClient(); err != nil {
		return rep, err
	}
	defer w.consClient.Close()
	// On the way out the consumers stop before their client closes, so
	// that the closing is not taken for a failure.
	defer func() {
		if w.cancel != nil {
			w.cancel()
		}
	}()
	if err := w.subscribe(); err != nil {
		return rep, err
	}
	if err := w.produce(); err != nil {
		return rep, err
	}

	for rep.kills < o.kills {
		// Run for a while, then kill; one kill in ten comes while the
		// restarted broker recovers, before it serves.
		wait := o.minRun + time.Duration(rnd.Int64N(int64(o.maxRun-o.minRun)+1))
		time.Sleep(wait)
		if err := killAndRestart(tg, o, rep, rnd); err != nil {
			return rep, err
		}
		if err := check(w, rep, false); err != nil {
			if !o.keepGoing {
				return rep, err
			}
			rep.failures = append(rep.failures, fmt.Errorf("after kill %d: %w", rep.kills, err))
		}
	}

	// The end: no more production, every subscription drains what is stored.
	w.stopProducers()
	if err := check(w, rep, true); err != nil {
		if !o.keepGoing {
			return rep, err
		}
		rep.failures = append(rep.failures, fmt.Errorf("at the end: %w", err))
	}
	err = drain(w, rep)
	w.stopConsumers()
	if err != nil {
		rep.failures = append(rep.failures, fmt.Errorf("draining: %w", err))
	}
	if err := verdict(w, rep); err != nil {
		rep.failures = append(rep.failures, err)
	}
	return rep, errors.Join(rep.failures...)
}

func startAndWait(tg target, o options, rep *report) error {
	t0 := time.Now()
	if err := tg.start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.readyWait)
	defer cancel()
	if err := tg.ready(ctx); err != nil {
		return fmt.Errorf("restart %d: %w", len(rep.restarts)+1, err)
	}
	rep.restarts = append(rep.restarts, time.Since(t0))
	return nil
}

func killAndRestart(tg target, o options, rep *report, rnd *rand.Rand) error {
	rep.rec.killed(time.Now())
	if err := tg.kill(); err != nil {
		return fmt.Errorf("kill %d: %w", rep.kills+1, err)
	}
	rep.kills++
	if rep.kills < o.kills && rnd.IntN(10) == 0 && o.real == "" {
		// Kill it again while it recovers.
		if err := tg.start(); err != nil {
			return err
		}
		time.Sleep(time.Duration(rnd.Int64N(int64(30 * time.Millisecond))))
		rep.rec.killed(time.Now())
		if err := tg.kill(); err != nil {
			return fmt.Errorf("kill %d (while starting): %w", rep.kills+1, err)
		}
		rep.kills++
		rep.startKills++
	}
	return startAndWait(tg, o, rep)
}

// check pauses production, waits for the outstanding sends to settle, and
// reads every topic from the earliest position: every receipted message
// must be there, whole, at its receipt's id, and stored once unless its
// producer may have resent it.
func check(w *workload, rep *report, final bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if !final {
		defer w.unpause()
	}
	if err := w.pause(ctx); err != nil {
		return fmt.Errorf("after kill %d: %w", rep.kills, err)
	}
	rep.checks++
	var errs []error
	rep.dups = 0
	for _, t := range w.topics {
		topic := w.topic(t)
		receipts := w.rec.receiptsOf(topic)
		st, err := readAll(ctx, w.consClient, topic, w.o.size)
		if err != nil {
			return fmt.Errorf("after kill %d: %w", rep.kills, err)
		}
		rep.stored[topic] = st.count
		var missing, moved []string
		trimmed := 0
		for key, id := range receipts {
			ids := st.ids[key]
			if len(ids) == 0 {
				if w.rec.ackedByAll(topic, parsePos(id)) {
					trimmed++
					continue
				}
				missing = append(missing, key+"@"+id)
			} else if !slices.Contains(ids, id) {
				moved = append(moved, fmt.Sprintf("%s receipted at %s, stored at %v", key, id, ids))
			}
		}
		rep.trimmed[topic] = trimmed
		for key, ids := range st.ids {
			if len(ids) < 2 {
				continue
			}
			if w.o.dedup || !w.rec.mayBeDuplicate(key) {
				errs = append(errs, fmt.Errorf("%s: %s stored %d times (%v) and was never in flight at a kill, or deduplication is on", topic, key, len(ids), ids))
				continue
			}
			rep.dups++
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			errs = append(errs, fmt.Errorf("%s: %d receipted messages missing after kill %d, e.g. %v", topic, len(missing), rep.kills, missing[:min(5, len(missing))]))
		}
		if len(moved) > 0 {
			errs = append(errs, fmt.Errorf("%s: %d messages not at their receipt's id, e.g. %v", topic, len(moved), moved[:min(5, len(moved))]))
		}
	}
	if n := w.rec.closedSends(); n > 0 {
		errs = append(errs, fmt.Errorf("%d sends failed because pulsar-client-go closed their producer (it gave up reconnecting: see client.log), first: %s", n, w.rec.firstClosed))
	}
	if n := w.badPayloads.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d deliveries whose payload did not check or consumers closed, first: %v", n, w.firstBad.Load()))
	}
	if err := forgottenTooOld(w.rec, w.o.ackGrace); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// parsePos reads the position of an id written by idString.
func parsePos(id string) pos {
	var p pos
	var batch int
	fmt.Sscanf(id, "%d:%d:%d", &p.ledger, &p.entry, &batch)
	return p
}

func forgottenTooOld(rec *record, grace time.Duration) error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var old []string
	for _, f := range rec.forgotten {
		if f.age > grace {
			old = append(old, fmt.Sprintf("%s %s (%s, confirmed %s before kill %d)", f.sub, f.entry, f.via, f.age.Round(time.Millisecond), f.killSeen))
		}
	}
	if len(old) == 0 {
		return nil
	}
	return fmt.Errorf("%d confirmed acknowledgements forgotten by a crash (older than -ack-grace %s), e.g. %v", len(old), grace, old[:min(5, len(old))])
}

// drain waits until every subscription has received every key stored in
// its topic.
func drain(w *workload, rep *report) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stored := map[string]map[string]bool{}
	for _, t := range w.topics {
		st, err := readAll(ctx, w.consClient, w.topic(t), w.o.size)
		if err != nil {
			return err
		}
		keys := map[string]bool{}
		for k := range st.ids {
			keys[k] = true
		}
		stored[w.topic(t)] = keys
	}
	for {
		var short []string
		w.rec.mu.Lock()
		for k, s := range w.rec.subs {
			var lack []string
			for key := range stored[s.topic] {
				if !s.received[key] {
					lack = append(lack, key+"@"+w.rec.receipts[key])
				}
			}
			if len(lack) > 0 {
				sort.Strings(lack)
				short = append(short, fmt.Sprintf("%s lacks %d, e.g. %v", k, len(lack), lack[:min(5, len(lack))]))
			}
		}
		w.rec.mu.Unlock()
		if len(short) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			sort.Strings(short)
			saveInternalStats(w)
			return fmt.Errorf("subscriptions never received messages their topic holds: %v", short)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// saveInternalStats keeps the topics' internal stats in the work
// directory, for a failure's post-mortem.
func saveInternalStats(w *workload) {
	for _, t := range w.topics {
		resp, err := http.Get("http://" + w.o.http + "/admin/v2/persistent/public/default/" + t.name + "/internalStats")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = os.WriteFile(filepath.Join(w.o.workDir, t.name+".internalStats.json"), b, 0o644)
	}
}

func verdict(w *workload, rep *report) error {
	if rep.kills < w.o.kills {
		return fmt.Errorf("%d kills of %d", rep.kills, w.o.kills)
	}
	return nil
}
