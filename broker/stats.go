package broker

import (
	"maps"
	"sort"
	"time"

	"github.com/pulsarsim/pulsarsim/dispatch"
)

// TopicStats is a topic's (or one partition's) statistics, as Pulsar's topic
// stats report them, with the fields pulsarsim keeps. Rates are per second,
// averaged over windows of at least one second by the wall clock.
type TopicStats struct {
	MsgRateIn        float64
	MsgThroughputIn  float64 // bytes per second
	MsgRateOut       float64
	MsgThroughputOut float64
	// MsgInCounter and BytesInCounter count everything published, freed
	// entries included.
	MsgInCounter    int64
	BytesInCounter  int64
	MsgOutCounter   int64
	BytesOutCounter int64
	AverageMsgSize  float64
	// StorageSize is the bytes of the entries still stored.
	StorageSize int64
	// BacklogSize is the estimated size of the backlog of the slowest
	// durable subscription, as the backlog quota measures it.
	BacklogSize   int64
	Publishers    []PublisherStats // oldest first
	Subscriptions map[string]SubscriptionStats
	// DeduplicationStatus is "Enabled" while the topic deduplicates its
	// messages, else "Disabled" (Pulsar's deduplicationStatus).
	DeduplicationStatus string
	// WaitingPublishers counts the producers waiting for exclusive access.
	WaitingPublishers int
	// OldestBacklogAge is the age of the oldest unacknowledged entry of
	// the slowest subscription, as the last backlog quota check by age
	// estimated it, counted to now; -1 when no check measured it (no
	// message_age quota in force, or nothing to measure).
	OldestBacklogAge time.Duration
	// Replication holds the replicators' stats by remote cluster
	// (replicator.go), empty when the topic replicates nowhere.
	Replication map[string]ReplicatorStats
}

// PublisherStats is one producer's part of TopicStats.
type PublisherStats struct {
	ProducerID      uint64
	ProducerName    string
	AccessMode      string // "Shared", as pulsarsim reports every producer
	MsgRateIn       float64
	MsgThroughputIn float64
	AverageMsgSize  float64
	Address         string
	ConnectedSince  time.Time
	ClientVersion   string
	Metadata        map[string]string
}

// SubscriptionStats is one subscription's part of TopicStats.
type SubscriptionStats struct {
	Type string // "Exclusive", "Shared", "Failover" or "Key_Shared"; "None" before its first consumer
	// Replicated is set for a replicated subscription (replsub.go).
	Replicated bool
	// MsgBacklog counts the unacknowledged entries; MsgDelayed those held
	// for their deliver-at time.
	MsgBacklog          int64
	MsgBacklogNoDelayed int64
	// BacklogSize is the estimated bytes after the mark-delete position.
	BacklogSize      int64
	MsgDelayed       int64
	UnackedMessages  int64
	MsgRateOut       float64
	MsgThroughputOut float64
	MsgRateRedeliver float64
	MsgOutCounter    int64
	BytesOutCounter  int64
	// Blocked is set while the subscription reads no new entries for its
	// unacknowledged messages (blockedSubscriptionOnUnackedMsgs).
	Blocked bool
	// ActiveConsumerName names the consumer of an Exclusive or Failover
	// subscription that receives the messages.
	ActiveConsumerName string
	Durable            bool
	Consumers          []ConsumerStats // in subscription order
	// MsgInReplay counts the entries waiting to be delivered again.
	MsgInReplay int64
	// MessageAckRate is the messages acknowledged per second.
	MessageAckRate float64
	// MsgRateExpired and TotalMsgExpired count the entries expired (by
	// message TTL, an expire-messages request or a backlog quota by age),
	// per second and in all; LastExpire is when the last expiry was.
	MsgRateExpired  float64
	TotalMsgExpired int64
	LastExpire      time.Time
	// When the subscription last got a FLOW, delivered a message, got an
	// acknowledgement, and moved its mark-delete position (broker clock;
	// zero for never).
	LastConsumedFlow, LastConsumed, LastAcked, LastMarkDeleteAdvanced time.Time
	// AckedRanges counts the ranges of entries acknowledged after the
	// mark-delete position, and AckedRangesSize the bytes Pulsar's cursor
	// would store them in.
	AckedRanges     int
	AckedRangesSize int64
	// AllowOutOfOrderDelivery is the Key_Shared consumers' setting.
	AllowOutOfOrderDelivery bool
	// EarliestPublishTime is the publish time (ms) of the oldest
	// unacknowledged entry, 0 without a backlog.
	EarliestPublishTime int64
	// Properties are the subscription's properties
	// (subscriptionproperties.go), nil for none.
	Properties map[string]string
}

// ConsumerStats is one consumer's part of SubscriptionStats.
type ConsumerStats struct {
	ConsumerName     string
	AvailablePermits int
	UnackedMessages  int
	// BlockedOnUnackedMsgs is set while the consumer is at its unacked
	// limit.
	BlockedOnUnackedMsgs bool
	MsgRateOut           float64
	MsgThroughputOut     float64
	// MsgRateRedeliver counts the messages sent to the consumer again
	// (with a redelivery count above 0).
	MsgRateRedeliver float64
	MsgOutCounter    int64
	BytesOutCounter  int64
	Address          string
	ConnectedSince   time.Time
	ClientVersion    string
	Metadata         map[string]string
	// MessageAckRate is the messages it acknowledged per second.
	MessageAckRate float64
	// When it last sent a FLOW, got a message and acknowledged one
	// (broker clock; zero for never).
	LastConsumedFlow, LastConsumed, LastAcked time.Time
}

// TopicStats returns the statistics of a topic or of one partition. The name
// of a partitioned topic itself fails with ErrTopicNotFound, as Pulsar
// answers it; sum its partitions' stats instead.
func (b *Broker) TopicStats(topic string) (TopicStats, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return TopicStats{}, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil || b.partitions(tn) > 0 {
		return TopicStats{}, topicNotFound(tn)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statsLocked(time.Now()), nil
}

// statsLocked builds a topic's stats.
func (t *Topic) statsLocked(now time.Time) TopicStats {
	st := TopicStats{Publishers: []PublisherStats{}, Subscriptions: map[string]SubscriptionStats{},
		DeduplicationStatus: t.deduplicationStatusLocked()}
	for _, e := range t.log.Entries {
		st.StorageSize += int64(len(e.Data))
		st.MsgInCounter += int64(e.Messages)
	}
	st.BacklogSize = t.backlogSizeLocked()
	st.WaitingPublishers = len(t.waiting)
	st.OldestBacklogAge = -1
	if t.oldestMeasured {
		st.OldestBacklogAge = max(t.b.cfg.clock.Now().Sub(time.UnixMilli(t.oldestAt)), 0)
	}
	// Freed entries left the storage but still count as published.
	st.BytesInCounter = st.StorageSize + t.log.FreedBytes
	st.MsgInCounter += t.log.FreedMessages
	if n := st.MsgInCounter; n > 0 {
		st.AverageMsgSize = float64(st.BytesInCounter) / float64(n)
	}
	prods := make([]*Producer, 0, len(t.producers))
	for p := range t.producers {
		prods = append(prods, p)
	}
	sort.Slice(prods, func(i, j int) bool { return prods[i].since.Before(prods[j].since) })
	for _, p := range prods {
		ps := p.statsLocked(now)
		st.MsgRateIn += ps.MsgRateIn
		st.MsgThroughputIn += ps.MsgThroughputIn
		st.Publishers = append(st.Publishers, ps)
	}
	st.Replication = t.replicationStatsLocked(now)
	for _, rs := range st.Replication {
		st.MsgRateOut += rs.MsgRateOut
		st.MsgThroughputOut += rs.MsgThroughputOut
	}
	for name, s := range t.subs {
		if isReplicatorCursor(name) {
			continue
		}
		ss := s.statsLocked(now)
		ss.Replicated = t.b.IsReplicatedSubscription(t.full, name)
		st.MsgRateOut += ss.MsgRateOut
		st.MsgThroughputOut += ss.MsgThroughputOut
		st.MsgOutCounter += ss.MsgOutCounter
		st.BytesOutCounter += ss.BytesOutCounter
		st.Subscriptions[name] = ss
	}
	return st
}

// statsLocked builds the part of a consumer's stats that the consumer keeps
// (the dispatcher keeps permits and unacked counts), under its topic's lock.
func (c *Consumer) statsLocked(now time.Time) ConsumerStats {
	cs := ConsumerStats{
		ConsumerName: c.Name, MsgRateOut: c.out.rate(now), MsgOutCounter: c.out.total,
		MsgRateRedeliver: c.redelivered.rate(now),
		BytesOutCounter:  c.bytesOut, Address: statsAddress(c.conn),
		ConnectedSince: c.since, ClientVersion: c.conn.clientVersion(), Metadata: nonNil(c.metadata),
	}
	if c.out.total > 0 {
		cs.MsgThroughputOut = cs.MsgRateOut * float64(c.bytesOut) / float64(c.out.total)
	}
	cs.MessageAckRate = c.acks.rate(now)
	cs.LastConsumedFlow, cs.LastConsumed, cs.LastAcked = c.lastFlow, c.lastConsumed, c.lastAcked
	return cs
}

// statsAddress is a client's address as Pulsar's stats write it: Java's
// InetSocketAddress of an address without a host name, "/ip:port".
func statsAddress(c *conn) string { return "/" + c.nc.RemoteAddr().String() }

// statsLocked builds a producer's stats, under its topic's lock.
func (p *Producer) statsLocked(now time.Time) PublisherStats {
	rate := p.in.rate(now)
	var avg float64
	if p.in.total > 0 {
		avg = float64(p.bytesIn) / float64(p.in.total)
	}
	return PublisherStats{
		AccessMode: "Shared", ProducerID: p.ID, ProducerName: p.Name,
		MsgRateIn: rate, MsgThroughputIn: rate * avg, AverageMsgSize: avg,
		Address: statsAddress(p.conn), ConnectedSince: p.since,
		ClientVersion: p.conn.clientVersion(), Metadata: nonNil(p.metadata),
	}
}

// statsLocked builds a subscription's stats.
func (s *Subscription) statsLocked(now time.Time) SubscriptionStats {
	t := s.topic
	typ := "None" // as Pulsar names a subscription that has no dispatcher yet
	if s.disp != nil {
		typ = s.typ.String()
	}
	ss := SubscriptionStats{
		Type:            typ,
		MsgBacklog:      s.cur.Backlog(t.log.End()),
		BacklogSize:     t.sizeAfterLocked(s.cur.MarkDelete()),
		Durable:         s.durable,
		Properties:      maps.Clone(s.properties),
		MsgRateOut:      s.out.rate(now),
		MsgOutCounter:   s.out.total,
		BytesOutCounter: s.bytesOut,
		Consumers:       []ConsumerStats{},
	}
	if s.out.total > 0 {
		ss.MsgThroughputOut = ss.MsgRateOut * float64(s.bytesOut) / float64(s.out.total)
	}
	ss.MsgRateRedeliver = s.redelivered.rate(now)
	s.activityStatsLocked(&ss, now)
	ss.MsgDelayed = int64(s.delayedCountLocked())
	ss.MsgBacklogNoDelayed = max(ss.MsgBacklog-ss.MsgDelayed, 0)
	if s.disp == nil {
		return ss
	}
	snap := s.disp.Snapshot()
	ss.Blocked = snap.SubscriptionBlocked
	ss.MsgInReplay = int64(len(snap.Replay))
	ss.AllowOutOfOrderDelivery = s.typ == dispatch.KeyShared && snap.KeySharedAllowOutOfOrder
	byID := map[uint64]int{}
	for i, c := range snap.Consumers {
		byID[c.ID] = i
	}
	cons := make([]*Consumer, 0, len(s.consumers))
	for _, c := range s.consumers {
		cons = append(cons, c)
	}
	sort.Slice(cons, func(i, j int) bool { return cons[i].dispID < cons[j].dispID })
	active, hasActive := s.disp.Active()
	for _, c := range cons {
		cs := c.statsLocked(now)
		if i, ok := byID[c.dispID]; ok {
			sc := snap.Consumers[i]
			cs.AvailablePermits = max(sc.Permits, 0)
			cs.UnackedMessages = sc.Unacked
			cs.BlockedOnUnackedMsgs = sc.Blocked
			ss.UnackedMessages += int64(sc.Unacked)
		}
		if hasActive && active == c.dispID {
			ss.ActiveConsumerName = c.Name
		}
		ss.Consumers = append(ss.Consumers, cs)
	}
	return ss
}

// activityStatsLocked adds to ss what the subscription counted: expiries,
// acknowledgements, the times of its last events, the ranges acknowledged
// after its mark-delete position and its oldest unacknowledged entry.
func (s *Subscription) activityStatsLocked(ss *SubscriptionStats, now time.Time) {
	t := s.topic
	ss.MessageAckRate = s.acks.rate(now)
	ss.MsgRateExpired, ss.TotalMsgExpired, ss.LastExpire = s.expired.rate(now), s.expired.total, s.lastExpired
	ss.LastConsumedFlow, ss.LastConsumed, ss.LastAcked = s.lastFlow, s.lastConsumed, s.lastAcked
	ss.LastMarkDeleteAdvanced = s.lastMDMoved
	ranges := entryRanges(s.cur.Acked())
	ss.AckedRanges, ss.AckedRangesSize = len(ranges), rangesSerializedSize(int64(t.ledger), ranges)
	if first := s.cur.NextUnacked(s.cur.MarkDelete() + 1); first < t.log.End() {
		if e := t.log.Get(first); e != nil {
			ss.EarliestPublishTime = int64(e.PublishTime)
		}
	}
}

// nonNil returns a copy of m, empty rather than nil.
func nonNil(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// clientVersion returns the client version the connection announced.
func (c *conn) clientVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}
