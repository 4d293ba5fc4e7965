package broker

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Replicated subscriptions (PIP-33) as Pulsar 4.0's
// ReplicatedSubscriptionsController does them. A subscription whose
// SUBSCRIBE sets replicate_subscription_state is replicated. A topic with
// replicated subscriptions and replicators takes a snapshot every
// WithReplicatedSubscriptionsSnapshotFrequency when a message was written
// since its last one began and every replicator is connected:
//   - it writes a snapshot request marker (replicated everywhere);
//   - a cluster whose replicator reads the request replicated from the
//     asking cluster answers with a response marker naming its topic's last
//     position, replicated to the asking cluster only;
//   - once the asking cluster's replicators have read a response from each
//     remote, it writes a snapshot marker (kept local): its position of the
//     last response, and each remote's position;
//   - when a replicated subscription's mark-delete position reaches a
//     snapshot's local position (and the subscription read past the
//     snapshot marker), the cluster writes an update marker naming the
//     subscription and the remotes' positions, replicated everywhere;
//   - a cluster whose replicator reads an update replicated from another
//     moves the subscription's mark-delete position to its own position in
//     the update (creating the subscription at the end of the topic when it
//     has none, as a replicated one).
// Markers are entries of the topic that no consumer receives: the
// dispatcher acknowledges them as it passes them.

// The marker types (PulsarMarkers.proto's MarkerType).
const (
	markerSnapshotRequest    = 10
	markerSnapshotResponse   = 11
	markerSnapshot           = 12
	markerSubscriptionUpdate = 13
)

// snapshotTimeout is replicatedSubscriptionsSnapshotTimeoutSeconds: a
// snapshot not complete by then is dropped.
const snapshotTimeout = 30 * time.Second

// markerPosition is a position in a marker (MarkersMessageIdData).
type markerPosition struct{ Ledger, Entry uint64 }

// replController is a topic's replicated-subscription state, under the lock
// of the topic that has it loaded.
type replController struct {
	pending map[string]*pendingSnapshot
	// lastStart is the topic's end when the last completed snapshot
	// began, -1 before any.
	lastStart int64
	// snapshots are the completed snapshots, oldest first.
	snapshots []replSnapshot
	// used is, by subscription, the marker position of the last snapshot
	// the subscription passed.
	used map[string]int64
}

// pendingSnapshot is a snapshot waiting for the remotes' responses.
type pendingSnapshot struct {
	remotes   []string
	responses map[string]markerPosition
	last      int64 // the position of the last response read here
	start     int64
	started   time.Time
}

// replSnapshot is a completed snapshot: the position of its marker, its
// local position, and each remote's position.
type replSnapshot struct {
	marker, local int64
	clusters      map[string]markerPosition
}

// controllerLocked returns the topic's controller, made on first use.
func (t *Topic) controllerLocked() *replController {
	g := t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.ctrl[t.full]
	if c == nil {
		c = &replController{pending: map[string]*pendingSnapshot{}, lastStart: -1, used: map[string]int64{}}
		g.ctrl[t.full] = c
	}
	return c
}

// replicatedSubsLocked reports whether the topic has a replicated
// subscription.
func (t *Topic) replicatedSubsLocked() bool {
	g := t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.subs[t.full]) > 0
}

// setReplicatedLocked marks subscription name of the topic replicated.
func (t *Topic) setReplicatedLocked(name string) {
	g := t.b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.subs[t.full] == nil {
		g.subs[t.full] = map[string]bool{}
	}
	g.subs[t.full][name] = true
}

// subscribedReplicatedLocked applies a SUBSCRIBE's
// replicate_subscription_state to its durable subscription: set, it makes
// the subscription replicated (it never unsets it, as Pulsar's does not).
func (t *Topic) subscribedReplicatedLocked(s *Subscription, sub *pb.CommandSubscribe) {
	if t.b.cs != nil && s.durable && sub.GetReplicateSubscriptionState() {
		t.setReplicatedLocked(s.name)
	}
}

// IsReplicatedSubscription reports whether a topic's subscription is
// replicated (for a partitioned topic, name a partition).
func (b *Broker) IsReplicatedSubscription(topic, sub string) bool {
	tn, err := ParseTopicName(topic)
	if err != nil || b.geo == nil {
		return false
	}
	g := b.geo
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.subs[tn.String()][sub]
}

// startSnapshotLocked starts a snapshot when one is due (see above).
func (t *Topic) startSnapshotLocked(now time.Time) {
	if t.b.cs == nil || t.released || t.deleted || !t.replicatedSubsLocked() {
		return
	}
	remotes := t.remoteClustersLocked()
	if len(remotes) == 0 {
		return
	}
	c := t.controllerLocked()
	for id, p := range c.pending {
		if now.Sub(p.started) > snapshotTimeout {
			delete(c.pending, id)
		}
	}
	if !t.dataSinceLocked(c.lastStart) {
		return
	}
	g := t.b.geo
	g.mu.Lock()
	connected := len(g.reps[t]) == len(remotes)
	for _, r := range g.reps[t] {
		connected = connected && r.connected
	}
	g.mu.Unlock()
	if !connected {
		return
	}
	id := newSnapshotID()
	c.pending[id] = &pendingSnapshot{remotes: remotes, responses: map[string]markerPosition{}, last: -1,
		start: t.log.End(), started: now}
	var body []byte
	body = protowire.AppendTag(body, 1, protowire.BytesType)
	body = protowire.AppendString(body, id)
	body = protowire.AppendTag(body, 2, protowire.BytesType)
	body = protowire.AppendString(body, t.b.name)
	t.writeMarkerLocked(markerSnapshotRequest, nil, body)
}

// dataSinceLocked reports whether an entry other than a marker was written
// at or after from (-1: ever).
func (t *Topic) dataSinceLocked(from int64) bool {
	for n := t.log.End() - 1; n >= max(from, t.log.Base); n-- {
		if e := t.log.Get(n); e != nil && !e.Marker {
			return true
		}
	}
	return max(from, 0) < t.log.Base // freed entries, unknown
}

// newSnapshotID returns a random snapshot id.
func newSnapshotID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeMarkerLocked stores a marker of type typ with body on the topic,
// replicated only to replicateTo when it is not nil; it returns its
// position.
func (t *Topic) writeMarkerLocked(typ int32, replicateTo []string, body []byte) int64 {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("pulsar.marker"), SequenceId: proto.Uint64(0),
		PublishTime: proto.Uint64(uint64(t.b.cfg.clock.Now().UnixMilli())), MarkerType: proto.Int32(typ),
		ReplicateTo: replicateTo,
	}
	data := protocol.AppendPayload(nil, md, body)
	return t.appendLocked(newEntry(data, md), "pulsar.marker", md)
}

// receivedMarker handles a replicated subscription's marker a replicator
// of t read at position n, replicated from its remote cluster.
func (b *Broker) receivedMarker(t *Topic, n int64, typ int32, body []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released || t.deleted {
		return
	}
	switch typ {
	case markerSnapshotRequest:
		id, source := parseSnapshotRequest(body)
		if id == "" || source == "" {
			return
		}
		// The response names the last position written here; the
		// response itself comes after it.
		var out []byte
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendString(out, id)
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendBytes(out, clusterMessageID(b.name, markerPosition{t.ledger, uint64(max(t.log.End()-1, 0))}))
		t.writeMarkerLocked(markerSnapshotResponse, []string{source}, out)
	case markerSnapshotResponse:
		id, cluster, pos := parseSnapshotResponse(body)
		c := t.controllerLocked()
		p := c.pending[id]
		if p == nil || !slices.Contains(p.remotes, cluster) {
			return // late, or not asked
		}
		p.responses[cluster] = pos
		p.last = max(p.last, n)
		if len(p.responses) < len(p.remotes) {
			return
		}
		delete(c.pending, id)
		var out []byte
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendString(out, id)
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendBytes(out, messageIDData(markerPosition{t.ledger, uint64(p.last)}))
		for _, cl := range p.remotes {
			out = protowire.AppendTag(out, 3, protowire.BytesType)
			out = protowire.AppendBytes(out, clusterMessageID(cl, p.responses[cl]))
		}
		m := t.writeMarkerLocked(markerSnapshot, []string{b.name}, out)
		c.snapshots = append(c.snapshots, replSnapshot{marker: m, local: p.last, clusters: p.responses})
		if len(c.snapshots) > snapshotsKept {
			c.snapshots = slices.Delete(c.snapshots, 0, len(c.snapshots)-snapshotsKept)
		}
		c.lastStart = p.start
		// Subscriptions that already acknowledged past it move now.
		for name, s := range t.subs {
			if !isReplicatorCursor(name) {
				t.replicatedSubMovedLocked(s)
			}
		}
	case markerSubscriptionUpdate:
		sub, positions := parseSubscriptionUpdate(body)
		pos, ok := positions[b.name]
		if !ok || sub == "" {
			return
		}
		s := t.subs[sub]
		if s == nil {
			s = t.newSubscriptionLocked(sub, true, t.log.End()-1)
			t.setReplicatedLocked(sub)
			return
		}
		if pos.Ledger != t.ledger {
			return
		}
		t.markDeleteThroughLocked(s, min(int64(pos.Entry), t.log.End()-1), "replicated-subscription")
	}
}

// snapshotsKept is replicatedSubscriptionsSnapshotMaxCachedPerSubscription.
const snapshotsKept = 10

// replicatedSubMovedLocked writes a subscription update when a replicated
// subscription's mark-delete position passed a snapshot it had not passed
// yet. The marker is written by a task of the broker's timers, after
// whatever moved the position is done.
func (t *Topic) replicatedSubMovedLocked(s *Subscription) {
	if t.b.cs == nil || !s.durable || isReplicatorCursor(s.name) {
		return
	}
	g := t.b.geo
	g.mu.Lock()
	c, replicated := g.ctrl[t.full], g.subs[t.full][s.name]
	g.mu.Unlock()
	if c == nil || !replicated {
		return
	}
	md, read := s.cur.MarkDelete(), s.cur.ReadPosition()
	used, seen := c.used[s.name]
	var pick *replSnapshot
	for i := range c.snapshots {
		sn := &c.snapshots[i]
		if (!seen || sn.marker > used) && sn.local <= md && (sn.marker < read || sn.marker <= md) {
			pick = sn
		}
	}
	if pick == nil {
		return
	}
	c.used[s.name] = pick.marker
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendString(out, s.name)
	names := make([]string, 0, len(pick.clusters))
	for cl := range pick.clusters {
		names = append(names, cl)
	}
	slices.Sort(names)
	for _, cl := range names {
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendBytes(out, clusterMessageID(cl, pick.clusters[cl]))
	}
	t.b.timers.addTask(t.b.cfg.clock.Now().UnixMilli(), func(int64) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.released && !t.deleted {
			t.writeMarkerLocked(markerSubscriptionUpdate, nil, out)
		}
	})
}

// messageIDData encodes a MarkersMessageIdData.
func messageIDData(p markerPosition) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, p.Ledger)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, p.Entry)
	return b
}

// clusterMessageID encodes a ClusterMessageId.
func clusterMessageID(cluster string, p markerPosition) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, cluster)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, messageIDData(p))
	return b
}

// fields calls fn for each field of a protobuf message, until it returns
// false or the bytes do not parse.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, u uint64)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			u, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return
			}
			fn(num, typ, nil, u)
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return
			}
			fn(num, typ, v, 0)
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return
			}
			b = b[m:]
		}
	}
}

func parseMessageIDData(b []byte) markerPosition {
	var p markerPosition
	fields(b, func(num protowire.Number, _ protowire.Type, _ []byte, u uint64) {
		switch num {
		case 1:
			p.Ledger = u
		case 2:
			p.Entry = u
		}
	})
	return p
}

func parseClusterMessageID(b []byte) (string, markerPosition) {
	var cluster string
	var p markerPosition
	fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
		switch num {
		case 1:
			cluster = string(v)
		case 2:
			p = parseMessageIDData(v)
		}
	})
	return cluster, p
}

func parseSnapshotRequest(b []byte) (id, source string) {
	fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
		switch num {
		case 1:
			id = string(v)
		case 2:
			source = string(v)
		}
	})
	return id, source
}

func parseSnapshotResponse(b []byte) (id, cluster string, p markerPosition) {
	fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
		switch num {
		case 1:
			id = string(v)
		case 2:
			cluster, p = parseClusterMessageID(v)
		}
	})
	return id, cluster, p
}

func parseSubscriptionUpdate(b []byte) (sub string, positions map[string]markerPosition) {
	positions = map[string]markerPosition{}
	fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
		switch num {
		case 1:
			sub = string(v)
		case 2:
			cl, p := parseClusterMessageID(v)
			positions[cl] = p
		}
	})
	return sub, positions
}
