package broker

import (
	"net/http"
	"sort"
	"time"
)

// The JSON shapes of Pulsar's topic stats, with the fields pulsarsim fills.

type publisherStats struct {
	AccessMode      string            `json:"accessMode"`
	ProducerID      uint64            `json:"producerId"`
	ProducerName    string            `json:"producerName"`
	MsgRateIn       float64           `json:"msgRateIn"`
	MsgThroughputIn float64           `json:"msgThroughputIn"`
	AverageMsgSize  float64           `json:"averageMsgSize"`
	Address         string            `json:"address"`
	ConnectedSince  string            `json:"connectedSince"`
	ClientVersion   string            `json:"clientVersion"`
	Metadata        map[string]string `json:"metadata"`
}

type consumerStats struct {
	ConsumerName                 string            `json:"consumerName"`
	AvailablePermits             int               `json:"availablePermits"`
	UnackedMessages              int               `json:"unackedMessages"`
	BlockedConsumerOnUnackedMsgs bool              `json:"blockedConsumerOnUnackedMsgs"`
	MsgRateOut                   float64           `json:"msgRateOut"`
	MsgThroughputOut             float64           `json:"msgThroughputOut"`
	MsgOutCounter                int64             `json:"msgOutCounter"`
	BytesOutCounter              int64             `json:"bytesOutCounter"`
	Address                      string            `json:"address"`
	ConnectedSince               string            `json:"connectedSince"`
	ClientVersion                string            `json:"clientVersion"`
	Metadata                     map[string]string `json:"metadata"`
}

type subscriptionStats struct {
	Type                             string          `json:"type"`
	MsgBacklog                       int64           `json:"msgBacklog"`
	MsgBacklogNoDelayed              int64           `json:"msgBacklogNoDelayed"`
	MsgDelayed                       int64           `json:"msgDelayed"`
	UnackedMessages                  int64           `json:"unackedMessages"`
	MsgRateOut                       float64         `json:"msgRateOut"`
	MsgThroughputOut                 float64         `json:"msgThroughputOut"`
	MsgRateRedeliver                 float64         `json:"msgRateRedeliver"`
	MsgOutCounter                    int64           `json:"msgOutCounter"`
	BytesOutCounter                  int64           `json:"bytesOutCounter"`
	BlockedSubscriptionOnUnackedMsgs bool            `json:"blockedSubscriptionOnUnackedMsgs"`
	ActiveConsumerName               string          `json:"activeConsumerName,omitempty"`
	IsDurable                        bool            `json:"isDurable"`
	Consumers                        []consumerStats `json:"consumers"`
}

type topicStatsJSON struct {
	MsgRateIn        float64                      `json:"msgRateIn"`
	MsgRateOut       float64                      `json:"msgRateOut"`
	MsgThroughputIn  float64                      `json:"msgThroughputIn"`
	MsgThroughputOut float64                      `json:"msgThroughputOut"`
	MsgInCounter     int64                        `json:"msgInCounter"`
	BytesInCounter   int64                        `json:"bytesInCounter"`
	MsgOutCounter    int64                        `json:"msgOutCounter"`
	BytesOutCounter  int64                        `json:"bytesOutCounter"`
	AverageMsgSize   float64                      `json:"averageMsgSize"`
	StorageSize      int64                        `json:"storageSize"`
	BacklogSize      int64                        `json:"backlogSize"`
	Publishers       []publisherStats             `json:"publishers"`
	Subscriptions    map[string]subscriptionStats `json:"subscriptions"`
	Replication      map[string]any               `json:"replication"`
	Deduplication    string                       `json:"deduplicationStatus"`
}

type partitionedStatsJSON struct {
	topicStatsJSON
	Metadata   map[string]int            `json:"metadata"`
	Partitions map[string]topicStatsJSON `json:"partitions"`
}

// statsLocked builds a topic's stats.
func (t *Topic) statsLocked(now time.Time) topicStatsJSON {
	st := topicStatsJSON{
		Publishers:    []publisherStats{},
		Subscriptions: map[string]subscriptionStats{},
		Replication:   map[string]any{},
		Deduplication: "Disabled",
	}
	for _, e := range t.log.entries {
		st.StorageSize += int64(len(e.data))
		st.MsgInCounter += int64(e.messages)
	}
	// Freed entries left the storage but still count as published.
	st.BytesInCounter = st.StorageSize + t.log.freedBytes
	st.MsgInCounter += t.log.freedMessages
	if n := st.MsgInCounter; n > 0 {
		st.AverageMsgSize = float64(st.BytesInCounter) / float64(n)
	}
	prods := make([]*Producer, 0, len(t.producers))
	for p := range t.producers {
		prods = append(prods, p)
	}
	sort.Slice(prods, func(i, j int) bool { return prods[i].since.Before(prods[j].since) })
	for _, p := range prods {
		rate := p.in.rate(now)
		st.MsgRateIn += rate
		var avg float64
		if p.in.total > 0 {
			avg = float64(p.bytesIn) / float64(p.in.total)
		}
		st.MsgThroughputIn += rate * avg
		p.conn.mu.Lock()
		client := p.conn.client
		p.conn.mu.Unlock()
		st.Publishers = append(st.Publishers, publisherStats{
			AccessMode: "Shared", ProducerID: p.ID, ProducerName: p.Name,
			MsgRateIn: rate, MsgThroughputIn: rate * avg, AverageMsgSize: avg,
			Address: p.conn.nc.RemoteAddr().String(), ConnectedSince: p.since.UTC().Format(time.RFC3339Nano),
			ClientVersion: client, Metadata: nonNil(p.metadata),
		})
	}
	for name, s := range t.subs {
		ss := s.statsLocked(now)
		st.MsgRateOut += ss.MsgRateOut
		st.MsgThroughputOut += ss.MsgThroughputOut
		st.MsgOutCounter += ss.MsgOutCounter
		st.BytesOutCounter += ss.BytesOutCounter
		st.Subscriptions[name] = ss
	}
	return st
}

// statsLocked builds a subscription's stats.
func (s *Subscription) statsLocked(now time.Time) subscriptionStats {
	t := s.topic
	ss := subscriptionStats{
		Type:            s.typ.String(),
		MsgBacklog:      s.cur.Backlog(t.log.end()),
		IsDurable:       s.durable,
		MsgRateOut:      s.out.rate(now),
		MsgOutCounter:   s.out.total,
		BytesOutCounter: s.bytesOut,
		Consumers:       []consumerStats{},
	}
	if s.out.total > 0 {
		ss.MsgThroughputOut = ss.MsgRateOut * float64(s.bytesOut) / float64(s.out.total)
	}
	ss.MsgRateRedeliver = s.redelivered.rate(now)
	ss.MsgDelayed = int64(s.delayedCountLocked())
	ss.MsgBacklogNoDelayed = max(ss.MsgBacklog-ss.MsgDelayed, 0)
	if s.disp == nil {
		return ss
	}
	snap := s.disp.Snapshot()
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
		c.conn.mu.Lock()
		client := c.conn.client
		c.conn.mu.Unlock()
		cs := consumerStats{
			ConsumerName: c.Name, MsgRateOut: c.out.rate(now), MsgOutCounter: c.out.total,
			BytesOutCounter: c.bytesOut, Address: c.conn.nc.RemoteAddr().String(),
			ConnectedSince: c.since.UTC().Format(time.RFC3339Nano), ClientVersion: client,
			Metadata: nonNil(c.metadata),
		}
		if c.out.total > 0 {
			cs.MsgThroughputOut = cs.MsgRateOut * float64(c.bytesOut) / float64(c.out.total)
		}
		if i, ok := byID[c.dispID]; ok {
			sc := snap.Consumers[i]
			cs.AvailablePermits = max(sc.Permits, 0)
			cs.UnackedMessages = sc.Unacked
			cs.BlockedConsumerOnUnackedMsgs = sc.Blocked
			ss.UnackedMessages += int64(sc.Unacked)
		}
		if hasActive && active == c.dispID {
			ss.ActiveConsumerName = c.Name
		}
		ss.Consumers = append(ss.Consumers, cs)
	}
	return ss
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// TopicStats returns a topic's stats as Pulsar's REST API shows them, or
// false when the topic does not exist.
func (b *Broker) topicStats(tn TopicName) (topicStatsJSON, bool) {
	t := b.lookupTopic(tn.String())
	if t == nil {
		return topicStatsJSON{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statsLocked(time.Now()), true
}

func (a *adminAPI) topicStats(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if a.b.partitions(tn) > 0 {
		// Pulsar answers the stats of a partitioned topic's name as not found.
		reply(w, nil, errStatus(http.StatusNotFound, "Topic not found"))
		return
	}
	st, ok := a.b.topicStats(tn)
	if !ok {
		reply(w, nil, errStatus(http.StatusNotFound, "Topic not found"))
		return
	}
	reply(w, st, nil)
}

// partitionedStats sums the stats of a partitioned topic's partitions, and
// lists each when perPartition is set (the default).
func (a *adminAPI) partitionedStats(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	n := a.b.partitions(tn)
	if n == 0 {
		reply(w, nil, errStatus(http.StatusNotFound, "Partitioned Topic not found"))
		return
	}
	out := partitionedStatsJSON{
		topicStatsJSON: topicStatsJSON{
			Publishers: []publisherStats{}, Subscriptions: map[string]subscriptionStats{},
			Replication: map[string]any{}, Deduplication: "Disabled",
		},
		Metadata:   map[string]int{"partitions": n},
		Partitions: map[string]topicStatsJSON{},
	}
	perPartition := r.URL.Query().Get("perPartition") != "false"
	for i := 0; i < n; i++ {
		pn := tn.PartitionName(i)
		st, ok := a.b.topicStats(pn)
		if !ok {
			continue
		}
		if perPartition {
			out.Partitions[pn.String()] = st
		}
		out.MsgRateIn += st.MsgRateIn
		out.MsgRateOut += st.MsgRateOut
		out.MsgThroughputIn += st.MsgThroughputIn
		out.MsgThroughputOut += st.MsgThroughputOut
		out.MsgInCounter += st.MsgInCounter
		out.MsgOutCounter += st.MsgOutCounter
		out.BytesInCounter += st.BytesInCounter
		out.BytesOutCounter += st.BytesOutCounter
		out.StorageSize += st.StorageSize
		out.Publishers = append(out.Publishers, st.Publishers...)
		for name, ss := range st.Subscriptions {
			sum := out.Subscriptions[name]
			sum.Type, sum.IsDurable = ss.Type, ss.IsDurable
			sum.MsgBacklog += ss.MsgBacklog
			sum.MsgBacklogNoDelayed += ss.MsgBacklogNoDelayed
			sum.MsgDelayed += ss.MsgDelayed
			sum.UnackedMessages += ss.UnackedMessages
			sum.MsgRateOut += ss.MsgRateOut
			sum.MsgThroughputOut += ss.MsgThroughputOut
			sum.MsgRateRedeliver += ss.MsgRateRedeliver
			sum.MsgOutCounter += ss.MsgOutCounter
			sum.BytesOutCounter += ss.BytesOutCounter
			sum.Consumers = append(append([]consumerStats{}, sum.Consumers...), ss.Consumers...)
			out.Subscriptions[name] = sum
		}
	}
	if out.MsgInCounter > 0 {
		out.AverageMsgSize = float64(out.StorageSize) / float64(out.MsgInCounter)
	}
	reply(w, out, nil)
}
