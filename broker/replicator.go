package broker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Geo-replication as Pulsar 4.0's GeoPersistentReplicator does it. A
// persistent topic whose replication clusters (the topic's own, else its
// namespace's) name other clusters of its configuration store has a
// replicator for each of them while it is loaded: a durable cursor on the
// topic named pulsar.repl.<remote> (created at the end of the topic, as
// replicationStartAt=latest does), and a producer named
// pulsar.repl.<local>--><remote> writing to the same topic on the remote
// cluster. The replicator reads its cursor's entries in order and, for
// each, as Pulsar's replicateEntries does:
//   - a transaction marker, a message of an aborted transaction, a
//     message that was itself replicated here (replicated_from set), or one
//     whose replicate_to does not name the remote, is acknowledged and not
//     sent;
//   - any other entry (a replicated subscription's marker too) is written
//     whole to the remote topic with replicated_from set to the local
//     cluster and the transaction ids cleared, its metadata otherwise as the
//     producer wrote it (producer name, sequence id, publish time,
//     properties, key, batch) but for the property
//     __MSG_PROP_REPL_SOURCE_POSITION naming its source entry, and the
//     cursor acknowledges it only once the remote topic has stored it.
// A message's schema goes with it: it is registered on the remote topic
// (which may give it another version, which the copy then names).
// A remote cluster with no broker serving the topic (all stopped or
// crashed) leaves the replicator disconnected: its cursor keeps the
// backlog, and it tries again (every replicatorRetry) until the remote
// serves again, then drains it in order. The replicator's cursor is not a
// subscription: topic stats list it in their replication map, not among
// subscriptions. replicatorDispatchRate limits what it sends.

// ErrClusterUnreachable is a replicator's failure to reach its remote
// cluster: no broker of it serves the topic.
var ErrClusterUnreachable = errors.New("remote cluster unreachable")

// replicatorPrefix is Pulsar's replicatorPrefix: the cursor's name is
// pulsar.repl.<remote>, the producer's pulsar.repl.<local>--><remote>.
const replicatorPrefix = "pulsar.repl"

// replSourcePosition is the property a replicated message carries naming
// its source entry, ledger:entry (GeoReplicationProducerImpl's
// MSG_PROP_REPL_SOURCE_POSITION).
const replSourcePosition = "__MSG_PROP_REPL_SOURCE_POSITION"

// replicatorRetry is how long a replicator whose remote is unreachable, or
// whose rate limit is spent, waits before it tries again.
const replicatorRetry = 100 * time.Millisecond

// replicatorReadBatch bounds the entries one read of a replicator takes.
const replicatorReadBatch = 100

// isReplicatorCursor reports whether a subscription name is a replicator's
// cursor.
func isReplicatorCursor(name string) bool { return strings.HasPrefix(name, replicatorPrefix+".") }

// geoState is a cluster's replication state: the replicators running on
// its brokers, and the replicated subscriptions' controllers (replsub.go).
// Its lock is a leaf, taken under a topic lock or alone.
type geoState struct {
	mu   sync.Mutex
	reps map[*Topic]map[string]*replicator
	// subs are the replicated subscriptions by topic, then name (a
	// subscription whose SUBSCRIBE set replicate_subscription_state, or
	// that an update from another cluster created).
	subs map[string]map[string]bool
	// ctrl are the topics' replicated-subscription controllers by name.
	ctrl map[string]*replController
	// inbound counts what other clusters' replicators wrote to each
	// topic, by topic, then by source cluster.
	inbound map[string]map[string]*inboundStats
}

// inboundStats counts what one remote cluster's replicator wrote to a
// topic here.
type inboundStats struct {
	in        meter
	bytes     int64
	since     time.Time
	connected bool
}

func newGeoState() *geoState {
	return &geoState{reps: map[*Topic]map[string]*replicator{}, subs: map[string]map[string]bool{},
		ctrl: map[string]*replController{}, inbound: map[string]map[string]*inboundStats{}}
}

// noteInboundLocked counts an entry the replicator of cluster from wrote to
// the topic. Called under the topic's lock.
func (t *Topic) noteInboundLocked(from string, msgs int64, size int) {
	g := t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.inbound[t.full]
	if m == nil {
		m = map[string]*inboundStats{}
		g.inbound[t.full] = m
	}
	in := m[from]
	if in == nil {
		in = &inboundStats{}
		m[from] = in
	}
	in.in.add(time.Now(), msgs)
	in.bytes += int64(size)
}

// replicator copies a topic's entries to one remote cluster. Its fields
// but wake and stop are under its topic's lock.
type replicator struct {
	t      *Topic
	remote string
	wake   chan struct{}
	stop   chan struct{}

	connected      bool
	connectedSince time.Time
	out            meter
	bytesOut       int64
	expired        int64
	limiter        dispatchLimiter
	// next is the next entry to read: entries before it were sent (or
	// skipped) and acknowledged.
	next int64
}

// cursorName is the replicator's cursor on the local topic.
func (r *replicator) cursorName() string { return replicatorPrefix + "." + r.remote }

// producerName is the name of the replicator's producer on the remote
// topic (GeoPersistentReplicator.getProducerName).
func (r *replicator) producerName() string {
	return replicatorPrefix + "." + r.t.b.name + "-->" + r.remote
}

// remoteClustersLocked returns the clusters other than its own that the
// topic replicates to, sorted; none for a topic outside a configuration
// store shared with other clusters, a non-persistent or a system topic.
func (t *Topic) remoteClustersLocked() []string {
	if t.b.cs == nil || !t.name.Persistent || t.name.NamespaceName() == "pulsar/system" ||
		strings.HasPrefix(t.name.Base().Local, "__") {
		return nil
	}
	p := t.policiesLocked()
	if p.ReplicationClusters == nil {
		return nil
	}
	var out []string
	for _, c := range *p.ReplicationClusters {
		if c != t.b.name && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// replicationLocked starts a replicator for each remote cluster the topic
// replicates to and has none, wakes those it has, and stops those of
// clusters it no longer replicates to, deleting their cursors as Pulsar's
// removeReplicator does. Called under the topic's lock (or before anyone
// sees the topic) when it is loaded, after it stored an entry, when its
// policies changed, and periodically.
func (t *Topic) replicationLocked() {
	if t.b.cs == nil || t.released || t.deleted {
		return
	}
	remotes := t.remoteClustersLocked()
	for _, r := range remotes {
		if name := replicatorPrefix + "." + r; t.subs[name] == nil {
			t.newSubscriptionLocked(name, true, t.log.End()-1)
		}
	}
	for name := range t.subs {
		if isReplicatorCursor(name) && !slices.Contains(remotes, strings.TrimPrefix(name, replicatorPrefix+".")) {
			delete(t.subs, name)
			if t.trimHolder != nil && t.trimHolder.name == name {
				t.trimHolder = nil
			}
		}
	}
	g := t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	reps := g.reps[t]
	for name, r := range reps {
		if !slices.Contains(remotes, name) {
			close(r.stop)
			delete(reps, name)
		}
	}
	for _, remote := range remotes {
		if r := reps[remote]; r != nil {
			r.signal()
			continue
		}
		if reps == nil {
			reps = map[string]*replicator{}
			g.reps[t] = reps
		}
		r := &replicator{t: t, remote: remote, wake: make(chan struct{}, 1), stop: make(chan struct{}),
			next: t.subs[replicatorPrefix+"."+remote].cur.MarkDelete() + 1}
		reps[remote] = r
		t.b.wg.Add(1)
		go r.run()
	}
}

// signal wakes the replicator.
func (r *replicator) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run is the replicator's goroutine: it sends what its cursor has, and
// waits for more (or for its next try), until its topic is unloaded or
// deleted, it is stopped, or its broker closes.
func (r *replicator) run() {
	b := r.t.b
	defer b.wg.Done()
	defer r.forget()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-r.stop:
			return
		case <-r.wake:
		case <-retry.C:
		}
		again, alive := r.pump()
		if !alive {
			return
		}
		retry.Stop()
		if again {
			retry.Reset(replicatorRetry)
		} else {
			// A topic unloaded while nothing was written is noticed at
			// the next try.
			retry.Reset(time.Second)
		}
	}
}

// forget removes the replicator from its cluster's table when it ends.
func (r *replicator) forget() {
	g := r.t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reps[r.t][r.remote] == r {
		delete(g.reps[r.t], r.remote)
		if len(g.reps[r.t]) == 0 {
			delete(g.reps, r.t)
		}
	}
}

// pending is an entry a replicator read, with what it found in it.
type pendingEntry struct {
	n       int64
	data    []byte
	aborted bool
}

// pump sends what the replicator's cursor holds until it is drained (false,
// true), the remote cannot be reached or the rate limit is spent (true,
// true: try again later), or the topic is gone (alive false).
func (r *replicator) pump() (again, alive bool) {
	for {
		batch, state := r.read()
		switch state {
		case readGone:
			return false, false
		case readThrottled:
			return true, true
		}
		if len(batch) == 0 {
			// Nothing to send: the producer is connected while the remote
			// serves the topic, as a replicator's producer stays connected.
			rs := r.t.b.cs.cluster(r.remote)
			r.setConnected(rs != nil && rs.ownerOf(r.t.name) != nil)
			return false, true
		}
		for _, pe := range batch {
			if !r.replicate(pe) {
				r.setConnected(false)
				return true, true
			}
		}
	}
}

type readState int

const (
	readOK readState = iota
	readThrottled
	readGone
)

// read takes the next entries of the replicator's cursor, at most what the
// replicatorDispatchRate allows.
func (r *replicator) read() ([]pendingEntry, readState) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[r.cursorName()]
	if t.released || t.deleted || s == nil {
		return nil, readGone
	}
	r.next = max(r.next, s.cur.MarkDelete()+1, t.log.Base)
	end := t.readEnd()
	limit := replicatorReadBatch
	now := t.b.cfg.clock.Now().UnixNano()
	if rate := t.policiesLocked().ReplicatorDispatchRate; rate != nil {
		r.limiter.set(*rate, now)
	}
	if r.limiter.active() {
		n, _ := r.limiter.allowance(limit, -1, now)
		if n <= 0 && r.next < end {
			return nil, readThrottled
		}
		limit = min(limit, n)
	}
	var out []pendingEntry
	var bytes int64
	for n := r.next; n < end && len(out) < limit; n++ {
		if s.cur.IsAcked(n) {
			continue
		}
		e := t.log.Get(n)
		if e == nil {
			continue
		}
		out = append(out, pendingEntry{n: n, data: e.Data, aborted: e.TxnMeta && t.buf != nil && t.buf.IsAborted(e.Txn)})
		bytes += int64(len(e.Data))
	}
	if r.limiter.active() {
		r.limiter.spend(int64(len(out)), bytes, now)
	}
	return out, readOK
}

// replicate sends one entry, or skips it, and acknowledges it on the
// replicator's cursor; false when the remote could not take it.
func (r *replicator) replicate(pe pendingEntry) bool {
	pl, err := protocol.ParsePayload(pe.data)
	if err != nil {
		r.ack(pe.n, 0, false) // Pulsar drops an entry that does not parse
		return true
	}
	md := pl.Metadata
	local := r.t.b.name
	if mt := md.GetMarkerType(); mt >= markerSnapshotRequest && mt <= markerSubscriptionUpdate &&
		md.GetReplicatedFrom() == r.remote {
		// A replicated subscription's marker from the remote: its
		// controller reads it here, as Pulsar's replicator hands it over.
		r.t.b.receivedMarker(r.t, pe.n, mt, pl.Body)
	}
	switch {
	case md.GetMarkerType() == markerTxnCommit || md.GetMarkerType() == markerTxnAbort, pe.aborted,
		md.ReplicatedFrom != nil,
		len(md.ReplicateTo) > 0 && !slices.Contains(md.ReplicateTo, r.remote):
		r.ack(pe.n, 0, false)
		return true
	}
	out := proto.Clone(md).(*pb.MessageMetadata)
	out.ReplicatedFrom = proto.String(local)
	out.TxnidMostBits, out.TxnidLeastBits = nil, nil
	if out.MarkerType == nil {
		// Pulsar 4.0's replicator names the source entry, by which the
		// remote broker deduplicates what a replicator sends again.
		out.Properties = append(out.Properties, &pb.KeyValue{Key: proto.String(replSourcePosition),
			Value: proto.String(fmt.Sprintf("%d:%d", r.t.ledger, pe.n))})
	}
	var schema *pb.Schema
	if len(out.SchemaVersion) > 0 {
		// The replicator's producer brings the message's schema to the
		// remote topic, where it may take another version.
		schema, _ = r.t.b.schemaAt(r.t.name, out.SchemaVersion)
	}
	size, err := r.t.b.cs.appendReplicated(r.remote, r.t.name, out, pl.Body, schema, r.producerName())
	if err != nil {
		return false
	}
	r.setConnected(true)
	r.ack(pe.n, int64(size), true)
	return true
}

// ack acknowledges entry n on the replicator's cursor; sent counts it as
// replicated, of size bytes.
func (r *replicator) ack(n, size int64, sent bool) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	r.next = max(r.next, n+1)
	s := t.subs[r.cursorName()]
	if s == nil || t.released {
		return
	}
	if sent {
		var msgs int64 = 1
		if e := t.log.Get(n); e != nil {
			msgs = int64(e.Messages)
		}
		r.out.add(time.Now(), msgs)
		r.bytesOut += size
	}
	s.cursorWrittenLocked()
	s.cur.Ack(n)
	s.persistLocked()
	t.trimLocked()
}

// setConnected records whether the replicator's producer reaches the
// remote.
func (r *replicator) setConnected(on bool) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if on != r.connected {
		if on {
			r.connectedSince = t.b.cfg.clock.Now()
		}
		if rs := t.b.cs.clusterAny(r.remote); rs != nil {
			rs.geo.inboundConnected(t.full, t.b.name, on, time.Now())
		}
	}
	r.connected = on
}

// inboundConnected records that the replicator of cluster from to topic
// here connected (on) or went away, as the remote end of its producer.
func (g *geoState) inboundConnected(topic, from string, on bool, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.inbound[topic]
	if m == nil {
		m = map[string]*inboundStats{}
		g.inbound[topic] = m
	}
	in := m[from]
	if in == nil {
		in = &inboundStats{}
		m[from] = in
	}
	in.connected = on
	if on {
		in.since = now
	}
}

// appendReplicated stores an entry a replicator of another cluster sends
// (its metadata md and body) on topic tn of the cluster named cluster: on
// the broker of that cluster owning the topic's bundle (given an owner as
// a lookup gives one), creating the topic as its first producer would, and
// registering schema there first (the entry then names the remote topic's
// version of it). It returns the size of the stored entry, and fails when
// the cluster has no broker serving the topic or refuses the schema.
func (cs *ConfigStore) appendReplicated(cluster string, tn TopicName, md *pb.MessageMetadata, body []byte,
	schema *pb.Schema, producer string) (int, error) {
	s := cs.cluster(cluster)
	if s == nil {
		return 0, errorf(ErrClusterUnreachable, "no cluster %s", cluster)
	}
	b := s.ownerOf(tn)
	if b == nil {
		return 0, errorf(ErrClusterUnreachable, "cluster %s has no broker serving %s", cluster, tn)
	}
	if schema != nil {
		v, fail := b.addSchema(tn, schema)
		if fail != nil {
			return 0, errorf(ErrIncompatibleSchema, "%s", fail.Msg)
		}
		md.SchemaVersion = v
	}
	data := protocol.AppendPayload(nil, md, body)
	pl, err := protocol.ParsePayload(data)
	if err != nil {
		return 0, err
	}
	for {
		t, err := b.getOrCreateTopic(tn, b.autoCreateAllowed(tn))
		if err != nil {
			return 0, err
		}
		t.mu.Lock()
		switch {
		case t.released:
			t.mu.Unlock()
			continue
		case t.deleted:
			t.mu.Unlock()
			return 0, topicNotFound(tn)
		case t.terminated:
			t.mu.Unlock()
			return 0, ErrTopicTerminated
		}
		e := newEntry(data, pl.Metadata)
		t.appendLocked(e, producer, pl.Metadata)
		t.noteInboundLocked(pl.Metadata.GetReplicatedFrom(), int64(e.Messages), len(data))
		t.mu.Unlock()
		return len(data), nil
	}
}

// ownerOf returns the serving broker of the cluster that owns tn's bundle,
// giving the bundle an owner as a lookup would; nil when none serves.
func (s *shared) ownerOf(tn TopicName) *Broker {
	s.mu.Lock()
	var live []*Broker
	for i := 0; i <= len(s.members); i++ {
		if m := s.members[i]; m != nil && !m.closed && !m.stopping && m.ln != nil {
			live = append(live, m)
		}
	}
	s.mu.Unlock()
	if len(live) == 0 {
		return nil
	}
	b := live[0]
	for range 3 {
		a := b.lookupOwner(tn, b != live[0])
		if a.failed {
			return nil
		}
		s.mu.Lock()
		next := s.members[a.node]
		ok := next != nil && !next.closed && !next.stopping && next.ln != nil
		s.mu.Unlock()
		if !ok {
			return nil
		}
		if a.connect {
			return next
		}
		b = next
	}
	return nil
}

// ReplicatorStats is one replicator's part of TopicStats (Pulsar's
// ReplicatorStats).
type ReplicatorStats struct {
	MsgRateOut       float64
	MsgThroughputOut float64
	MsgOutCount      int64
	BytesOutCount    int64
	// MsgRateIn, MsgThroughputIn, MsgInCount and BytesInCount count what
	// the remote cluster's replicator wrote to the topic here, since
	// InboundSince (zero: nothing yet).
	MsgRateIn       float64
	MsgThroughputIn float64
	MsgInCount      int64
	BytesInCount    int64
	InboundSince    time.Time
	// ReplicationBacklog counts the entries the replicator has yet to
	// send.
	ReplicationBacklog int64
	Connected          bool
	ConnectedSince     time.Time
	// ProducerName is the replicator's producer on the remote cluster.
	ProducerName string
	// ReplicationDelay is the age of the oldest entry yet to send, 0 for
	// none.
	ReplicationDelay time.Duration
}

// replicationStatsLocked returns the topic's replicators' stats by remote
// cluster: every cluster with a cursor on the topic, running or not.
func (t *Topic) replicationStatsLocked(now time.Time) map[string]ReplicatorStats {
	out := map[string]ReplicatorStats{}
	if t.b.cs == nil {
		return out
	}
	g := t.b.geo
	g.mu.Lock()
	reps := g.reps[t]
	type inboundNow struct {
		rate        float64
		msgs, bytes int64
		since       time.Time
	}
	inbound := map[string]inboundNow{}
	for from, in := range g.inbound[t.full] {
		n := inboundNow{rate: in.in.rate(now), msgs: in.in.total, bytes: in.bytes}
		if in.connected {
			n.since = in.since
		}
		inbound[from] = n
	}
	g.mu.Unlock()
	defer func() {
		for from, in := range inbound {
			rs, ok := out[from]
			if !ok {
				rs.ProducerName = replicatorPrefix + "." + t.b.name + "-->" + from
			}
			rs.MsgRateIn, rs.MsgInCount, rs.BytesInCount, rs.InboundSince = in.rate, in.msgs, in.bytes, in.since
			if in.msgs > 0 {
				rs.MsgThroughputIn = rs.MsgRateIn * float64(in.bytes) / float64(in.msgs)
			}
			out[from] = rs
		}
	}()
	for name, s := range t.subs {
		if !isReplicatorCursor(name) {
			continue
		}
		remote := strings.TrimPrefix(name, replicatorPrefix+".")
		rs := ReplicatorStats{ReplicationBacklog: s.cur.Backlog(t.log.End()),
			ProducerName: replicatorPrefix + "." + t.b.name + "-->" + remote}
		if first := s.cur.NextUnacked(s.cur.MarkDelete() + 1); first < t.log.End() {
			if e := t.log.Get(first); e != nil {
				rs.ReplicationDelay = max(t.b.cfg.clock.Now().Sub(time.UnixMilli(int64(e.PublishTime))), 0)
			}
		}
		if r := reps[remote]; r != nil {
			rs.Connected, rs.ConnectedSince = r.connected, r.connectedSince
			rs.MsgRateOut = r.out.rate(now)
			rs.MsgOutCount, rs.BytesOutCount = r.out.total, r.bytesOut
			if r.out.total > 0 {
				rs.MsgThroughputOut = rs.MsgRateOut * float64(r.bytesOut) / float64(r.out.total)
			}
		}
		out[remote] = rs
	}
	return out
}

// ReplicationStats returns a topic's replicators' stats by remote cluster
// (for a partitioned topic, name a partition).
func (b *Broker) ReplicationStats(topic string) (map[string]ReplicatorStats, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return nil, topicNotFound(tn)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.replicationStatsLocked(time.Now()), nil
}

// checkReplication runs every topic's replicationLocked, as Pulsar's
// brokers check their topics' replication when policies change; it also
// starts the replicated subscriptions' snapshots that are due (replsub.go).
//
// A topic whose replication clusters leave its own cluster out is deleted
// forcefully there, as Pulsar's checkReplication deletes it: a cluster
// does not serve a replicated topic it is not a replication cluster of.
func (b *Broker) checkReplication(now time.Time) {
	for _, t := range b.topicsNow(true) {
		t.mu.Lock()
		left := t.leftOutLocked()
		if !left {
			t.replicationLocked()
			t.startSnapshotLocked(now)
		}
		t.mu.Unlock()
		if left {
			_ = b.deleteTopic(t, true)
		}
	}
}

// leftOutLocked reports whether the topic's replication clusters are set
// and leave its own cluster out.
func (t *Topic) leftOutLocked() bool {
	if t.b.cs == nil || t.released || t.deleted || !t.name.Persistent {
		return false
	}
	p := t.policiesLocked()
	return p.ReplicationClusters != nil && len(*p.ReplicationClusters) > 0 &&
		!slices.Contains(*p.ReplicationClusters, t.b.name)
}
