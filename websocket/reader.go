package websocket

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/broker"
)

// The reader endpoint, /ws/v2/reader/{domain}/{tenant}/{ns}/{topic}: the
// server pushes the topic's messages from messageId on (latest by default,
// earliest, or a base64 message id), at most receiverQueueSize unanswered;
// any frame but isEndOfTopic answers one.

// readerSession is one WebSocket reader.
type readerSession struct {
	*session
	reader       pulsar.Reader
	topic        broker.TopicName
	subscription string
	maxPending   int
	credits      chan struct{} // one token per message the reader may push
	crypto       cryptoFailure
}

// newReader checks a reader request and creates its reader; it answers a
// refusal itself and returns nil then.
func (s *Server) newReader(w http.ResponseWriter, r *http.Request, ep endpoint, perr error) *session {
	if perr != nil {
		httpError(w, r, readerServlet, http.StatusBadRequest, "Invalid query params: "+perr.Error())
		return nil
	}
	q := queryParams(r)
	queue := int32(1000)
	if v, ok := q["receiverQueueSize"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			// Thrown before the handler's own error handling: Jetty answers.
			httpError(w, r, readerServlet, http.StatusInternalServerError, "java.lang.NumberFormatException: "+err.Error())
			return nil
		}
		queue = min(n, 1000)
	}
	if !s.authorize(w, r, ep, false) {
		return nil
	}
	sub := "reader-" + randomName(10)
	opts := pulsar.ReaderOptions{Topic: ep.topic.String(), StartMessageID: pulsar.LatestMessageID(),
		ReceiverQueueSize: int(queue), SubscriptionName: sub, Decryption: consumeEncrypted()}
	if queue < 0 {
		refuse(w, r, ep, errors.New("receiverQueueSize needs to be >= 0"))
		return nil
	}
	if queue == 0 {
		opts.ReceiverQueueSize = 1
	}
	if v := strings.TrimSpace(q["messageId"]); v != "" {
		switch v {
		case "earliest":
			opts.StartMessageID = pulsar.EarliestMessageID()
		case "latest":
		default:
			id, err := decodeID(v)
			if err != nil {
				refuse(w, r, ep, err)
				return nil
			}
			opts.StartMessageID = id
		}
	}
	opts.Name = randomName(5) // the Java client names its consumers so
	if v, ok := q["readerName"]; ok {
		opts.Name = v
	}
	client, err := s.internalClient()
	if err != nil {
		refuse(w, r, ep, err)
		return nil
	}
	if queue == 0 && partitioned(client, ep.topic) {
		refuse(w, r, ep, errZeroQueuePartitioned)
		return nil
	}
	reader, err := client.CreateReader(opts)
	if err != nil {
		s.createError(w, r, ep, err)
		return nil
	}
	rs := &readerSession{session: newSession(s), reader: reader, topic: ep.topic, subscription: sub,
		maxPending: max(int(queue), 1), crypto: readCryptoFailure(q)}
	rs.credits = make(chan struct{}, rs.maxPending)
	for range rs.maxPending {
		rs.credits <- struct{}{}
	}
	rs.onText = rs.handle
	rs.start = func() { rs.goRun(rs.pump) }
	rs.closeClient = reader.Close
	return rs.session
}

// pump reads the topic and pushes each message while credits last.
func (rs *readerSession) pump() {
	for {
		select {
		case <-rs.ctx.Done():
			return
		case <-rs.credits:
		}
		msg, err := rs.reader.Next(rs.ctx)
		if err != nil {
			return
		}
		for encrypted(msg) && rs.crypto != cryptoConsume {
			// Undecryptable: skipped (a reader acknowledges nothing).
			if msg, err = rs.reader.Next(rs.ctx); err != nil {
				return
			}
		}
		if rs.send(pushed(msg, encodeID(consumedID(msg, isBatched(rs.srv.b, msg))))) != nil {
			return
		}
	}
}

// handle reads one frame: isEndOfTopic is answered, anything else returns
// a credit (the reader acknowledges nothing to the broker).
func (rs *readerSession) handle(data []byte) {
	var cmd consumerCommand
	if err := json.Unmarshal(data, &cmd); err != nil {
		rs.drop()
		return
	}
	if cmd.Type == "isEndOfTopic" {
		_ = rs.send(endOfTopicResponse{EndOfTopic: endOfTopic(rs.srv.b, rs.topic.String(), rs.subscription)})
		return
	}
	select {
	case rs.credits <- struct{}{}:
	default:
	}
}
