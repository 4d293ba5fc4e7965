package broker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/cursor"
	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/txn"
)

// Subscription is one subscription of a topic: its cursor, its dispatcher
// and its consumers. It changes only under its topic's lock.
type Subscription struct {
	topic   *Topic
	name    string
	durable bool
	// resetting is set while a seek disconnects the consumers.
	resetting bool

	cur       *cursor.Cursor
	disp      *dispatch.Dispatcher
	typ       dispatch.SubType
	consumers map[uint64]*Consumer // by dispatcher id
	nextID    uint64
	// switches is the dispatcher's count of active-consumer switches that
	// the consumers were last told about (Failover).
	switches uint64
	// timerAt is the dispatcher timer registered with the broker's timers,
	// when timerSet.
	timerAt  int64
	timerSet bool
	// retryAt is when to read again after a dispatch rate limit found no
	// tokens (ms, broker clock), 0 for none; dispatchRate is the
	// subscription's own limit (dispatchrate.go).
	retryAt      int64
	dispatchRate dispatchLimiter
	// readCompacted: a consumer that reads the compacted view attached
	// (compaction.go); the invariants allow the entries it passes over.
	readCompacted bool
	// endRead is the cursor's read past the last entry (endoftopic.go).
	endRead endRead
	// properties are the subscription's properties, nil for none
	// (subscriptionproperties.go).
	properties map[string]string

	// created is when the subscription was created (broker clock);
	// settledAtStart counts the entries its cursor started with as
	// acknowledged; cursorLedger is the id of the ledger Pulsar would keep
	// the durable cursor's state in, 0 until the cursor first records an
	// acknowledgement (internalstats.go).
	created        time.Time
	settledAtStart int64
	cursorLedger   uint64
	// fromFirst is set for a durable subscription created at the earliest
	// position: until it reads or acknowledges, Pulsar's cursor reads from
	// entry -1 of the first ledger.
	fromFirst bool

	gate connGate // holds back deliveries to slow connections (writebuf.go)

	// persisted is the cursor's state as last persisted to the store, when
	// (broker clock), and whether it changed since (persist.go); kept only
	// for a broker of a cluster.
	persisted   *cursor.Cursor
	persistedAt time.Time
	dirty       bool

	// pending holds what open transactions acknowledged (txnsub.go), nil
	// until the first transactional acknowledgement; returnedIdle are the
	// entries an abort gave back while no consumer was attached (their
	// counts outlive the consumers), until the next consumer comes.
	pending      *txn.PendingAcks
	returnedIdle map[int64]bool

	out         meter // messages delivered, for stats
	redelivered meter // messages delivered again, for stats
	bytesOut    int64
	// For stats: the messages acknowledged and the entries expired (by
	// message TTL or a request), and when (broker clock) the subscription
	// last got a FLOW, delivered, was acknowledged, moved its mark-delete
	// position and expired entries.
	acks, expired                                  meter
	lastFlow, lastConsumed, lastAcked, lastMDMoved time.Time
	lastExpired                                    time.Time
}

// topicLog adapts a topic's log to dispatch.Log for one subscription: it
// ends at the topic's max read position, and says how transactions keep
// entries from the subscription's consumers. It is used under the topic's
// lock only.
type topicLog struct {
	t *Topic
	s *Subscription
}

func (l topicLog) End() int64 { return l.t.readEnd() }

func (l topicLog) Info(n int64) dispatch.EntryInfo {
	e := l.t.log.Get(n)
	if e == nil {
		e = l.t.view.Entry(n) // a freed entry the compacted view keeps
	}
	if e == nil {
		return dispatch.EntryInfo{Messages: 1, Key: noneKey}
	}
	info := dispatch.EntryInfo{Messages: e.Messages, Key: e.Key, Size: len(e.Data)}
	if !l.t.name.Persistent {
		return info
	}
	if l.t.policiesLocked().DelayedDelivery.Active {
		info.DeliverAt = e.DeliverAt // with delayed delivery off, at once
	}
	switch {
	case l.t.entrySkip(e):
		info.Skip = dispatch.SkipAck
	case l.s != nil && l.s.pending != nil:
		if free, held := l.s.pending.Held(n); held && free == nil {
			info.Skip = dispatch.SkipHold
		} else if held {
			info.Free = free
		}
	}
	return info
}

// newSubscriptionLocked creates a subscription whose cursor's mark-delete
// position is markDelete.
func (t *Topic) newSubscriptionLocked(name string, durable bool, markDelete int64) *Subscription {
	s := &Subscription{
		topic:     t,
		name:      name,
		durable:   durable,
		cur:       cursor.New(markDelete),
		consumers: map[uint64]*Consumer{},

		created:        t.b.cfg.clock.Now(),
		settledAtStart: markDelete + 1,
	}
	t.subs[name] = s
	if durable && (t.b.cfg.store != nil || t.b.disk != nil) {
		// A new cursor's position is persisted with it, outside the rate
		// limit of its later changes: the first of those goes through.
		s.writeCursorLocked(time.Time{})
	}
	return s
}

// ensureSubscriptionLocked creates a durable subscription at the end of the
// log (Latest) if there is none with this name.
func (t *Topic) ensureSubscriptionLocked(name string) {
	if t.subs[name] == nil {
		t.newSubscriptionLocked(name, true, t.log.End()-1)
	}
}

// dispatcherOptions returns the dispatcher options for a subscription of type
// typ on this topic.
func (s *Subscription) dispatcherOptions(typ dispatch.SubType) dispatch.Options {
	o := dispatch.DefaultOptions(typ)
	o.Topic = s.topic.full
	o.PartitionIndex = s.topic.name.Partition
	o.KeySharedAutoSplitRanges = !s.topic.b.cfg.ksConsistentHash
	switch d := s.topic.b.cfg.failoverDelay; {
	case d < 0:
		o.FailoverDelay = -1
	case d > 0:
		o.FailoverDelay = max(d.Milliseconds(), 1)
	}
	p := s.topic.policiesLocked()
	o.MaxUnackedPerConsumer, o.MaxUnackedPerSubscription = s.unackedLimits(p)
	o.DelayTick = delayTick(p)
	return o
}

// delayTick is the dispatcher's DelayTick under policies p: the delayed
// delivery policy's tickTime (0 or less releases messages at their time).
func delayTick(p *Policies) int64 { return max(p.DelayedDelivery.TickMillis, 1) }

// unackedLimits returns the dispatcher's unacknowledged-message limits
// under policies p: the consumer's and the subscription's, -1 for none.
// Pulsar counts no unacknowledged messages on non-persistent topics, and
// applies no consumer limit on non-durable subscriptions.
func (s *Subscription) unackedLimits(p *Policies) (perConsumer, perSubscription int) {
	perConsumer, perSubscription = *p.MaxUnackedMessagesPerConsumer, *p.MaxUnackedMessagesPerSubscription
	persistent := s.topic.name.Persistent
	if perConsumer == 0 || !s.durable || !persistent {
		perConsumer = -1
	}
	if perSubscription == 0 || !persistent {
		perSubscription = -1
	}
	return perConsumer, perSubscription
}

// applyPoliciesLocked gives the subscription's dispatcher the limits of
// policies p.
func (s *Subscription) applyPoliciesLocked(p *Policies) {
	if s.disp != nil {
		s.disp.SetMaxUnacked(s.unackedLimits(p))
		s.disp.SetDelayTick(delayTick(p))
	}
}

// startPosition returns the mark-delete position for a new subscription:
// before the first entry for Earliest, at the last entry for Latest, or
// before a reader's start message id.
func (t *Topic) startPosition(sub *pb.CommandSubscribe) int64 {
	latest := t.log.End() - 1
	earliest := t.log.Base - 1
	if sub.GetReadCompacted() && len(t.view.Pos) > 0 {
		// A read-compacted consumer from the earliest position starts at
		// the compacted view, which may keep entries the log has freed.
		earliest = min(earliest, t.view.Pos[0]-1)
	}
	initial := latest
	if sub.GetInitialPosition() == pb.CommandSubscribe_Earliest {
		initial = earliest
	}
	if sub.GetDurable() {
		return initial
	}
	id := sub.GetStartMessageId()
	switch {
	case id == nil:
		// No start id: the initial position decides, as for Pulsar's
		// non-durable cursor opened at MessageId.latest.
		return initial
	case int64(id.GetLedgerId()) < 0 || id.GetLedgerId() < t.ledger:
		return earliest
	case id.GetLedgerId() > t.ledger || id.GetEntryId() > math.MaxInt64/2:
		return initial
	}
	// Delivery starts at the given entry, inclusive: the client drops the
	// start message itself when it asked for an exclusive start. A start
	// beyond the last entry falls back to the initial position, as Pulsar's
	// non-durable cursor does.
	if pos := int64(id.GetEntryId()) - 1; pos <= latest {
		return max(pos, earliest)
	}
	return initial
}

// refusal is the error a request is refused with: its code and message.
type refusal struct {
	code pb.ServerError
	msg  string
}

// handleSubscribe attaches a consumer to a subscription, creating the
// topic and the subscription when needed, and answers SUCCESS, or ERROR with
// the code and message Pulsar refuses that subscription with.
func (c *conn) handleSubscribe(sub *pb.CommandSubscribe) {
	reqID := sub.GetRequestId()
	refuse := func(r *refusal) { c.send(protocol.ErrorCommand(reqID, r.code, r.msg)) }
	tn, r := c.checkSubscribe(sub)
	if r != nil {
		refuse(r)
		return
	}
	if cs := c.anyConsumer(sub.GetConsumerId()); cs != nil {
		// The same consumer subscribing again on a live connection: Pulsar
		// answers success for an already-created consumer, and refuses one
		// still being created.
		if c.consumer(cs.ID) == nil {
			refuse(&refusal{pb.ServerError_ServiceNotReady, "Consumer is already present on the connection"})
			return
		}
		c.send(protocol.SuccessCommand(reqID))
		return
	}
	t, err := c.b.lockTopic(tn, c.b.autoCreateAllowed(tn) && sub.GetForceTopicCreation())
	if errors.Is(err, errNoNamespace) || errors.Is(err, errNotServed) {
		refuse(&refusal{pb.ServerError_ServiceNotReady, c.b.notServedMessage(tn)})
		return
	}
	if errors.Is(err, errPartitionPastCount) {
		refuse(&refusal{pb.ServerError_TopicNotFound, "Topic " + tn.String() + " does not exist"})
		return
	}
	if err != nil {
		refuse(&refusal{pb.ServerError_TopicNotFound, "Topic does not exist"})
		return
	}
	typ := dispatch.SubType(sub.GetSubType())
	defer t.mu.Unlock()
	if fail := t.consumerSchemaLocked(sub.GetSchema()); fail != nil {
		refuse(&refusal{fail.Code, fail.Msg})
		return
	}
	if r := t.subscribeRateRefusalLocked(c, sub); r != nil {
		refuse(r)
		return
	}
	s, r := t.subscriptionForLocked(c, sub, typ)
	if r == nil {
		r = s.attachConsumerLocked(c, sub, typ)
	}
	if r != nil {
		refuse(r)
	}
}

// checkSubscribe applies the checks of a SUBSCRIBE that need no topic: its
// topic name, the client's permission, the subscription name, partitioned
// topics and read-compacted subscriptions (only on persistent topics, and
// only Exclusive or Failover).
func (c *conn) checkSubscribe(sub *pb.CommandSubscribe) (TopicName, *refusal) {
	tn, err := ParseTopicName(sub.GetTopic())
	if err == nil {
		if r := c.subscriptionAuthRefusal(tn, sub.GetSubscription()); r != nil {
			return tn, r
		}
	}
	switch {
	case err != nil:
		return tn, &refusal{pb.ServerError_InvalidTopicName, err.Error()}
	case !c.allowed(tn, auth.OpConsume):
		return tn, &refusal{pb.ServerError_AuthorizationError, "Client is not authorized to subscribe"}
	case sub.GetSubscription() == "":
		return tn, &refusal{pb.ServerError_ProducerBusy, "Empty subscription name"}
	case c.b.partitions(tn) > 0:
		return tn, &refusal{pb.ServerError_NotAllowedError,
			fmt.Sprintf("Cannot subscribe to partitioned topic %s directly; subscribe to its partitions", tn)}
	case sub.GetReadCompacted() && !tn.Persistent:
		// A non-persistent topic has no compacted view, whatever the type.
		return tn, &refusal{pb.ServerError_NotAllowedError, "readCompacted only valid on persistent topics"}
	case sub.GetReadCompacted() &&
		(sub.GetSubType() == pb.CommandSubscribe_Shared || sub.GetSubType() == pb.CommandSubscribe_Key_Shared):
		return tn, &refusal{pb.ServerError_NotAllowedError, "readCompacted only allowed on failover or exclusive subscriptions"}
	}
	return tn, nil
}

// subscriptionForLocked returns the subscription a SUBSCRIBE joins, creating
// it (at its start position) when there is none, after the topic's checks:
// not deleted, under its consumer and subscription limits, the same
// durability and, while it has consumers, the same type.
func (t *Topic) subscriptionForLocked(c *conn, sub *pb.CommandSubscribe, typ dispatch.SubType) (*Subscription, *refusal) {
	if t.deleted {
		return nil, &refusal{pb.ServerError_TopicNotFound, "Topic was deleted"}
	}
	if msg, over := t.consumerLimitLocked(); over {
		return nil, &refusal{pb.ServerError_ConsumerBusy, msg}
	}
	s := t.subs[sub.GetSubscription()]
	switch {
	case s == nil:
		if msg, over := t.subscriptionLimitLocked(); over {
			return nil, &refusal{pb.ServerError_NotAllowedError, msg}
		}
		s = t.newSubscriptionLocked(sub.GetSubscription(), sub.GetDurable(), t.startPosition(sub))
		s.fromFirst = sub.GetDurable() && sub.GetInitialPosition() == pb.CommandSubscribe_Earliest
		// Only the SUBSCRIBE that creates the subscription gives it
		// properties (subscriptionproperties.go).
		s.properties = properties(sub.GetSubscriptionProperties())
		if s.persisted != nil {
			s.saveCursorLocked() // with its properties and start
		}
	case s.durable && !sub.GetDurable():
		return nil, &refusal{pb.ServerError_NotAllowedError, "Durable subscription with the same name already exists."}
	case !s.durable && sub.GetDurable():
		return nil, &refusal{pb.ServerError_NotAllowedError, "NonDurable subscription with the same name already exists."}
	}
	if len(s.consumers) > 0 && s.typ != typ {
		return nil, &refusal{pb.ServerError_ConsumerBusy, fmt.Sprintf("Subscription is of different type. Active "+
			"subscription type of '%s' is different than the connecting consumer's type '%s'.", s.typ, typ)}
	}
	if msg, over := t.sameAddressConsumerLimitLocked(c); over {
		s.dropIfUnusedLocked()
		return nil, &refusal{pb.ServerError_ConsumerBusy, msg}
	}
	if s.consumerLimitReachedLocked(typ == dispatch.Exclusive) {
		return nil, &refusal{pb.ServerError_ConsumerBusy, "Subscription reached max consumers limit"}
	}
	t.subscribedReplicatedLocked(s, sub)
	return s, nil
}

// dropIfUnusedLocked removes a non-durable subscription that has no
// consumer, as after a refused first SUBSCRIBE.
func (s *Subscription) dropIfUnusedLocked() {
	if len(s.consumers) == 0 && !s.durable {
		delete(s.topic.subs, s.name)
	}
}

// consumerSpec is what the dispatcher needs to know of a SUBSCRIBE's
// consumer.
func consumerSpec(sub *pb.CommandSubscribe) dispatch.ConsumerSpec {
	spec := dispatch.ConsumerSpec{Name: sub.GetConsumerName(), Priority: sub.GetPriorityLevel(), Epoch: -1,
		ReadCompacted: sub.GetReadCompacted()}
	if sub.ConsumerEpoch != nil {
		spec.Epoch = int64(sub.GetConsumerEpoch())
	}
	if ks := sub.GetKeySharedMeta(); ks != nil {
		spec.KeySharedMode = dispatch.KeySharedMode(ks.GetKeySharedMode())
		spec.AllowOutOfOrder = ks.GetAllowOutOfOrderDelivery()
		for _, r := range ks.GetHashRanges() {
			spec.Ranges = append(spec.Ranges, dispatch.Range{Start: r.GetStart(), End: r.GetEnd()})
		}
	}
	return spec
}

// attachConsumerLocked attaches SUBSCRIBE's consumer to the subscription
// and to its connection, answers SUCCESS and dispatches. A subscription
// without consumers takes the type of its new consumer. The dispatcher may
// refuse the consumer (a second Exclusive consumer, overlapping or
// mismatched Key_Shared settings).
func (s *Subscription) attachConsumerLocked(c *conn, sub *pb.CommandSubscribe, typ dispatch.SubType) *refusal {
	t := s.topic
	if len(s.consumers) == 0 && (s.disp == nil || s.typ != typ) {
		s.typ = typ
		s.disp = dispatch.New(s.dispatcherOptions(typ), s.cur)
		s.switches = 0
	}
	spec := consumerSpec(sub)
	s.nextID++
	s.returnedIdle = nil
	spec.ID = s.nextID
	s.disp.SetTime(t.b.cfg.clock.Now().UnixMilli())
	before, hadActive := s.disp.Active()
	if err := s.disp.AddConsumer(spec); err != nil {
		s.dropIfUnusedLocked()
		code, msg := addConsumerError(err, s.disp.Snapshot(), spec, typ)
		return &refusal{code, msg}
	}
	cons := &Consumer{
		ID: sub.GetConsumerId(), Name: spec.Name, conn: c, sub: s, dispID: spec.ID,
		priority: sub.GetPriorityLevel(), metadata: properties(sub.GetMetadata()), since: time.Now(),
		autoConsume:   sub.GetSchema().GetType() == pb.Schema_AutoConsume,
		readCompacted: sub.GetReadCompacted(),
	}
	s.consumers[spec.ID] = cons
	s.readCompacted = s.readCompacted || cons.readCompacted
	c.mu.Lock()
	c.consumers[cons.ID] = cons
	c.mu.Unlock()
	c.b.emit(Event{Kind: EventConsumerOpened, Topic: t.full, Subscription: s.name, Consumer: cons.Name,
		ConsumerID: cons.ID, Remote: c.remote})
	if s.migrateConsumersLocked(cons) {
		return nil // no answer: the consumer moves to the green cluster
	}
	s.answerLoadedLocked(cons, sub.GetRequestId())
	if after, ok := s.disp.Active(); typ == dispatch.Failover && ok && hadActive && after == before {
		// The active consumer did not change: the newcomer alone is told
		// which one it is (the others hear of a change after the delay).
		s.tellActiveLocked(cons, after)
	}
	s.dispatchLocked()
	return nil
}

// addConsumerError maps a refusal of dispatch.AddConsumer to the error code
// and message Pulsar 4.0.8 answers with. snap describes the subscription the
// consumer tried to join.
func addConsumerError(err error, snap dispatch.Snapshot, spec dispatch.ConsumerSpec, typ dispatch.SubType) (pb.ServerError, string) {
	switch {
	case errors.Is(err, dispatch.ErrConsumerAssign):
		return pb.ServerError_ConsumerAssignError, err.Error()
	case errors.Is(err, dispatch.ErrKeySharedModeMismatch):
		return pb.ServerError_ConsumerBusy, fmt.Sprintf("Subscription is of different type. Active subscription "+
			"key_shared mode of '%s' is different than the connecting consumer's key_shared mode '%s'.",
			keySharedModeName(snap.KeySharedMode), keySharedModeName(spec.KeySharedMode))
	case errors.Is(err, dispatch.ErrOutOfOrderMismatch) && snap.KeySharedAllowOutOfOrder:
		return pb.ServerError_ConsumerBusy, "Subscription is of different type. Active subscription allows out " +
			"of order delivery while the connecting consumer does not allow it."
	case errors.Is(err, dispatch.ErrOutOfOrderMismatch):
		return pb.ServerError_ConsumerBusy, "Subscription is of different type. Active subscription does not " +
			"allow out of order delivery while the connecting consumer allows it."
	case typ == dispatch.Exclusive:
		return pb.ServerError_ConsumerBusy, "Exclusive consumer is already connected"
	}
	return pb.ServerError_ConsumerBusy, err.Error()
}

// keySharedModeName is a Key_Shared mode as Pulsar spells it.
func keySharedModeName(m dispatch.KeySharedMode) string {
	if m == dispatch.Sticky {
		return "STICKY"
	}
	return "AUTO_SPLIT"
}

// announceActiveLocked tells every consumer of a Failover subscription which
// one is active, once a new active consumer starts being served (after
// activeConsumerFailoverDelayTimeMillis), as Pulsar's
// notifyActiveConsumerChanged does.
func (s *Subscription) announceActiveLocked() {
	if s.typ != dispatch.Failover || s.disp.Switches() == s.switches {
		return
	}
	s.switches = s.disp.Switches()
	id, ok := s.disp.Active()
	if !ok {
		return
	}
	for _, cons := range s.consumers {
		s.tellActiveLocked(cons, id)
	}
}

// tellActiveLocked sends a Failover consumer ACTIVE_CONSUMER_CHANGE saying
// whether it is the active one. A consumer that has not sent its first FLOW
// yet is told then: pulsar-client-go registers a consumer on its connection
// after SUBSCRIBE's answer, and drops a change that comes earlier; Pulsar
// sends the change from another thread, in practice after that point.
func (s *Subscription) tellActiveLocked(cons *Consumer, active uint64) {
	cmd := protocol.Base(pb.BaseCommand_ACTIVE_CONSUMER_CHANGE, &pb.CommandActiveConsumerChange{
		ConsumerId: proto.Uint64(cons.ID), IsActive: proto.Bool(cons.dispID == active),
	})
	if !cons.flowed {
		cons.activeNote = cmd
		return
	}
	cons.conn.send(cmd)
}

// dispatchLocked asks the dispatcher what to send now and sends it.
func (s *Subscription) dispatchLocked() { s.dispatchAtLocked(s.topic.b.cfg.clock.Now()) }

// dispatchAtLocked gives the dispatcher the time (a timer passes its own),
// tells the consumers about a completed Failover switch, sends what the
// dispatcher decides, and registers its next timer.
func (s *Subscription) dispatchAtLocked(now time.Time) {
	if s.disp == nil || s.topic.released {
		return // a timer of a topic its broker gave up
	}
	t := s.topic
	s.disp.SetTime(now.UnixMilli())
	if s.retryAt != 0 && now.UnixMilli() >= s.retryAt {
		s.retryAt = 0 // the read a dispatch rate put off
	}
	defer s.armTimerLocked()
	if len(s.consumers) == 0 {
		return
	}
	s.announceActiveLocked()
	var wall time.Time // read once, at the first delivery: the meters' clock
	var at time.Time   // and the broker clock's time then
	for _, d := range s.deliveriesLocked(now) {
		cons := s.consumers[d.Consumer]
		e := t.log.Get(d.Entry)
		if d.Compacted {
			e = t.view.Entry(d.Entry)
		}
		if cons == nil || e == nil {
			continue
		}
		// The delivery is reported before the client can see it.
		t.b.emit(Event{
			Kind: EventDelivered, Topic: t.full, Subscription: s.name, Consumer: cons.Name, ConsumerID: cons.ID,
			Remote: cons.conn.remote, ID: t.eventID(d.Entry), RedeliveryCount: d.RedeliveryCount,
		})
		msg := protocol.Message{
			ConsumerID: cons.ID, Entry: uint64(d.Entry), Partition: int32(t.name.Partition),
			AckSet: d.AckSet, Epoch: d.Epoch,
		}
		if d.RedeliveryCount > 0 {
			msg.RedeliveryCount = uint32(d.RedeliveryCount)
		}
		if t.name.Persistent {
			msg.Ledger = t.ledger
		} else {
			msg.Entry = 0 // a non-persistent topic's messages carry (0, 0), as messageID says
		}
		cons.conn.sendMessage(&msg, cons.conn.entryBytes(e))
		if wall.IsZero() {
			wall = time.Now()
			at = t.b.cfg.clock.Now()
		}
		cons.lastConsumed, s.lastConsumed = at, at
		cons.out.add(wall, int64(d.Messages))
		cons.bytesOut += int64(len(e.Data))
		s.out.add(wall, int64(d.Messages))
		s.bytesOut += int64(len(e.Data))
		if d.RedeliveryCount > 0 {
			cons.redelivered.add(wall, int64(d.Messages))
			s.redelivered.add(wall, int64(d.Messages))
		}
		if !t.name.Persistent {
			// Non-persistent topics keep no acknowledgement state: what is sent
			// is gone from the subscription.
			s.disp.Ack(d.Entry)
		}
	}
	s.readAtEndLocked()
	t.replicatedSubMovedLocked(s)
	t.trimLocked()
}

// eventID is the MessageID of entry n for events and inspection.
func (t *Topic) eventID(n int64) MessageID {
	return MessageID{Ledger: int64(t.ledger), Entry: n, Partition: int32(t.name.Partition), BatchIndex: -1}
}

// removeConsumerLocked detaches a consumer from the subscription. Its pending
// entries go back to the subscription with their counts unchanged. A
// non-durable subscription goes with its last consumer, except while a seek
// resets it (Pulsar keeps it for the consumers to come back to). The close
// is reported, with reason, before the deliveries it causes. It reports
// whether the consumer was attached.
func (s *Subscription) removeConsumerLocked(cons *Consumer, reason string) bool {
	if s.consumers[cons.dispID] != cons {
		return false
	}
	delete(s.consumers, cons.dispID)
	s.disp.SetTime(s.topic.b.cfg.clock.Now().UnixMilli())
	if s.resetting {
		// A seek leaves Failover standbys idle until the next change.
		s.disp.RemoveForReset(cons.dispID)
	} else {
		s.disp.RemoveConsumer(cons.dispID)
	}
	s.topic.b.emit(Event{Kind: EventConsumerClosed, Topic: s.topic.full, Subscription: s.name,
		Consumer: cons.Name, ConsumerID: cons.ID, Remote: cons.conn.remote, Reason: reason})
	if len(s.consumers) == 0 {
		s.cancelWaitingReadLocked()
	}
	if len(s.consumers) == 0 && !s.durable && !s.resetting {
		delete(s.topic.subs, s.name)
		return true
	}
	s.dispatchLocked()
	return true
}
