package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The REST producer (PIP-64) as Pulsar 4.0.8 serves it on the web port:
// POST /topics/{persistent|non-persistent}/{tenant}/{ns}/{topic}, or
// .../partitions/{n} for one partition, with a JSON body of messages and
// optional schemas. The topic must exist (the REST producer never creates
// one); the value and key schemas are registered as a producer's are (a
// STRING schema when none is given, or the version the body names); each
// message is encoded with the schema and stored as its own entry, round
// robin over the partitions of a partitioned topic. The answer lists one
// result per message: its id (ledger:entry:partition) or an error, and the
// schema version used. Answers and reasons are Pulsar's, down to the Java
// exception texts its REST resource returns; where those depend on state a
// Pulsar broker keeps between requests (which topics it has served through
// REST), pulsarsim answers as a broker that has served none (FIDELITY.md).

// restProducerMessages is the request body (Pulsar's ProducerMessages).
type restProducerMessages struct {
	SchemaVersion *int64                 `json:"schemaVersion"`
	KeySchema     string                 `json:"keySchema"`
	ValueSchema   string                 `json:"valueSchema"`
	ProducerName  string                 `json:"producerName"`
	Messages      *[]restProducerMessage `json:"messages"`
}

// restProducerMessage is one message to publish (Pulsar's ProducerMessage).
type restProducerMessage struct {
	Payload             *string           `json:"payload"`
	Properties          map[string]string `json:"properties"`
	Context             string            `json:"context"`
	Key                 *string           `json:"key"`
	ReplicationClusters []string          `json:"replicationClusters"`
	EventTime           string            `json:"eventTime"`
	SequenceID          int64             `json:"sequenceId"`
	DisableReplication  bool              `json:"disableReplication"`
	DeliverAt           int64             `json:"deliverAt"`
	DeliverAfterMs      int64             `json:"deliverAfterMs"`
}

// restProducerAck is one message's result (Pulsar's ProducerAck).
type restProducerAck struct {
	ErrorMsg      string `json:"errorMsg,omitempty"`
	MessageID     string `json:"messageId"`
	ErrorCode     int    `json:"errorCode"`
	SchemaVersion int64  `json:"schemaVersion"`
}

// restProducerAcks is the answer (Pulsar's ProducerAcks).
type restProducerAcks struct {
	MessagePublishResults []restProducerAck `json:"messagePublishResults"`
	SchemaVersion         int64             `json:"schemaVersion"`
}

// restDefaultProducer is the producer name of messages whose request names
// none.
const restDefaultProducer = "RestProducer"

// The per-message errors of Pulsar's REST producer: a partition that does
// not exist, a terminated topic.
const (
	restTopicNotOwned   = "org.apache.pulsar.broker.service.BrokerServiceException$TopicNotFoundException: Topic not owned by current broker."
	restTopicTerminated = "org.apache.pulsar.broker.service.BrokerServiceException$TopicTerminatedException: " +
		"org.apache.bookkeeper.mledger.ManagedLedgerException$ManagedLedgerTerminatedException: Managed ledger was already terminated"
)

func (s *Server) routeRESTProducer() {
	s.mux.HandleFunc("POST /topics/{domain}/{tenant}/{ns}/{topic}", s.restProduce)
	s.mux.HandleFunc("POST /topics/{domain}/{tenant}/{ns}/{topic}/partitions/{partition}", s.restProduce)
}

func (s *Server) restProduce(w http.ResponseWriter, r *http.Request) {
	domain := r.PathValue("domain")
	if domain != "persistent" && domain != "non-persistent" {
		httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	toPartition := r.PathValue("partition") != ""
	partition := -1
	if toPartition {
		n, err := strconv.Atoi(r.PathValue("partition"))
		if err != nil {
			httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
			return
		}
		partition = n
	}
	name, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	tn, _ := broker.ParseTopicName(name)
	if !s.mayProduce(w, r, tn) {
		return
	}
	body, err := readBody(r, 64<<20)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var req *restProducerMessages
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			reply(w, nil, badBody(body, err))
			return
		}
	}
	if toPartition && tn.Partition >= 0 {
		httpError(w, http.StatusBadRequest, "Topic name can't contain '-partition-' suffix.")
		// Pulsar answers, then goes on with the request all the same: the
		// messages are stored, the rest of its answer is dropped.
		w = discardAnswer{}
	}
	if err := s.restLookup(tn, toPartition, partition); err != nil {
		httpError(w, http.StatusInternalServerError, "Fail to publish message: "+err.Error())
		return
	}
	if req == nil {
		httpError(w, http.StatusInternalServerError, "Fail to publish message: Cannot invoke "+
			`"org.apache.pulsar.websocket.data.ProducerMessages.getKeySchema()" because "request" is null`)
		return
	}
	schema, version, reason := s.restSchema(tn, req)
	if reason != "" {
		httpError(w, http.StatusInternalServerError, reason)
		return
	}
	if req.Messages == nil {
		httpError(w, http.StatusInternalServerError, `Cannot invoke "java.util.List.iterator()" because "messages" is null`)
		return
	}
	producer := req.ProducerName
	if producer == "" {
		producer = restDefaultProducer
	}
	payloads := make([][]byte, len(*req.Messages))
	for i, m := range *req.Messages {
		if payloads[i], err = s.restPayload(producer, schema, m); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	indexes := []int{partition}
	if !toPartition {
		if indexes = s.served.indexes(tn.Base().String()); len(indexes) == 0 {
			httpError(w, http.StatusInternalServerError, "Topic not owned by current broker.")
			return
		}
	}
	acks := restProducerAcks{MessagePublishResults: []restProducerAck{}, SchemaVersion: version}
	for i, p := range payloads {
		acks.MessagePublishResults = append(acks.MessagePublishResults, s.restPublish(tn, indexes[i%len(indexes)], p))
	}
	reply(w, acks, nil)
}

// restServed is what Pulsar's broker remembers of the topics its REST
// producer has served (BrokerService's owning topics): for each topic name
// without partition suffix, the partitions its lookups found, -1 standing
// for a non-partitioned topic. A request for a topic (or partition) it
// already knows skips the lookup, and the messages of a request without a
// partition go round robin over what it knows, whatever the topic has
// become since; a partition found missing at publish is forgotten.
type restServed struct {
	mu    sync.Mutex
	known map[string]map[int]bool
}

// knows reports whether base is known, with partition p when p is not nil.
func (rs *restServed) knows(base string, p *int) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	parts, ok := rs.known[base]
	if p != nil {
		return parts[*p]
	}
	return ok
}

func (rs *restServed) add(base string, ps ...int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.known == nil {
		rs.known = map[string]map[int]bool{}
	}
	if rs.known[base] == nil {
		rs.known[base] = map[int]bool{}
	}
	for _, p := range ps {
		rs.known[base][p] = true
	}
}

func (rs *restServed) forget(base string, p int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.known[base], p)
}

// indexes returns the partitions known of base, in order.
func (rs *restServed) indexes(base string) []int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []int
	for p := range rs.known[base] {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// restLookup finds the partitions of tn, as Pulsar's REST producer looks
// them up unless it knows them already (for a request to one partition, it
// knows that partition): every partition of a partitioned topic named
// without suffix, else the topic or partition named. A topic that does not
// exist fails.
func (s *Server) restLookup(tn broker.TopicName, toPartition bool, partition int) error {
	base := tn.Base().String()
	var p *int
	if toPartition {
		p = &partition
	}
	if s.served.knows(base, p) {
		return nil
	}
	n, err := s.b.ExistingPartitions(tn.String())
	if err != nil {
		return err
	}
	if tn.Partition < 0 && n > 0 {
		for i := range n {
			s.served.add(base, i)
		}
		return nil
	}
	s.served.add(base, tn.Partition)
	return nil
}

// restPartitionName is Pulsar's TopicName.getPartition as the REST producer
// applies it to the request's topic: the name itself for -1 or when it
// already ends with that partition's suffix, else the name with the suffix
// added.
func restPartitionName(tn broker.TopicName, p int) string {
	suffix := "-partition-" + strconv.Itoa(p)
	if p == -1 || strings.HasSuffix(tn.String(), suffix) {
		return tn.String()
	}
	return tn.String() + suffix
}

// discardAnswer drops what is written to it: the answer to a request
// already answered.
type discardAnswer struct{}

func (discardAnswer) Header() http.Header         { return http.Header{} }
func (discardAnswer) Write(b []byte) (int, error) { return len(b), nil }
func (discardAnswer) WriteHeader(int)             {}

// mayProduce checks that the request's role may produce on tn, as Pulsar's
// REST producer does when both authentication and authorization are on,
// and answers the refusal itself.
func (s *Server) mayProduce(w http.ResponseWriter, r *http.Request, tn broker.TopicName) bool {
	if !s.b.AuthenticationEnabled() || !s.b.AuthorizationEnabled() {
		return true
	}
	id, err := s.b.AuthenticateHTTP(r)
	if err != nil {
		httpError(w, http.StatusUnauthorized, "Need to authenticate to perform the request")
		return false
	}
	if !s.b.AllowedTopic(id.Role, tn, auth.OpProduce) {
		httpError(w, http.StatusUnauthorized, fmt.Sprintf("Unauthorized to produce to topic %s with clientAppId [%s] "+
			"and authdata org.apache.pulsar.broker.authentication.AuthenticationDataHttps", tn, id.Role))
		return false
	}
	return true
}

// restPublish stores one message's payload on partition p of the
// request's topic (restPartitionName) and returns its result.
func (s *Server) restPublish(tn broker.TopicName, p int, payload []byte) restProducerAck {
	target := restPartitionName(tn, p)
	id, err := s.b.PublishPayload(target, payload)
	suffix := strconv.Itoa(p)
	switch {
	case err == nil:
		return restProducerAck{MessageID: fmt.Sprintf("%d:%d:%s", id.Ledger, id.Entry, suffix)}
	case errors.Is(err, broker.ErrTopicNotFound), errors.Is(err, broker.ErrInvalidName):
		s.served.forget(tn.Base().String(), p)
		return restProducerAck{MessageID: suffix, ErrorCode: 2, ErrorMsg: restTopicNotOwned}
	case errors.Is(err, broker.ErrTopicTerminated):
		return restProducerAck{MessageID: suffix, ErrorCode: 2, ErrorMsg: restTopicTerminated}
	}
	return restProducerAck{MessageID: suffix, ErrorCode: 2, ErrorMsg: err.Error()}
}

// restPayload builds one message as Pulsar's REST producer does: its
// metadata (producer name, the broker's time as publish time, the
// request's sequence id, replication clusters, properties, key, event and
// delivery times) and its payload encoded with the schema, as the bytes a
// SEND carries.
func (s *Server) restPayload(producer string, schema restSchemaInfo, m restProducerMessage) ([]byte, error) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String(producer),
		PublishTime:  proto.Uint64(uint64(s.b.Clock().Now().UnixMilli())),
		SequenceId:   proto.Uint64(uint64(m.SequenceID)),
		ReplicateTo:  m.ReplicationClusters,
		Properties:   restProperties(m.Properties),
	}
	valueSchema := schema
	if schema.kv != nil {
		valueSchema = schema.kv[1]
	}
	if m.Key != nil {
		if schema.kv != nil {
			md.PartitionKey = proto.String(base64Std(schema.kv[0].encode(m.Key)))
			md.PartitionKeyB64Encoded = proto.Bool(true)
		} else {
			md.PartitionKey = proto.String(*m.Key)
			md.PartitionKeyB64Encoded = proto.Bool(false)
		}
	}
	if m.EventTime != "" {
		t, err := javaParseLong(m.EventTime)
		if err != nil {
			return nil, err
		}
		md.EventTime = proto.Uint64(uint64(t))
	}
	if m.DisableReplication {
		md.ReplicateTo = []string{"__local__"}
	}
	switch {
	case m.DeliverAt != 0 && md.EventTime != nil:
		md.DeliverAtTime = proto.Int64(m.DeliverAt)
	case m.DeliverAfterMs != 0:
		// Pulsar adds the delay to the event time (0 when there is none).
		md.DeliverAtTime = proto.Int64(int64(md.GetEventTime()) + m.DeliverAfterMs)
	}
	body := valueSchema.encode(m.Payload)
	md.Compression = pb.CompressionType_NONE.Enum()
	md.UncompressedSize = proto.Uint32(uint32(len(body)))
	return protocol.AppendPayload(nil, md, body), nil
}

// restProperties turns a message's properties into the metadata's pairs,
// sorted by key.
func restProperties(props map[string]string) []*pb.KeyValue {
	out := make([]*pb.KeyValue, 0, len(props))
	for _, k := range sortedKeys(props) {
		out = append(out, &pb.KeyValue{Key: proto.String(k), Value: proto.String(props[k])})
	}
	return out
}

// javaParseLong parses s as Java's Long.parseLong does, failing with its
// NumberFormatException's message.
func javaParseLong(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("For input string: \"%s\"", s)
	}
	return n, nil
}
