package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The producer endpoint, /ws/v2/producer/{domain}/{tenant}/{ns}/{topic}:
// each text message the client sends is a message to produce, answered
// with its message id or an error, as Pulsar's ProducerHandler answers.

// producerMessage is a message the client sends (Pulsar's ProducerMessage).
type producerMessage struct {
	Payload             *string           `json:"payload"`
	Properties          map[string]string `json:"properties"`
	Context             *string           `json:"context"`
	Key                 *string           `json:"key"`
	ReplicationClusters []string          `json:"replicationClusters"`
	EventTime           *string           `json:"eventTime"`
	DeliverAt           int64             `json:"deliverAt"`
	DeliverAfterMs      int64             `json:"deliverAfterMs"`
	// The client-side encryption fields.
	EncryptionParam         *string `json:"encryptionParam"`
	CompressionType         *string `json:"compressionType"`
	UncompressedMessageSize *int    `json:"uncompressedMessageSize"`
}

// producerAck answers one message (Pulsar's ProducerAck: its two number
// fields are primitives, always written).
type producerAck struct {
	Result        string  `json:"result"`
	ErrorMsg      *string `json:"errorMsg,omitempty"`
	MessageID     string  `json:"messageId,omitempty"`
	Context       *string `json:"context,omitempty"`
	ErrorCode     int     `json:"errorCode"`
	SchemaVersion int64   `json:"schemaVersion"`
}

// Pulsar's WebSocketError codes, as a send error's "send-error:N" result or
// a close status.
const (
	errDeserialize    = 3 // FailedToDeserializeFromJSON
	errPayloadEncoded = 7 // PayloadEncodingError
	errUnknown        = 8 // UnknownError
)

func sendError(code int, msg string, ctx *string) producerAck {
	return producerAck{Result: fmt.Sprintf("send-error:%d", code), ErrorMsg: &msg, Context: ctx}
}

// producerConfig reads a producer's query parameters, in the order
// ProducerHandler.getProducerBuilder reads them.
func producerConfig(q map[string]string, topic string) (pulsar.ProducerOptions, *int64, error) {
	o := pulsar.ProducerOptions{Topic: topic, DisableBatching: true, DisableBlockIfQueueFull: true,
		MaxPendingMessages: defaultMaxPending}
	var initialSeq *int64
	if v, ok := q["producerName"]; ok {
		o.Name = v
	}
	if v, ok := q["initialSequenceId"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, nil, numberError(v)
		}
		initialSeq = &n
	}
	if v, ok := q["hashingScheme"]; ok {
		switch v {
		case "JavaStringHash":
			o.HashingScheme = pulsar.JavaStringHash
		case "Murmur3_32Hash":
			o.HashingScheme = pulsar.Murmur3_32Hash
		default:
			return o, nil, badParam("No enum constant org.apache.pulsar.client.api.HashingScheme.%s", v)
		}
	}
	if v, ok := q["sendTimeoutMillis"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			return o, nil, err
		}
		o.SendTimeout = time.Duration(n) * time.Millisecond
		if n <= 0 {
			o.SendTimeout = -1 // no timeout
		}
	}
	roundRobin := false
	if v, ok := q["messageRoutingMode"]; ok {
		switch v {
		case "SinglePartition", "CustomPartition":
		case "RoundRobinPartition":
			roundRobin = true
		default:
			return o, nil, badParam("Invalid messageRoutingMode %s", v)
		}
	}
	o.MessageRouter = router(roundRobin, o.HashingScheme)
	if v, ok := q["encryptionKeys"]; ok {
		keys, err := clientSideKeys(v)
		if err != nil {
			return o, nil, err
		}
		if keys != nil {
			// The client encrypts: no batching, no compression, and a
			// crypto that only writes the keys into the metadata.
			names := make([]string, 0, len(keys))
			for name := range keys {
				names = append(names, name)
			}
			o.Encryption = &pulsar.ProducerEncryptionInfo{Keys: names, KeyReader: noKeys{},
				MessageCrypto: &passThroughCrypto{keys: keys, params: map[string][][]byte{}}}
			return o, initialSeq, nil
		}
	}
	if v, ok := q["batchingEnabled"]; ok && strings.EqualFold(v, "true") {
		o.DisableBatching = false
		o.BatchingMaxPublishDelay = time.Millisecond // the Java client's default
		o.BatchingMaxMessages = 1000
		if v, ok := q["batchingMaxMessages"]; ok {
			n, err := parseInt32(v)
			if err != nil {
				return o, nil, err
			}
			if n > 0 {
				o.BatchingMaxMessages = uint(n)
			}
		}
		if v, ok := q["maxPendingMessages"]; ok {
			n, err := parseInt32(v)
			if err != nil {
				return o, nil, err
			}
			if n > 0 {
				o.MaxPendingMessages = int(n)
			}
		}
		if v, ok := q["batchingMaxPublishDelay"]; ok {
			n, err := parseInt32(v)
			if err != nil {
				return o, nil, err
			}
			if n > 0 {
				o.BatchingMaxPublishDelay = time.Duration(n) * time.Millisecond
			}
		}
	}
	if v, ok := q["compressionType"]; ok {
		switch v {
		case "NONE":
		case "LZ4":
			o.CompressionType = pulsar.LZ4
		case "ZLIB":
			o.CompressionType = pulsar.ZLib
		case "ZSTD":
			o.CompressionType = pulsar.ZSTD
		case "SNAPPY":
			// pulsar-client-go cannot compress with Snappy: stored uncompressed.
		default:
			return o, nil, badParam("Invalid compressionType %s", v)
		}
	}
	if _, ok := q["encryptionKeys"]; ok {
		// Key names: without a cryptoKeyReaderFactoryClassName (pulsarsim
		// has none) Pulsar fails here.
		return o, nil, errNoCryptoKeyReader
	}
	return o, initialSeq, nil
}

// defaultMaxPending bounds the messages a WebSocket producer has in flight
// when maxPendingMessages does not. The Java client sets no count by
// default (only its 64 MiB memory limit, which pulsar-client-go applies
// too); pulsar-client-go's own default, 1000, would refuse a client that
// pipelines more, and its queues are allocated at this size.
const defaultMaxPending = 50_000

// errNoCryptoKeyReader is Pulsar's answer to encryptionKeys without a
// configured key reader.
var errNoCryptoKeyReader = errors.New("Can't add encryption key without configuring cryptoKeyReaderFactoryClassName")

// router is the Java client's routing for a partitioned topic: a message
// with a key goes to the key's hash, one without to a partition picked once
// (SinglePartition, the WebSocket producer's default) or to each in turn.
func router(roundRobin bool, scheme pulsar.HashingScheme) func(*pulsar.ProducerMessage, pulsar.TopicMetadata) int {
	single := -1
	var next atomic.Uint32
	var mu sync.Mutex
	return func(m *pulsar.ProducerMessage, md pulsar.TopicMetadata) int {
		n := int(md.NumPartitions())
		if n <= 1 {
			return 0
		}
		if m.Key != "" {
			return int(keyHash(m.Key, scheme) % uint32(n))
		}
		if roundRobin {
			return int(next.Add(1)-1) % n
		}
		mu.Lock()
		defer mu.Unlock()
		if single < 0 || single >= n {
			single = rand.IntN(n)
		}
		return single
	}
}

// keyHash is the Java client's hash of a key: String.hashCode, or Murmur3
// (32 bits, seed 0), masked to a non-negative int.
func keyHash(key string, scheme pulsar.HashingScheme) uint32 {
	if scheme == pulsar.Murmur3_32Hash {
		return murmur3([]byte(key)) & 0x7FFFFFFF
	}
	var h int32
	for _, r := range utf16Units(key) {
		h = 31*h + int32(r)
	}
	return uint32(h) & 0x7FFFFFFF
}

// newProducer checks a producer request and creates its producer; it
// answers a refusal itself and returns nil then.
func (s *Server) newProducer(w http.ResponseWriter, r *http.Request, ep endpoint, perr error) *session {
	if perr != nil {
		httpError(w, r, producerServlet, http.StatusBadRequest, "Invalid query params: "+perr.Error())
		return nil
	}
	if !s.authorize(w, r, ep, true) {
		return nil
	}
	opts, initialSeq, err := producerConfig(queryParams(r), ep.topic.String())
	if err != nil {
		refuse(w, r, ep, err)
		return nil
	}
	client, err := s.internalClient()
	if err != nil {
		refuse(w, r, ep, err)
		return nil
	}
	producer, err := client.CreateProducer(opts)
	if err != nil {
		s.createError(w, r, ep, err)
		return nil
	}
	ps := &producerSession{session: newSession(s), producer: producer, partitioned: partitioned(client, ep.topic)}
	if opts.Encryption != nil {
		ps.crypto = opts.Encryption.MessageCrypto.(*passThroughCrypto)
	}
	if initialSeq != nil {
		ps.nextSeq = *initialSeq + 1
		ps.setSeq = true
	}
	ps.onText = ps.handle
	ps.closeClient = producer.Close
	return ps.session
}

// refuse answers an error found before the internal client was asked:
// Pulsar's 400 for a parameter, 500 for anything else.
func refuse(w http.ResponseWriter, r *http.Request, ep endpoint, err error) {
	var pe *paramError
	prefix := "Failed to create producer/consumer: "
	if ep.kind == "reader" {
		prefix = "Failed to create reader: "
	}
	if errors.As(err, &pe) && ep.kind != "reader" {
		httpError(w, r, ep.servlet, http.StatusBadRequest, "Invalid query params: "+pe.msg)
		return
	}
	httpError(w, r, ep.servlet, http.StatusInternalServerError, prefix+err.Error())
}

// producerSession is one WebSocket producer.
type producerSession struct {
	*session
	producer    pulsar.Producer
	partitioned bool
	crypto      *passThroughCrypto // with client-side encryption

	mu      sync.Mutex
	setSeq  bool
	nextSeq int64
}

// handle produces one message and answers it when it is stored or fails.
func (ps *producerSession) handle(data []byte) {
	var req producerMessage
	if err := json.Unmarshal(data, &req); err != nil {
		_ = ps.send(sendError(errDeserialize, jsonError(data, err), nil))
		return
	}
	if req.Payload == nil {
		_ = ps.send(sendError(errPayloadEncoded,
			`Cannot invoke "String.getBytes(java.nio.charset.Charset)" because "src" is null`, req.Context))
		return
	}
	payload, err := decodeBase64(*req.Payload)
	if err != nil {
		_ = ps.send(sendError(errPayloadEncoded, "Invalid Base64 message-payload error="+err.Error(), req.Context))
		return
	}
	msg := &pulsar.ProducerMessage{Payload: payload, Properties: req.Properties, ReplicationClusters: req.ReplicationClusters}
	if req.Key != nil {
		msg.Key = *req.Key
	}
	if req.EventTime != nil {
		t, err := parseJavaTime(*req.EventTime)
		if err != nil {
			_ = ps.send(sendError(errPayloadEncoded, err.Error(), req.Context))
			return
		}
		msg.EventTime = t
	}
	if req.DeliverAt > 0 {
		msg.DeliverAt = time.UnixMilli(req.DeliverAt)
	}
	if req.DeliverAfterMs > 0 {
		msg.DeliverAfter = time.Duration(req.DeliverAfterMs) * time.Millisecond
	}
	if ps.crypto != nil && !ps.encryptionFields(&req, payload) {
		return
	}
	ps.mu.Lock()
	if ps.setSeq {
		seq := ps.nextSeq
		ps.nextSeq++
		msg.SequenceID = &seq
	}
	ps.mu.Unlock()
	reqCtx := req.Context
	ps.producer.SendAsync(context.Background(), msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if ps.ctx.Err() != nil {
			return
		}
		if err != nil {
			_ = ps.send(sendError(errUnknown, err.Error(), reqCtx))
			return
		}
		_ = ps.send(producerAck{Result: "ok", MessageID: encodeID(producedID(id, ps.partitioned)), Context: reqCtx})
	})
}

// encryptionFields checks a client-side encrypted message's fields as
// ProducerHandler does, answering a refusal itself, and records its
// encryption parameter for the crypto.
func (ps *producerSession) encryptionFields(req *producerMessage, payload []byte) bool {
	var param []byte
	if req.EncryptionParam != nil && strings.TrimSpace(*req.EncryptionParam) != "" {
		p, err := decodeBase64(*req.EncryptionParam)
		if err != nil {
			_ = ps.send(sendError(errPayloadEncoded, "Invalid Base64 encryptionParam error="+err.Error(), req.Context))
			return false
		}
		param = p
	}
	none := req.CompressionType == nil || *req.CompressionType == "NONE"
	switch {
	case req.CompressionType != nil && req.UncompressedMessageSize != nil:
		if !none || *req.UncompressedMessageSize != len(payload) {
			// pulsar-client-go writes the compression and the uncompressed
			// size itself.
			_ = ps.send(sendError(errUnknown, "pulsarsim cannot mark a client-side encrypted message as compressed", req.Context))
			return false
		}
	case none && req.UncompressedMessageSize == nil:
	default:
		_ = ps.send(sendError(errPayloadEncoded,
			"the params compressionType and uncompressedMessageSize should both empty or both non-empty", req.Context))
		return false
	}
	ps.crypto.expect(payload, param)
	return true
}
