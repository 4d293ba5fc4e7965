package websocket

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/broker"
)

// The consumer endpoint,
// /ws/v2/consumer/{domain}/{tenant}/{ns}/{topic}/{subscription}: the
// server pushes messages to the client, at most receiverQueueSize
// unanswered at a time (or as many as the client permits, in pull mode),
// and the client answers each with an ack or a negative ack.
//
// Settlement is the Java client's, as Pulsar's websocket service (itself a
// Java client) gives it: a negative ack asks the broker to redeliver the
// message after negativeAckRedeliveryDelay (at least 100 ms); with
// ackTimeoutMillis, a message neither acked nor negatively acked in that
// time is asked for again; with a dead-letter policy, a message whose
// redelivery count has reached maxRedeliverCount is, at its next negative
// ack or ack timeout, produced to the dead-letter topic and acknowledged.
// The broker's dispatcher does the rest, as for any consumer.

// minNackDelay is the Java client's least negative-ack delay.
const minNackDelay = 100 * time.Millisecond

// ackTimeoutTick is the Java client's ack-timeout tick (tickDurationMillis).
const ackTimeoutTick = time.Second

// redeliverLatency is the delay of the internal client's own redelivery
// tracker, through which the session's due redeliveries go out.
const redeliverLatency = 30 * time.Millisecond

// consumerMessage is a message pushed to a consumer or reader (Pulsar's
// ConsumerMessage).
type consumerMessage struct {
	MessageID       string            `json:"messageId"`
	Payload         string            `json:"payload"`
	Properties      map[string]string `json:"properties"`
	PublishTime     string            `json:"publishTime"`
	RedeliveryCount uint32            `json:"redeliveryCount"`
	EventTime       string            `json:"eventTime,omitempty"`
	// EncryptionContext is set on an encrypted message a consumer (not a
	// reader) gets with cryptoFailureAction=CONSUME.
	EncryptionContext *encryptionContextJSON `json:"encryptionContext,omitempty"`
	Key               string                 `json:"key,omitempty"`
}

// consumerCommand is a frame a consumer or reader sends (Pulsar's
// ConsumerCommand): an ack when its type is none of the others.
type consumerCommand struct {
	Type           string `json:"type"`
	MessageID      string `json:"messageId"`
	PermitMessages *int   `json:"permitMessages"`
}

// endOfTopicResponse answers isEndOfTopic.
type endOfTopicResponse struct {
	EndOfTopic bool `json:"endOfTopic"`
}

// consumerConfig is what a consumer's query parameters ask for.
type consumerConfig struct {
	opts       pulsar.ConsumerOptions
	ackTimeout time.Duration
	nackDelay  time.Duration
	maxRedeliv int    // 0: no dead-letter policy
	dlqTopic   string // with maxRedeliv
	pull       bool
	maxPending int
	crypto     cryptoFailure
}

// readConsumerConfig reads a consumer's query parameters, in the order
// ConsumerHandler.getConsumerConfiguration reads them, with its refusals.
func readConsumerConfig(q map[string]string, ep endpoint) (consumerConfig, error) {
	c := consumerConfig{nackDelay: time.Minute, maxPending: 1000}
	c.opts = pulsar.ConsumerOptions{Topic: ep.topic.String(), SubscriptionName: ep.subscription,
		Type: pulsar.Exclusive, NackRedeliveryDelay: redeliverLatency}
	c.pull, _ = strconv.ParseBool(strings.ToLower(q["pullMode"]))
	if v, ok := q["ackTimeoutMillis"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			return c, err
		}
		if n != 0 && n < 1000 {
			return c, badParam("Ack timeout should be greater than 1000 ms")
		}
		c.ackTimeout = time.Duration(n) * time.Millisecond
	}
	if v, ok := q["subscriptionType"]; ok {
		types := map[string]pulsar.SubscriptionType{"Exclusive": pulsar.Exclusive, "Shared": pulsar.Shared,
			"Failover": pulsar.Failover, "Key_Shared": pulsar.KeyShared}
		t, ok := types[v]
		if !ok {
			return c, badParam("Invalid subscriptionType %s", v)
		}
		c.opts.Type = t
	}
	if v, ok := q["subscriptionMode"]; ok {
		switch v {
		case "Durable":
			c.opts.SubscriptionMode = pulsar.Durable
		case "NonDurable":
			c.opts.SubscriptionMode = pulsar.NonDurable
		default:
			return c, badParam("Invalid subscriptionMode %s", v)
		}
	}
	if v, ok := q["subscriptionInitialPosition"]; ok {
		switch v {
		case "Latest":
			c.opts.SubscriptionInitialPosition = pulsar.SubscriptionPositionLatest
		case "Earliest":
			c.opts.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
		default:
			return c, badParam("Invalid subscriptionInitialPosition %s", v)
		}
	}
	if v, ok := q["receiverQueueSize"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			return c, err
		}
		n = min(n, 1000)
		if n < 0 {
			return c, badParam("receiverQueueSize needs to be >= 0")
		}
		c.opts.ReceiverQueueSize = int(n)
		if n == 0 {
			c.opts.EnableZeroQueueConsumer = true
		}
		c.maxPending = max(int(n), 1)
	}
	if v, ok := q["consumerName"]; ok {
		if strings.TrimSpace(v) == "" {
			return c, badParam("consumerName cannot be blank")
		}
		c.opts.Name = v
	}
	if v, ok := q["priorityLevel"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			return c, err
		}
		if n < 0 {
			return c, badParam("priorityLevel needs to be >= 0")
		}
	}
	if v, ok := q["negativeAckRedeliveryDelay"]; ok {
		n, err := parseInt32(v)
		if err != nil {
			return c, err
		}
		if n < 0 {
			return c, badParam("redeliveryDelay needs to be >= 0")
		}
		c.nackDelay = time.Duration(n) * time.Millisecond
	}
	c.nackDelay = max(c.nackDelay, minNackDelay)
	mrc, hasMax := q["maxRedeliverCount"]
	dlt, hasDLT := q["deadLetterTopic"]
	if hasMax || hasDLT {
		max := 0
		if hasMax {
			n, err := parseInt32(mrc)
			if err != nil {
				return c, err
			}
			max = int(n)
			c.dlqTopic = fmt.Sprintf("%s-%s-DLQ", ep.topic, ep.subscription)
		}
		if hasDLT {
			c.dlqTopic = dlt
		}
		if max <= 0 {
			return c, badParam("MaxRedeliverCount must be > 0.")
		}
		c.maxRedeliv = max
	}
	c.crypto = readCryptoFailure(q)
	c.opts.Decryption = consumeEncrypted()
	if c.opts.Name == "" {
		c.opts.Name = randomName(5)
	}
	return c, nil
}

// randomName returns n random hex digits.
func randomName(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// newConsumer checks a consumer request and subscribes; it answers a
// refusal itself and returns nil then.
func (s *Server) newConsumer(w http.ResponseWriter, r *http.Request, ep endpoint, perr error) *session {
	if perr != nil {
		httpError(w, r, consumerServlet, http.StatusBadRequest, "Invalid query params: "+perr.Error())
		return nil
	}
	cfg, err := readConsumerConfig(queryParams(r), ep)
	if err != nil {
		refuse(w, r, ep, err)
		return nil
	}
	if !s.authorize(w, r, ep, false) {
		return nil
	}
	client, err := s.internalClient()
	if err != nil {
		refuse(w, r, ep, err)
		return nil
	}
	if cfg.opts.EnableZeroQueueConsumer && partitioned(client, ep.topic) {
		refuse(w, r, ep, errZeroQueuePartitioned)
		return nil
	}
	consumer, err := client.Subscribe(cfg.opts)
	if err != nil {
		s.createError(w, r, ep, err)
		return nil
	}
	cs := &consumerSession{session: newSession(s), client: client, consumer: consumer, cfg: cfg, topic: ep.topic,
		subscription: ep.subscription, held: map[string]*heldMessage{}, rearm: make(chan struct{}, 1),
		wake: make(chan struct{}, 1)}
	if !cfg.pull {
		cs.credits = cfg.maxPending
	}
	cs.onText = cs.handle
	cs.start = func() {
		cs.goRun(cs.pump)
		cs.goRun(cs.timers)
	}
	cs.closeClient = cs.closeAll
	return cs.session
}

// heldMessage is a message pushed to the client and not yet acked: the
// Java consumer's message-id cache, with the settlement timers' state.
type heldMessage struct {
	msg pulsar.Message
	// timeoutAt is when the ack timeout asks for it again (zero: never, or
	// already asked).
	timeoutAt time.Time
}

// nackedMessage is a message waiting for its negative ack's delay.
type nackedMessage struct {
	msg pulsar.Message
	due time.Time
}

// consumerSession is one WebSocket consumer.
type consumerSession struct {
	*session
	client       pulsar.Client
	consumer     pulsar.Consumer
	cfg          consumerConfig
	topic        broker.TopicName
	subscription string

	wake  chan struct{} // credits were added
	rearm chan struct{} // a timer may now fall due earlier

	mu      sync.Mutex
	credits int // messages the session may push now
	held    map[string]*heldMessage
	nacked  []nackedMessage
	dlq     pulsar.Producer
}

// pump receives messages from the internal consumer and pushes them to the
// client while it has credits.
func (cs *consumerSession) pump() {
	for {
		cs.mu.Lock()
		n := cs.credits
		cs.mu.Unlock()
		if n <= 0 {
			select {
			case <-cs.ctx.Done():
				return
			case <-cs.wake:
				continue
			}
		}
		msg, err := cs.consumer.Receive(cs.ctx)
		if err != nil {
			return
		}
		if encrypted(msg) && cs.cfg.crypto != cryptoConsume {
			// The Java client cannot decrypt it (no key reader): DISCARD
			// acknowledges it; FAIL leaves it undelivered, tracked by the
			// ack timeout when there is one.
			if cs.cfg.crypto == cryptoDiscard {
				_ = cs.consumer.Ack(msg)
			} else if cs.cfg.ackTimeout > 0 {
				cs.mu.Lock()
				cs.held["undecryptable:"+encodeID(consumedID(msg, false))] = &heldMessage{msg: msg,
					timeoutAt: time.Now().Add(cs.cfg.ackTimeout)}
				cs.mu.Unlock()
				cs.signal(cs.rearm)
			}
			continue
		}
		if cs.cfg.maxRedeliv > 0 && int(msg.RedeliveryCount()) > cs.cfg.maxRedeliv {
			// Delivered again past the limit (a redelivery already under
			// way): the Java client moves it aside unseen.
			cs.deadLetter(msg)
			continue
		}
		batched := cs.batched(msg)
		id := encodeID(consumedID(msg, batched))
		cs.mu.Lock()
		h := &heldMessage{msg: msg}
		if cs.cfg.ackTimeout > 0 {
			h.timeoutAt = time.Now().Add(cs.cfg.ackTimeout)
		}
		cs.held[id] = h
		cs.credits--
		cs.mu.Unlock()
		if h.timeoutAt != (time.Time{}) {
			cs.signal(cs.rearm)
		}
		frame := pushed(msg, id)
		frame.EncryptionContext = encryptionContext(msg, batched)
		if cs.send(frame) != nil {
			return
		}
	}
}

// batched reports whether a message is one of a batch entry's.
// pulsar-client-go gives a message outside a batch index 0 of size 1, as it
// does the one message of a batch of one: the stored entry tells them apart.
func (cs *consumerSession) batched(msg pulsar.Message) bool {
	return isBatched(cs.srv.b, msg)
}

func isBatched(b *broker.Broker, msg pulsar.Message) bool {
	id := msg.ID()
	if id.BatchSize() > 1 {
		return true
	}
	e, err := b.Entry(msg.Topic(), broker.MessageID{Ledger: id.LedgerID(), Entry: id.EntryID(), BatchIndex: -1})
	return err == nil && e.BatchSize > 0
}

// pushed is the frame that carries msg to the client.
func pushed(msg pulsar.Message, id string) consumerMessage {
	props := msg.Properties()
	if props == nil {
		props = map[string]string{}
	}
	m := consumerMessage{MessageID: id, Payload: base64Std(msg.Payload()), Properties: props,
		PublishTime: formatJavaTime(msg.PublishTime().UnixMilli()), RedeliveryCount: msg.RedeliveryCount(), Key: msg.Key()}
	if et := msg.EventTime(); !et.IsZero() && et.UnixMilli() != 0 {
		m.EventTime = formatJavaTime(et.UnixMilli())
	}
	return m
}

// signal wakes a goroutine waiting on ch, without blocking.
func (cs *consumerSession) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// addCredits lets the pump push n more messages.
func (cs *consumerSession) addCredits(n int) {
	cs.mu.Lock()
	cs.credits += n
	cs.mu.Unlock()
	cs.signal(cs.wake)
}

// handle reads one frame from the client: an ack, a negative ack, a
// permit, an unsubscribe or an isEndOfTopic question.
func (cs *consumerSession) handle(data []byte) {
	var cmd consumerCommand
	if err := json.Unmarshal(data, &cmd); err != nil {
		cs.drop()
		return
	}
	switch cmd.Type {
	case "permit":
		if cmd.PermitMessages == nil {
			cs.drop()
			return
		}
		if cs.cfg.pull {
			cs.addCredits(*cmd.PermitMessages)
		}
	case "unsubscribe":
		if err := cs.consumer.Unsubscribe(); err != nil {
			cs.drop()
		}
	case "negativeAcknowledge":
		cs.nack(cmd.MessageID)
	case "isEndOfTopic":
		_ = cs.send(endOfTopicResponse{EndOfTopic: endOfTopic(cs.srv.b, cs.topic.String(), cs.subscription)})
	default:
		cs.ack(cmd.MessageID)
	}
}

// ack acknowledges the message the client names.
func (cs *consumerSession) ack(id string) {
	cs.mu.Lock()
	h := cs.held[id]
	delete(cs.held, id)
	cs.mu.Unlock()
	if h != nil {
		_ = cs.consumer.Ack(h.msg)
	} else if mid, err := decodeID(id); err == nil {
		_ = cs.consumer.AckID(mid)
	} else {
		cs.end(closeServerError, err.Error())
		return
	}
	if !cs.cfg.pull {
		cs.addCredits(1)
	}
}

// nack puts the named message aside for the negative-ack delay.
func (cs *consumerSession) nack(id string) {
	cs.mu.Lock()
	h := cs.held[id]
	delete(cs.held, id)
	if h != nil {
		cs.nacked = append(cs.nacked, nackedMessage{msg: h.msg, due: time.Now().Add(cs.cfg.nackDelay)})
	}
	cs.mu.Unlock()
	if h == nil {
		mid, err := decodeID(id)
		if err != nil {
			cs.end(closeServerError, err.Error())
			return
		}
		cs.consumer.NackID(mid) // a message this session did not push: no count to check
	}
	cs.signal(cs.rearm)
	if !cs.cfg.pull {
		cs.addCredits(1)
	}
}

// timers runs the negative-ack delays and the ack timeout.
func (cs *consumerSession) timers() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := cs.nextDue()
		t.Stop()
		var fire <-chan time.Time
		if !next.IsZero() {
			t.Reset(time.Until(next))
			fire = t.C
		}
		select {
		case <-cs.ctx.Done():
			return
		case <-cs.rearm:
		case <-fire:
			cs.fire(time.Now())
		}
	}
}

// nextDue is the next moment a timer falls due, zero for none.
func (cs *consumerSession) nextDue() time.Time {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, n := range cs.nacked {
		earlier(n.due)
	}
	for _, h := range cs.held {
		earlier(h.timeoutAt)
	}
	return next
}

// fire redelivers what fell due by now: negatively acked messages past
// their delay and held messages past the ack timeout (those stay held, so
// that a late ack still finds them). A message at the dead-letter limit
// goes to the dead-letter topic instead.
func (cs *consumerSession) fire(now time.Time) {
	var due []pulsar.Message
	cs.mu.Lock()
	kept := cs.nacked[:0]
	for _, n := range cs.nacked {
		if n.due.After(now) {
			kept = append(kept, n)
		} else {
			due = append(due, n.msg)
		}
	}
	cs.nacked = kept
	ids := make([]string, 0)
	for id, h := range cs.held {
		if !h.timeoutAt.IsZero() && !h.timeoutAt.After(now) {
			h.timeoutAt = time.Time{}
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		due = append(due, cs.held[id].msg)
	}
	cs.mu.Unlock()
	for _, msg := range due {
		if cs.cfg.maxRedeliv > 0 && int(msg.RedeliveryCount()) >= cs.cfg.maxRedeliv {
			cs.deadLetter(msg)
			continue
		}
		cs.consumer.NackID(msg.ID())
	}
}

// deadLetter produces msg to the dead-letter topic as the Java client does
// (its properties with REAL_TOPIC, REAL_SUBSCRIPTION and the origin's id,
// its key and event time), then acknowledges it.
func (cs *consumerSession) deadLetter(msg pulsar.Message) {
	p, err := cs.dlqProducer()
	if err != nil {
		cs.consumer.NackID(msg.ID())
		return
	}
	props := map[string]string{}
	for k, v := range msg.Properties() {
		props[k] = v
	}
	origin := javaIDString(msg, cs.batched(msg))
	for k, v := range map[string]string{"REAL_TOPIC": msg.Topic(), "ORIGIN_MESSAGE_IDY_TIME": origin,
		"ORIGIN_MESSAGE_ID": origin, "REAL_SUBSCRIPTION": cs.subscription} {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
	out := &pulsar.ProducerMessage{Payload: msg.Payload(), Properties: props, Key: msg.Key(), OrderingKey: msg.OrderingKey()}
	if et := msg.EventTime(); !et.IsZero() {
		out.EventTime = et
	}
	if _, err := p.Send(cs.ctx, out); err != nil {
		cs.consumer.NackID(msg.ID())
		return
	}
	_ = cs.consumer.Ack(msg)
	cs.mu.Lock()
	for id, h := range cs.held {
		if h.msg == msg {
			delete(cs.held, id)
		}
	}
	cs.mu.Unlock()
}

// javaIDString is a message id as the Java client prints it
// (ledger:entry:partition, then :batchIndex for a message of a batch).
func javaIDString(msg pulsar.Message, batched bool) string {
	w := consumedID(msg, batched)
	s := fmt.Sprintf("%d:%d:%d", w.ledger, w.entry, w.partition)
	if batched {
		s += fmt.Sprintf(":%d", w.batchIndex)
	}
	return s
}

// dlqProducer returns the dead-letter producer, created at its first use.
func (cs *consumerSession) dlqProducer() (pulsar.Producer, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.dlq != nil {
		return cs.dlq, nil
	}
	p, err := cs.client.CreateProducer(pulsar.ProducerOptions{Topic: cs.cfg.dlqTopic, DisableBatching: true,
		DisableBlockIfQueueFull: true,
		Name:                    fmt.Sprintf("%s-%s-%s-%s-DLQ", cs.topic, cs.subscription, cs.consumer.Name(), randomName(5))})
	if err != nil {
		return nil, err
	}
	cs.dlq = p
	return p, nil
}

// closeAll closes the internal consumer and the dead-letter producer.
func (cs *consumerSession) closeAll() {
	cs.consumer.Close()
	cs.mu.Lock()
	p := cs.dlq
	cs.dlq = nil
	cs.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// endOfTopic reports whether a subscription has reached the end of a
// terminated topic: the topic is terminated and the subscription has
// nothing left to read or acknowledge (when the broker sends a consumer
// REACHED_END_OF_TOPIC).
func endOfTopic(b *broker.Broker, topic, sub string) bool {
	st, err := b.TopicInternalStats(topic)
	if err != nil || !st.Terminated {
		return false
	}
	s, ok := b.Subscription(topic, sub)
	if !ok {
		return false
	}
	return s.Backlog == 0 || s.ReadPosition.Entry > st.LastEntry
}

// base64Std encodes as Java's basic Base64 encoder.
func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// errZeroQueuePartitioned is the Java client's refusal of a zero receiver
// queue on a partitioned topic (its multi-topics consumer), as Pulsar's
// handlers report it.
var errZeroQueuePartitioned = errors.New("java.util.concurrent.ExecutionException: java.lang.IllegalArgumentException: " +
	"Receiver queue size needs to be greater than 0 for Topics Consumer")

// partitioned reports whether a topic is partitioned.
func partitioned(client pulsar.Client, tn broker.TopicName) bool {
	if tn.Partition >= 0 {
		return false
	}
	parts, err := client.TopicPartitions(tn.String())
	return err == nil && len(parts) > 0 && parts[0] != tn.String()
}
