package admin

import (
	"net/http"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The JSON shapes of Pulsar's topic stats, with the fields pulsarsim fills.

type publisherJSON struct {
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

type consumerJSON struct {
	ConsumerName                 string            `json:"consumerName"`
	AvailablePermits             int               `json:"availablePermits"`
	UnackedMessages              int               `json:"unackedMessages"`
	BlockedConsumerOnUnackedMsgs bool              `json:"blockedConsumerOnUnackedMsgs"`
	MsgRateOut                   float64           `json:"msgRateOut"`
	MsgThroughputOut             float64           `json:"msgThroughputOut"`
	MsgRateRedeliver             float64           `json:"msgRateRedeliver"`
	MsgOutCounter                int64             `json:"msgOutCounter"`
	BytesOutCounter              int64             `json:"bytesOutCounter"`
	Address                      string            `json:"address"`
	ConnectedSince               string            `json:"connectedSince"`
	ClientVersion                string            `json:"clientVersion"`
	Metadata                     map[string]string `json:"metadata"`
}

type subscriptionJSON struct {
	Type                             string         `json:"type"`
	MsgBacklog                       int64          `json:"msgBacklog"`
	MsgBacklogNoDelayed              int64          `json:"msgBacklogNoDelayed"`
	BacklogSize                      int64          `json:"backlogSize"`
	MsgDelayed                       int64          `json:"msgDelayed"`
	UnackedMessages                  int64          `json:"unackedMessages"`
	MsgRateOut                       float64        `json:"msgRateOut"`
	MsgThroughputOut                 float64        `json:"msgThroughputOut"`
	MsgRateRedeliver                 float64        `json:"msgRateRedeliver"`
	MsgOutCounter                    int64          `json:"msgOutCounter"`
	BytesOutCounter                  int64          `json:"bytesOutCounter"`
	BlockedSubscriptionOnUnackedMsgs bool           `json:"blockedSubscriptionOnUnackedMsgs"`
	ActiveConsumerName               string         `json:"activeConsumerName,omitempty"`
	IsDurable                        bool           `json:"isDurable"`
	Consumers                        []consumerJSON `json:"consumers"`
}

type topicStatsJSON struct {
	MsgRateIn        float64                     `json:"msgRateIn"`
	MsgRateOut       float64                     `json:"msgRateOut"`
	MsgThroughputIn  float64                     `json:"msgThroughputIn"`
	MsgThroughputOut float64                     `json:"msgThroughputOut"`
	MsgInCounter     int64                       `json:"msgInCounter"`
	BytesInCounter   int64                       `json:"bytesInCounter"`
	MsgOutCounter    int64                       `json:"msgOutCounter"`
	BytesOutCounter  int64                       `json:"bytesOutCounter"`
	AverageMsgSize   float64                     `json:"averageMsgSize"`
	StorageSize      int64                       `json:"storageSize"`
	BacklogSize      int64                       `json:"backlogSize"`
	Publishers       []publisherJSON             `json:"publishers"`
	Subscriptions    map[string]subscriptionJSON `json:"subscriptions"`
	Replication      map[string]any              `json:"replication"`
	Deduplication    string                      `json:"deduplicationStatus,omitempty"`

	// The limits of the backlog quotas in force, -1 for none.
	BacklogQuotaLimitSize int64 `json:"backlogQuotaLimitSize"`
	BacklogQuotaLimitTime int64 `json:"backlogQuotaLimitTime"`
	// The broker serving the topic (host:port of its web service); not in a
	// partitioned topic's sum.
	OwnerBroker string `json:"ownerBroker,omitempty"`
}

type partitionedStatsJSON struct {
	topicStatsJSON
	Metadata   map[string]int            `json:"metadata"`
	Partitions map[string]topicStatsJSON `json:"partitions"`
}

// since renders a connection time as Pulsar does.
func since(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// emptyTopicStats is the stats document of a topic with nothing in it.
func emptyTopicStats() topicStatsJSON {
	return topicStatsJSON{
		Publishers: []publisherJSON{}, Subscriptions: map[string]subscriptionJSON{},
		Replication: map[string]any{}, Deduplication: "Disabled",
	}
}

// topicStatsDoc renders a topic's stats as Pulsar's JSON.
func topicStatsDoc(st broker.TopicStats) topicStatsJSON {
	out := emptyTopicStats()
	out.MsgRateIn, out.MsgRateOut = st.MsgRateIn, st.MsgRateOut
	out.MsgThroughputIn, out.MsgThroughputOut = st.MsgThroughputIn, st.MsgThroughputOut
	out.MsgInCounter, out.BytesInCounter = st.MsgInCounter, st.BytesInCounter
	out.MsgOutCounter, out.BytesOutCounter = st.MsgOutCounter, st.BytesOutCounter
	out.AverageMsgSize, out.StorageSize = st.AverageMsgSize, st.StorageSize
	out.BacklogSize = st.BacklogSize
	if st.DeduplicationStatus != "" {
		out.Deduplication = st.DeduplicationStatus
	}
	for _, p := range st.Publishers {
		out.Publishers = append(out.Publishers, publisherJSON{
			AccessMode: p.AccessMode, ProducerID: p.ProducerID, ProducerName: p.ProducerName,
			MsgRateIn: p.MsgRateIn, MsgThroughputIn: p.MsgThroughputIn, AverageMsgSize: p.AverageMsgSize,
			Address: p.Address, ConnectedSince: since(p.ConnectedSince), ClientVersion: p.ClientVersion,
			Metadata: p.Metadata,
		})
	}
	for name, ss := range st.Subscriptions {
		out.Subscriptions[name] = subscriptionDoc(ss)
	}
	return out
}

// subscriptionDoc renders a subscription's stats as Pulsar's JSON.
func subscriptionDoc(ss broker.SubscriptionStats) subscriptionJSON {
	out := subscriptionJSON{
		Type: ss.Type, MsgBacklog: ss.MsgBacklog, MsgBacklogNoDelayed: ss.MsgBacklogNoDelayed, BacklogSize: ss.BacklogSize,
		MsgDelayed: ss.MsgDelayed, UnackedMessages: ss.UnackedMessages, MsgRateOut: ss.MsgRateOut,
		MsgThroughputOut: ss.MsgThroughputOut, MsgRateRedeliver: ss.MsgRateRedeliver,
		MsgOutCounter: ss.MsgOutCounter, BytesOutCounter: ss.BytesOutCounter,
		ActiveConsumerName: ss.ActiveConsumerName, IsDurable: ss.Durable, Consumers: []consumerJSON{},
		BlockedSubscriptionOnUnackedMsgs: ss.Blocked,
	}
	for _, c := range ss.Consumers {
		out.Consumers = append(out.Consumers, consumerJSON{
			ConsumerName: c.ConsumerName, AvailablePermits: c.AvailablePermits, UnackedMessages: c.UnackedMessages,
			BlockedConsumerOnUnackedMsgs: c.BlockedOnUnackedMsgs, MsgRateOut: c.MsgRateOut,
			MsgThroughputOut: c.MsgThroughputOut, MsgRateRedeliver: c.MsgRateRedeliver,
			MsgOutCounter: c.MsgOutCounter, BytesOutCounter: c.BytesOutCounter,
			Address: c.Address, ConnectedSince: since(c.ConnectedSince), ClientVersion: c.ClientVersion,
			Metadata: c.Metadata,
		})
	}
	return out
}

func (s *Server) topicStats(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var st broker.TopicStats
	if err == nil {
		st, err = s.b.TopicStats(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	doc := topicStatsDoc(st)
	doc.BacklogQuotaLimitSize, doc.BacklogQuotaLimitTime = s.backlogQuotaLimits(topic)
	doc.OwnerBroker = s.brokerID(r)
	reply(w, doc, nil)
}

// partitionedStats sums the stats of a partitioned topic's partitions, and
// lists each when perPartition is set (the default).
func (s *Server) partitionedStats(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	tn, _ := broker.ParseTopicName(topic)
	n, err := s.b.PartitionedMetadata(topic)
	if err != nil || n == 0 {
		reply(w, nil, errStatus(http.StatusNotFound, "Partitioned Topic "+topic+" not found"))
		return
	}
	out := partitionedStatsJSON{
		topicStatsJSON: emptyTopicStats(),
		Metadata:       map[string]int{"partitions": n},
		Partitions:     map[string]topicStatsJSON{},
	}
	perPartition := r.URL.Query().Get("perPartition") != "false"
	out.BacklogQuotaLimitSize, out.BacklogQuotaLimitTime = s.backlogQuotaLimits(topic)
	for i := 0; i < n; i++ {
		pn := tn.PartitionName(i).String()
		st, err := s.b.TopicStats(pn)
		if err != nil {
			continue
		}
		doc := topicStatsDoc(st)
		doc.BacklogQuotaLimitSize, doc.BacklogQuotaLimitTime = s.backlogQuotaLimits(pn)
		doc.OwnerBroker = s.brokerID(r)
		if perPartition {
			out.Partitions[pn] = doc
		}
		addTopicStats(&out.topicStatsJSON, doc)
	}
	out.Deduplication = "" // Pulsar sums no status
	if out.MsgInCounter > 0 {
		out.AverageMsgSize = float64(out.StorageSize) / float64(out.MsgInCounter)
	}
	reply(w, out, nil)
}

// addTopicStats adds one partition's stats to the sum.
func addTopicStats(sum *topicStatsJSON, st topicStatsJSON) {
	sum.MsgRateIn += st.MsgRateIn
	sum.MsgRateOut += st.MsgRateOut
	sum.MsgThroughputIn += st.MsgThroughputIn
	sum.MsgThroughputOut += st.MsgThroughputOut
	sum.MsgInCounter += st.MsgInCounter
	sum.MsgOutCounter += st.MsgOutCounter
	sum.BytesInCounter += st.BytesInCounter
	sum.BytesOutCounter += st.BytesOutCounter
	sum.StorageSize += st.StorageSize
	sum.BacklogSize += st.BacklogSize
	sum.Publishers = append(sum.Publishers, st.Publishers...)
	for name, ss := range st.Subscriptions {
		acc := sum.Subscriptions[name]
		acc.Type, acc.IsDurable = ss.Type, ss.IsDurable
		acc.MsgBacklog += ss.MsgBacklog
		acc.BacklogSize += ss.BacklogSize
		acc.MsgBacklogNoDelayed += ss.MsgBacklogNoDelayed
		acc.MsgDelayed += ss.MsgDelayed
		acc.UnackedMessages += ss.UnackedMessages
		acc.MsgRateOut += ss.MsgRateOut
		acc.MsgThroughputOut += ss.MsgThroughputOut
		acc.MsgRateRedeliver += ss.MsgRateRedeliver
		acc.MsgOutCounter += ss.MsgOutCounter
		acc.BytesOutCounter += ss.BytesOutCounter
		acc.Consumers = append(append([]consumerJSON{}, acc.Consumers...), ss.Consumers...)
		sum.Subscriptions[name] = acc
	}
}
