package broker

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/compaction"
	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// CompactionSubscription is the name of the compactor's subscription
// (Pulsar's __compaction): a durable subscription whose mark-delete
// position is the compaction horizon once a compaction has run. It shows
// in stats as any subscription does.
const CompactionSubscription = "__compaction"

// CompactionStatus is a topic's compaction status, Pulsar's
// LongRunningProcessStatus.
type CompactionStatus struct {
	// Status is "NOT_RUN", "RUNNING", "SUCCESS" or "ERROR".
	Status string
	// LastError is the error of a failed compaction, else "".
	LastError string
}

// The compaction statuses.
const (
	CompactionNotRun  = "NOT_RUN"
	CompactionRunning = "RUNNING"
	CompactionSuccess = "SUCCESS"
	CompactionError   = "ERROR"
)

// CompactedHorizon is dispatch.Compacted's: the last entry of the view, -1
// without one.
func (l topicLog) CompactedHorizon() int64 {
	if !l.t.view.Has {
		return -1
	}
	return l.t.view.Horizon
}

// CompactedNext is dispatch.Compacted's: the view's first entry at or
// after n, or the horizon plus one.
func (l topicLog) CompactedNext(n int64) int64 {
	v := &l.t.view
	if i := sort.Search(len(v.Pos), func(i int) bool { return v.Pos[i] >= n }); i < len(v.Pos) {
		return v.Pos[i]
	}
	return v.Horizon + 1
}

// Compact compacts a topic now, as Pulsar's compactor does when the admin
// API triggers it (PUT .../compaction); on a partitioned topic, every
// partition. The compaction is done when Compact returns, so it is never
// found running. It fails with ErrTopicNotFound for a topic that does not
// exist and for non-persistent topics.
func (b *Broker) Compact(topic string) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	ts, err := b.compactionTopics(tn)
	if err != nil {
		return err
	}
	for _, t := range ts {
		t.mu.Lock()
		t.compactLocked()
		t.mu.Unlock()
	}
	return nil
}

// compactionTopics returns the topics a compaction of tn concerns: the
// partitions of a partitioned topic (created if need be, as Pulsar's
// trigger reaches each of them), else the topic itself.
func (b *Broker) compactionTopics(tn TopicName) ([]*Topic, error) {
	if !tn.Persistent {
		return nil, topicNotFound(tn)
	}
	if n := b.partitions(tn); n > 0 {
		ts := make([]*Topic, 0, n)
		for i := range n {
			t, err := b.getOrCreateTopic(tn.PartitionName(i), true)
			if err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
		return ts, nil
	}
	t, err := b.compactionTopic(tn)
	if err != nil {
		return nil, err
	}
	return []*Topic{t}, nil
}

// compactionTopic returns the topic tn names for the compaction endpoints:
// a partition of a partitioned topic is created if need be, as Pulsar
// loads it, and one beyond the partition count is refused as Pulsar
// refuses it; any other topic must exist.
func (b *Broker) compactionTopic(tn TopicName) (*Topic, error) {
	if tn.Partition >= 0 {
		if n := b.partitions(tn.Base()); n > 0 {
			if tn.Partition >= n {
				return nil, errorf(ErrTopicNotFound, "Topic partitions were not yet created")
			}
			return b.getOrCreateTopic(tn, true)
		}
	}
	if t := b.lookupTopic(tn.String()); t != nil {
		return t, nil
	}
	return nil, topicNotFound(tn)
}

// CompactionStatus returns the status of a topic's last compaction
// (GET .../compaction). A partitioned topic has none of its own: it fails
// with ErrTopicNotFound, as Pulsar answers, and so does a topic that does
// not exist; an unused partition is created (NOT_RUN).
func (b *Broker) CompactionStatus(topic string) (CompactionStatus, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return CompactionStatus{}, err
	}
	if !tn.Persistent || b.partitions(tn) > 0 {
		return CompactionStatus{}, topicNotFound(tn)
	}
	t, err := b.compactionTopic(tn)
	if err != nil {
		return CompactionStatus{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.view.Ran {
		return CompactionStatus{Status: CompactionNotRun}, nil
	}
	return CompactionStatus{Status: CompactionSuccess}, nil
}

// compactLocked runs one compaction of the topic, as Pulsar's compactor
// does through its __compaction subscription (created at the earliest
// position if missing). The compactor reads what a read-compacted reader
// from the earliest position reads: the view up to the old horizon, then
// the log up to the last message id such a reader is told of. Markers and
// aborted messages are not read. The new horizon is that last message,
// even when it lies before the old horizon (Pulsar acknowledges it, and
// moves its horizon there; the subscription's mark-delete position does
// not go back). With nothing to read, nothing changes.
func (t *Topic) compactLocked() {
	t.view.Ran = true
	s := t.subs[CompactionSubscription]
	if s == nil {
		s = t.newSubscriptionLocked(CompactionSubscription, true, t.log.Base-1)
	}
	if s.disp == nil {
		// Pulsar's compactor reads through an Exclusive consumer of the
		// subscription: from then on, stats give it that type.
		s.typ = dispatch.Exclusive
		s.disp = dispatch.New(s.dispatcherOptions(dispatch.Exclusive), s.cur)
	}
	last := t.lastDispatchableLocked()
	if t.view.Has && last <= t.view.Horizon {
		last = -1
		if n := len(t.view.Pos); n > 0 {
			last = t.view.Pos[n-1]
		}
	}
	if last < 0 {
		return
	}
	var in []compaction.Entry
	src := map[int64]*entry{}
	for i, p := range t.view.Pos {
		if p <= last {
			in = append(in, t.compactionEntry(p, t.view.Entries[i]))
			src[p] = t.view.Entries[i]
		}
	}
	from := t.log.Base
	if t.view.Has {
		from = max(from, t.view.Horizon+1)
	}
	for n := from; n <= last; n++ {
		e := t.log.Get(n)
		if e == nil || t.entrySkip(e) {
			continue
		}
		in = append(in, t.compactionEntry(n, e))
		src[n] = e
	}
	kept := compaction.Compact(in, compaction.Options{})
	v := compactedView{Ran: true, Has: true, Horizon: last}
	for _, k := range kept {
		e := src[k.Pos]
		if k.Keep != nil {
			e = t.rewriteBatch(e, k.Keep)
		}
		v.Pos = append(v.Pos, k.Pos)
		v.Entries = append(v.Entries, e)
	}
	t.view = v
	t.saveLedgerLocked()
	if last > s.cur.MarkDelete() {
		s.cursorWrittenLocked()
		s.cur.AckCumulative(last)
		s.persistLocked()
	}
	t.trimLocked()
}

// compactionEntry describes entry e at position n for the compactor: its
// messages' keys and sizes. An entry that does not parse counts as one
// message without a key.
func (t *Topic) compactionEntry(n int64, e *entry) compaction.Entry {
	ce := compaction.Entry{Pos: n, Marker: e.Marker}
	md, body, err := openEntry(e.Data, t.b.cfg.maxMessageSize)
	if err != nil {
		ce.Messages = []compaction.Message{{}}
		return ce
	}
	if md.NumMessagesInBatch == nil {
		m := compaction.Message{Key: md.GetPartitionKey(), HasKey: md.PartitionKey != nil, Size: len(body)}
		if md.UncompressedSize != nil {
			m.Size = int(md.GetUncompressedSize())
		}
		ce.Messages = []compaction.Message{m}
		return ce
	}
	singles, err := protocol.SplitBatch(body, int(md.GetNumMessagesInBatch()))
	if err != nil {
		ce.Messages = []compaction.Message{{}}
		return ce
	}
	ce.Batched = true
	for _, s := range singles {
		smd := s.Metadata
		ce.Messages = append(ce.Messages, compaction.Message{Key: smd.GetPartitionKey(),
			HasKey: smd.PartitionKey != nil, Size: int(smd.GetPayloadSize()), Out: smd.GetCompactedOut()})
	}
	return ce
}

// rewriteBatch returns batch entry e with the messages keep does not keep
// compacted out (an empty payload and compacted_out set, in their places),
// as Pulsar's compactor rewrites a batch. The body is stored uncompressed.
// An entry keeping all of its messages is returned as it is.
func (t *Topic) rewriteBatch(e *entry, keep []bool) *entry {
	md, body, err := openEntry(e.Data, t.b.cfg.maxMessageSize)
	if err != nil {
		return e
	}
	singles, err := protocol.SplitBatch(body, int(md.GetNumMessagesInBatch()))
	if err != nil || len(singles) != len(keep) {
		return e
	}
	changed := false
	for i, s := range singles {
		if !keep[i] && !s.Metadata.GetCompactedOut() {
			singles[i] = protocol.SingleMessage{Metadata: &pb.SingleMessageMetadata{
				PayloadSize: proto.Int32(0), CompactedOut: proto.Bool(true)}}
			changed = true
		}
	}
	if !changed {
		return e
	}
	nb := protocol.AppendBatch(nil, singles)
	nmd := proto.Clone(md).(*pb.MessageMetadata)
	nmd.Compression = nil
	nmd.UncompressedSize = proto.Uint32(uint32(len(nb)))
	out := *e
	// The broker entry metadata stays, as Pulsar's compactor keeps it.
	out.Data = protocol.AppendPayload(slices.Clone(e.Data[:e.MetaLen]), nmd, nb)
	return &out
}

// lastCompactedIDLocked is what GET_LAST_MESSAGE_ID answers a
// read-compacted consumer when the topic has nothing after its compaction
// horizon, as Pulsar does: the view's last entry, with the index of the
// last message a batch keeps (-1 for a batch of one), or (-1, -1) for an
// empty view.
func (t *Topic) lastCompactedIDLocked() *pb.MessageIdData {
	v := &t.view
	if len(v.Pos) == 0 {
		return t.lastIDLocked(minusOne, minusOne, -1)
	}
	n := v.Pos[len(v.Pos)-1]
	index := int32(-1)
	if e := v.Entries[len(v.Entries)-1]; e.Batched && e.Messages > 1 {
		index = lastKeptIndex(e, t.b.cfg.maxMessageSize)
	}
	return t.lastIDLocked(t.ledger, uint64(n), index)
}

// lastKeptIndex returns the index of the last message of batch entry e
// that is not compacted out, or -1.
func lastKeptIndex(e *entry, limit int) int32 {
	md, body, err := openEntry(e.Data, limit)
	if err != nil {
		return -1
	}
	singles, err := protocol.SplitBatch(body, int(md.GetNumMessagesInBatch()))
	if err != nil {
		return -1
	}
	for i := len(singles) - 1; i >= 0; i-- {
		if !singles[i].Metadata.GetCompactedOut() {
			return int32(i)
		}
	}
	return -1
}

// String describes a status for logs and failures.
func (s CompactionStatus) String() string {
	if s.LastError != "" {
		return fmt.Sprintf("%s (%s)", s.Status, s.LastError)
	}
	return s.Status
}

// WithCompactionCheckInterval sets
// brokerServiceCompactionMonitorIntervalInSeconds: how often, by the broker
// clock, the broker compacts the topics whose backlog is over their
// compaction threshold (Policies.CompactionThreshold). Default 60 s; 0
// turns the periodic check off.
func WithCompactionCheckInterval(d time.Duration) Option {
	return func(c *config) { c.compactionCheck = d }
}

// RunCompactionCheck runs the periodic compaction check now.
func (b *Broker) RunCompactionCheck() { b.checkCompaction(b.cfg.clock.Now()) }

// checkCompaction compacts every persistent topic whose compaction
// threshold is set and whose backlog estimate is over it, as Pulsar's
// checkCompaction does: the backlog of the __compaction subscription, or,
// before the first compaction, the topic's estimated backlog (its whole
// size when it has no durable subscription).
func (b *Broker) checkCompaction(time.Time) {
	topics := b.topicsNow(true)
	for _, t := range topics {
		t.mu.Lock()
		if th := *t.policiesLocked().CompactionThreshold; th > 0 && !t.deleted && t.compactionBacklogLocked() > th {
			t.compactLocked()
		}
		t.mu.Unlock()
	}
}

// compactionBacklogLocked is the backlog estimate checkCompaction compares
// with the threshold, in bytes.
func (t *Topic) compactionBacklogLocked() int64 {
	if s := t.subs[CompactionSubscription]; s != nil {
		return t.sizeAfterLocked(s.cur.MarkDelete())
	}
	for _, s := range t.subs {
		if s.durable {
			return t.backlogSizeLocked()
		}
	}
	return t.log.TotalBytes - t.log.FreedBytes
}

// ensureCompactionSubscriptionLocked creates the __compaction subscription
// at the earliest position when the topic has a compaction threshold, as
// Pulsar does when the policy applies, so that the compactor later sees
// everything published since.
func (t *Topic) ensureCompactionSubscriptionLocked(p *Policies) {
	if t.name.Persistent && *p.CompactionThreshold > 0 && t.subs[CompactionSubscription] == nil {
		t.newSubscriptionLocked(CompactionSubscription, true, t.log.Base-1)
	}
}

// startPeriodic registers fn to run every d of broker time, the first time
// d from now; several runs in a row with nothing else due between them
// collapse into the last. d ≤ 0 registers nothing.
func (b *Broker) startPeriodic(d time.Duration, fn func(now time.Time)) {
	if d <= 0 {
		return
	}
	step := d.Milliseconds()
	var run func(at int64)
	run = func(at int64) {
		fn(time.UnixMilli(at))
		next := at + step
		if now := b.cfg.clock.Now().UnixMilli(); now-next >= step {
			if other, ok := b.timers.earliest(); !ok || other > now {
				next += (now - next) / step * step
			}
		}
		b.timers.addTask(next, run)
	}
	b.timers.addTask(b.cfg.clock.Now().Add(d).UnixMilli(), run)
}
