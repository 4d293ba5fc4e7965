package admin

import (
	"maps"
	"net/http"
	"strings"
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
	// SupportsPartialProducer is false: pulsarsim has no partial
	// producers.
	SupportsPartialProducer bool `json:"supportsPartialProducer"`
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
	MessageAckRate               float64           `json:"messageAckRate"`
	LastAckedTimestamp           int64             `json:"lastAckedTimestamp"`
	LastConsumedTimestamp        int64             `json:"lastConsumedTimestamp"`
	LastConsumedFlowTimestamp    int64             `json:"lastConsumedFlowTimestamp"`
	LastAckedTime                string            `json:"lastAckedTime"`
	LastConsumedTime             string            `json:"lastConsumedTime"`
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
	// SubscriptionProperties are the subscription's properties, {} for
	// none.
	SubscriptionProperties map[string]string `json:"subscriptionProperties"`
	subscriptionActivityJSON
}

// subscriptionActivityJSON is what a subscription counted and when it last
// did what; the fields of features pulsarsim does not have (replication,
// entry filters) say they did nothing.
type subscriptionActivityJSON struct {
	MessageAckRate                                   float64        `json:"messageAckRate"`
	EarliestMsgPublishTimeInBacklog                  int64          `json:"earliestMsgPublishTimeInBacklog"`
	MsgInReplay                                      int64          `json:"msgInReplay"`
	MsgRateExpired                                   float64        `json:"msgRateExpired"`
	TotalMsgExpired                                  int64          `json:"totalMsgExpired"`
	LastExpireTimestamp                              int64          `json:"lastExpireTimestamp"`
	LastConsumedFlowTimestamp                        int64          `json:"lastConsumedFlowTimestamp"`
	LastConsumedTimestamp                            int64          `json:"lastConsumedTimestamp"`
	LastAckedTimestamp                               int64          `json:"lastAckedTimestamp"`
	LastMarkDeleteAdvancedTimestamp                  int64          `json:"lastMarkDeleteAdvancedTimestamp"`
	IsReplicated                                     bool           `json:"isReplicated"`
	Replicated                                       bool           `json:"replicated"`
	Durable                                          bool           `json:"durable"`
	AllowOutOfOrderDelivery                          bool           `json:"allowOutOfOrderDelivery"`
	ConsumersAfterMarkDeletePosition                 map[string]any `json:"consumersAfterMarkDeletePosition"`
	NonContiguousDeletedMessagesRanges               int            `json:"nonContiguousDeletedMessagesRanges"`
	NonContiguousDeletedMessagesRangesSerializedSize int64          `json:"nonContiguousDeletedMessagesRangesSerializedSize"`
	FilterProcessedMsgCount                          int64          `json:"filterProcessedMsgCount"`
	FilterAcceptedMsgCount                           int64          `json:"filterAcceptedMsgCount"`
	FilterRejectedMsgCount                           int64          `json:"filterRejectedMsgCount"`
	FilterRescheduledMsgCount                        int64          `json:"filterRescheduledMsgCount"`
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
	topicActivityJSON
}

// topicActivityJSON holds the topic stats of ranges, waiting producers and
// backlog age; nothing is offloaded (pulsarsim keeps every entry in memory).
type topicActivityJSON struct {
	SystemTopicBytesInCounter                        int64 `json:"systemTopicBytesInCounter"`
	OldestBacklogMessageAgeSeconds                   int64 `json:"oldestBacklogMessageAgeSeconds"`
	EarliestMsgPublishTimeInBacklogs                 int64 `json:"earliestMsgPublishTimeInBacklogs"`
	OffloadedStorageSize                             int64 `json:"offloadedStorageSize"`
	LastOffloadLedgerID                              int64 `json:"lastOffloadLedgerId"`
	LastOffloadSuccessTimeStamp                      int64 `json:"lastOffloadSuccessTimeStamp"`
	LastOffloadFailureTimeStamp                      int64 `json:"lastOffloadFailureTimeStamp"`
	WaitingPublishers                                int   `json:"waitingPublishers"`
	NonContiguousDeletedMessagesRanges               int   `json:"nonContiguousDeletedMessagesRanges"`
	NonContiguousDeletedMessagesRangesSerializedSize int64 `json:"nonContiguousDeletedMessagesRangesSerializedSize"`
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
		topicActivityJSON: topicActivityJSON{OldestBacklogMessageAgeSeconds: -1},
	}
}

// topicStatsDoc renders a topic's stats as Pulsar's JSON.
// With earliest (getEarliestTimeInBacklog=true) it looks up the publish
// time of each backlog's oldest entry, as Pulsar does only when asked.
func topicStatsDoc(st broker.TopicStats, earliest bool) topicStatsJSON {
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
		sd := subscriptionDoc(ss)
		if earliest {
			sd.EarliestMsgPublishTimeInBacklog = ss.EarliestPublishTime
			if e := ss.EarliestPublishTime; e > 0 && (out.EarliestMsgPublishTimeInBacklogs == 0 || e < out.EarliestMsgPublishTimeInBacklogs) {
				out.EarliestMsgPublishTimeInBacklogs = e
			}
		}
		out.NonContiguousDeletedMessagesRanges += sd.NonContiguousDeletedMessagesRanges
		out.NonContiguousDeletedMessagesRangesSerializedSize += sd.NonContiguousDeletedMessagesRangesSerializedSize
		out.Subscriptions[name] = sd
	}
	for cluster, rs := range st.Replication {
		out.Replication[cluster] = replicatorDoc(rs)
	}
	out.WaitingPublishers = st.WaitingPublishers
	out.OldestBacklogMessageAgeSeconds = -1
	if st.OldestBacklogAge >= 0 {
		out.OldestBacklogMessageAgeSeconds = int64(st.OldestBacklogAge / time.Second)
	}
	return out
}

// replicatorJSON is one replicator's stats as Pulsar writes them
// (ReplicatorStatsImpl); inboundConnection and outboundConnection, which
// name a Netty channel on Pulsar, are left out, as pulsarsim's replicators
// write to the remote topic without a connection.
type replicatorJSON struct {
	MsgRateIn                 float64 `json:"msgRateIn"`
	MsgInCount                int64   `json:"msgInCount"`
	MsgThroughputIn           float64 `json:"msgThroughputIn"`
	BytesInCount              int64   `json:"bytesInCount"`
	MsgRateOut                float64 `json:"msgRateOut"`
	MsgOutCount               int64   `json:"msgOutCount"`
	MsgThroughputOut          float64 `json:"msgThroughputOut"`
	BytesOutCount             int64   `json:"bytesOutCount"`
	MsgRateExpired            float64 `json:"msgRateExpired"`
	ReplicationBacklog        int64   `json:"replicationBacklog"`
	Connected                 bool    `json:"connected"`
	ReplicationDelayInSeconds int64   `json:"replicationDelayInSeconds"`
	InboundConnectedSince     string  `json:"inboundConnectedSince,omitempty"`
	OutboundConnectedSince    string  `json:"outboundConnectedSince,omitempty"`
	MsgExpiredCount           int64   `json:"msgExpiredCount"`
}

// add sums two partitions' stats of one replicator, as Pulsar's
// ReplicatorStatsImpl.add does: counts and rates added, connected only if
// both are, the longer delay.
func (r replicatorJSON) add(o replicatorJSON) replicatorJSON {
	r.MsgRateIn += o.MsgRateIn
	r.MsgInCount += o.MsgInCount
	r.MsgThroughputIn += o.MsgThroughputIn
	r.BytesInCount += o.BytesInCount
	r.MsgRateOut += o.MsgRateOut
	r.MsgOutCount += o.MsgOutCount
	r.MsgThroughputOut += o.MsgThroughputOut
	r.BytesOutCount += o.BytesOutCount
	r.MsgRateExpired += o.MsgRateExpired
	r.MsgExpiredCount += o.MsgExpiredCount
	r.ReplicationBacklog += o.ReplicationBacklog
	r.Connected = r.Connected && o.Connected
	r.ReplicationDelayInSeconds = max(r.ReplicationDelayInSeconds, o.ReplicationDelayInSeconds)
	return r
}

// replicatorDoc renders a replicator's stats as Pulsar's JSON.
func replicatorDoc(rs broker.ReplicatorStats) replicatorJSON {
	out := replicatorJSON{MsgRateOut: rs.MsgRateOut, MsgThroughputOut: rs.MsgThroughputOut,
		MsgOutCount: rs.MsgOutCount, BytesOutCount: rs.BytesOutCount,
		MsgRateIn: rs.MsgRateIn, MsgThroughputIn: rs.MsgThroughputIn, MsgInCount: rs.MsgInCount, BytesInCount: rs.BytesInCount,
		ReplicationBacklog: rs.ReplicationBacklog, Connected: rs.Connected,
		ReplicationDelayInSeconds: int64(rs.ReplicationDelay / time.Second)}
	if rs.Connected {
		out.OutboundConnectedSince = since(rs.ConnectedSince)
	}
	if !rs.InboundSince.IsZero() {
		out.InboundConnectedSince = since(rs.InboundSince)
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
		SubscriptionProperties:           map[string]string{},
		subscriptionActivityJSON: subscriptionActivityJSON{
			MessageAckRate: ss.MessageAckRate, MsgInReplay: ss.MsgInReplay,
			MsgRateExpired: ss.MsgRateExpired, TotalMsgExpired: ss.TotalMsgExpired, LastExpireTimestamp: millis(ss.LastExpire),
			LastConsumedFlowTimestamp: millis(ss.LastConsumedFlow), LastConsumedTimestamp: millis(ss.LastConsumed),
			LastAckedTimestamp: millis(ss.LastAcked), LastMarkDeleteAdvancedTimestamp: millis(ss.LastMarkDeleteAdvanced),
			Durable: ss.Durable, AllowOutOfOrderDelivery: ss.AllowOutOfOrderDelivery,
			IsReplicated: ss.Replicated, Replicated: ss.Replicated,
			ConsumersAfterMarkDeletePosition:                 map[string]any{},
			NonContiguousDeletedMessagesRanges:               ss.AckedRanges,
			NonContiguousDeletedMessagesRangesSerializedSize: ss.AckedRangesSize,
		},
	}
	maps.Copy(out.SubscriptionProperties, ss.Properties)
	for _, c := range ss.Consumers {
		out.Consumers = append(out.Consumers, consumerJSON{
			ConsumerName: c.ConsumerName, AvailablePermits: c.AvailablePermits, UnackedMessages: c.UnackedMessages,
			BlockedConsumerOnUnackedMsgs: c.BlockedOnUnackedMsgs, MsgRateOut: c.MsgRateOut,
			MsgThroughputOut: c.MsgThroughputOut, MsgRateRedeliver: c.MsgRateRedeliver,
			MsgOutCounter: c.MsgOutCounter, BytesOutCounter: c.BytesOutCounter,
			Address: c.Address, ConnectedSince: since(c.ConnectedSince), ClientVersion: c.ClientVersion,
			Metadata: c.Metadata, MessageAckRate: c.MessageAckRate,
			LastAckedTimestamp:    millis(c.LastAcked),
			LastConsumedTimestamp: millis(c.LastConsumed), LastConsumedFlowTimestamp: millis(c.LastConsumedFlow),
			LastAckedTime: javaTime(time.UnixMilli(millis(c.LastAcked))), LastConsumedTime: javaTime(time.UnixMilli(millis(c.LastConsumed))),
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
	doc := topicStatsDoc(st, trueParam(r, "getEarliestTimeInBacklog"))
	excludeClients(r, &doc)
	doc.BacklogQuotaLimitSize, doc.BacklogQuotaLimitTime = s.backlogQuotaLimits(topic)
	doc.OwnerBroker = s.brokerID(r)
	if isSystemTopic(topic) {
		doc.SystemTopicBytesInCounter = doc.BytesInCounter
	}
	reply(w, doc, nil)
}

// excludeClients empties the lists a stats request's excludePublishers and
// excludeConsumers leave out (Pulsar still writes them, empty).
func excludeClients(r *http.Request, doc *topicStatsJSON) {
	if trueParam(r, "excludePublishers") {
		doc.Publishers = []publisherJSON{}
	}
	if trueParam(r, "excludeConsumers") {
		for name, ss := range doc.Subscriptions {
			ss.Consumers = []consumerJSON{}
			doc.Subscriptions[name] = ss
		}
	}
}

// partitionedTopic names the partitioned topic of the request's path, with
// its number of partitions; a topic without partitions is Pulsar's 404.
func (s *Server) partitionedTopic(r *http.Request) (string, broker.TopicName, int, error) {
	topic, err := topicFromPath(r)
	if err != nil {
		return "", broker.TopicName{}, 0, err
	}
	tn, _ := broker.ParseTopicName(topic)
	n, err := s.b.PartitionedMetadata(topic)
	if err != nil || n == 0 {
		return "", broker.TopicName{}, 0, errStatus(http.StatusNotFound, "Partitioned Topic "+topic+" not found")
	}
	return topic, tn, n, nil
}

// partitionedStats sums the stats of a partitioned topic's partitions, and
// lists each when perPartition is set (the default).
func (s *Server) partitionedStats(w http.ResponseWriter, r *http.Request) {
	topic, tn, n, err := s.partitionedTopic(r)
	if err != nil {
		reply(w, nil, err)
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
		doc := topicStatsDoc(st, trueParam(r, "getEarliestTimeInBacklog"))
		excludeClients(r, &doc)
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
	sum.WaitingPublishers += st.WaitingPublishers
	sum.NonContiguousDeletedMessagesRanges += st.NonContiguousDeletedMessagesRanges
	sum.NonContiguousDeletedMessagesRangesSerializedSize += st.NonContiguousDeletedMessagesRangesSerializedSize
	sum.OldestBacklogMessageAgeSeconds = max(sum.OldestBacklogMessageAgeSeconds, st.OldestBacklogMessageAgeSeconds)
	sum.Publishers = append(sum.Publishers, st.Publishers...)
	for cluster, v := range st.Replication {
		r, _ := v.(replicatorJSON)
		if acc, ok := sum.Replication[cluster].(replicatorJSON); ok {
			r = acc.add(r)
		}
		sum.Replication[cluster] = r
	}
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
		if acc.SubscriptionProperties == nil {
			acc.SubscriptionProperties = map[string]string{}
		}
		maps.Copy(acc.SubscriptionProperties, ss.SubscriptionProperties)
		addSubscriptionActivity(&acc.subscriptionActivityJSON, ss.subscriptionActivityJSON)
		sum.Subscriptions[name] = acc
	}
}

// millis writes a time as Pulsar's stats do: milliseconds since the epoch,
// 0 for never.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// isSystemTopic reports whether Pulsar counts a topic as a system topic:
// one of the pulsar/system namespace, or one whose local name starts with
// "__" (__change_events, transaction buffer snapshots).
func isSystemTopic(topic string) bool {
	tn, err := broker.ParseTopicName(topic)
	if err != nil {
		return false
	}
	return tn.Tenant+"/"+tn.Namespace == "pulsar/system" || strings.HasPrefix(tn.Local, "__")
}

// addSubscriptionActivity adds one partition's subscription activity to
// the sum: counts and rates add up, the latest time stays.
func addSubscriptionActivity(sum *subscriptionActivityJSON, a subscriptionActivityJSON) {
	sum.MessageAckRate += a.MessageAckRate
	sum.MsgInReplay += a.MsgInReplay
	sum.MsgRateExpired += a.MsgRateExpired
	sum.TotalMsgExpired += a.TotalMsgExpired
	sum.LastExpireTimestamp = max(sum.LastExpireTimestamp, a.LastExpireTimestamp)
	sum.LastConsumedFlowTimestamp = max(sum.LastConsumedFlowTimestamp, a.LastConsumedFlowTimestamp)
	sum.LastConsumedTimestamp = max(sum.LastConsumedTimestamp, a.LastConsumedTimestamp)
	sum.LastAckedTimestamp = max(sum.LastAckedTimestamp, a.LastAckedTimestamp)
	sum.LastMarkDeleteAdvancedTimestamp = max(sum.LastMarkDeleteAdvancedTimestamp, a.LastMarkDeleteAdvancedTimestamp)
	sum.Durable, sum.AllowOutOfOrderDelivery = a.Durable, a.AllowOutOfOrderDelivery
	sum.ConsumersAfterMarkDeletePosition = map[string]any{}
	sum.NonContiguousDeletedMessagesRanges += a.NonContiguousDeletedMessagesRanges
	sum.NonContiguousDeletedMessagesRangesSerializedSize += a.NonContiguousDeletedMessagesRangesSerializedSize
}
