package view

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Key identifies a message's entry on a topic (a partition is a topic of its
// own). The messages of a batch share their entry, and its life.
type Key struct {
	Topic         string
	Ledger, Entry int64
	// Cluster is "" for an entry of the store's own cluster, and names the
	// cluster of an entry of another, in the events of several clusters
	// (see Store): each cluster numbers its ledgers on its own.
	Cluster string
}

// String formats the key as "ledger:entry on topic", followed by "on
// cluster c" for another cluster's entry.
func (k Key) String() string {
	if k.Cluster != "" {
		return fmt.Sprintf("%d:%d on %s on cluster %s", k.Ledger, k.Entry, k.Topic, k.Cluster)
	}
	return fmt.Sprintf("%d:%d on %s", k.Ledger, k.Entry, k.Topic)
}

// keyOf returns the key of id on topic, on the store's own cluster.
func keyOf(topic string, id broker.MessageID) Key {
	return Key{Topic: topic, Ledger: id.Ledger, Entry: id.Entry}
}

// keyOf returns the key of id on e's topic and cluster.
func (b *builder) keyOf(e *broker.Event, id broker.MessageID) Key {
	return Key{Topic: e.Topic, Ledger: id.Ledger, Entry: id.Entry, Cluster: b.foreign(e.Cluster)}
}

// foreign returns the name of cluster for a Key: "" for the store's own.
func (b *builder) foreign(cluster string) string {
	if !b.geo || cluster == b.local {
		return ""
	}
	return cluster
}

// MarkKind names one thing that happened in a message's life.
type MarkKind string

// The kinds of Mark. The broker cannot tell a negative acknowledgement from
// an acknowledgement timeout: both reach it as the same redelivery request,
// so both are MarkAsked.
const (
	MarkPublished    MarkKind = "published"
	MarkDelivered    MarkKind = "delivered"
	MarkAcked        MarkKind = "acked"
	MarkAsked        MarkKind = "redelivery-asked"
	MarkClosed       MarkKind = "closed"        // the client closed the consumer
	MarkCrashed      MarkKind = "crashed"       // the consumer's connection dropped
	MarkBrokerClosed MarkKind = "broker-closed" // the broker closed the consumer
	MarkExpired      MarkKind = "expired"
	MarkSeek         MarkKind = "seek"
	MarkDeadLetter   MarkKind = "dead-letter"  // the copy a dead-letter policy produced
	MarkRetryLetter  MarkKind = "retry-letter" // the copy a retry policy produced

	// Transactions: an acknowledgement in a transaction (held until it
	// ends; a commit then reports MarkAcked with its Txn), the abort that
	// gave the message back, and the end of the transaction that
	// produced it.
	MarkTxnAcked     MarkKind = "txn-acked"
	MarkTxnReturned  MarkKind = "txn-returned"
	MarkTxnCommitted MarkKind = "txn-committed"
	MarkTxnAborted   MarkKind = "txn-aborted"

	// The topic's moves: a broker gave the topic up (an unload, a stop, a
	// crash: Reason "unload", "stop" or "crash") or loaded it ("loaded" from its
	// ledger, "created" anew). What a broker holds in memory (who holds
	// what, the redelivery counts) ends with an unload; the next broker
	// starts from the ledger.
	MarkUnloaded MarkKind = "topic-unloaded"
	MarkLoaded   MarkKind = "topic-loaded"
)

// Mark is one event in a message's life.
type Mark struct {
	Seq          uint64
	Time         time.Time
	Kind         MarkKind
	Subscription string
	Consumer     string
	// Count is the redelivery count a delivery carried.
	Count int32
	// Cumulative marks an acknowledgement of every entry up to one.
	Cumulative bool
	// Producer published the message or its copy.
	Producer string
	// Copy is where a dead-letter or retry-letter copy went, and CopyIndex
	// its index in a batch (-1 when the copy is an entry of its own).
	Copy      Key
	CopyIndex int32
	// Target is the entry a seek moved the subscription to.
	Target int64
	// Reason is the broker's word for a close: "client", "disconnect" or
	// "broker".
	Reason string
	// Txn is the transaction concerned, "(most,least)", or "".
	Txn string
	// Broker is the index, in its cluster, of the broker that reported the
	// event. Clustered is set when that cluster has several brokers: the
	// view then names the broker of each mark.
	Broker    int
	Clustered bool
	// Cluster names the cluster of the broker that reported the event, in
	// the events of several clusters (see Store); "" otherwise.
	Cluster string
	// ReplicatedFrom and Source are, for the publication of a copy that a
	// geo-replicator wrote, the cluster it was copied from and the
	// original's ledger:entry there.
	ReplicatedFrom, Source string

	// order is the event's place among those the builder read: marks are
	// compared by it, as Seq is each broker's own.
	order int
}

// Where names the broker of the mark, "broker 1", in a cluster of several
// brokers, and its cluster, "cluster b · broker 1" or "cluster b", in the
// events of several clusters; "" for a lone broker's.
func (m Mark) Where() string {
	switch {
	case m.Cluster != "" && m.Clustered:
		return fmt.Sprintf("cluster %s · broker %d", m.Cluster, m.Broker)
	case m.Cluster != "":
		return "cluster " + m.Cluster
	case m.Clustered:
		return fmt.Sprintf("broker %d", m.Broker)
	}
	return ""
}

// MoveLabel says in a few words what a topic's unload or load was:
// "unloaded from broker 0 (crash)", "loaded on broker 1"; "" for the
// other kinds.
func (m Mark) MoveLabel() string {
	on := ""
	switch m.Kind {
	case MarkUnloaded:
		if m.Clustered {
			on = fmt.Sprintf(" from broker %d", m.Broker)
		}
		if m.Reason == "crash" || m.Reason == "stop" {
			return "unloaded" + on + " (" + m.Reason + ")"
		}
		return "unloaded" + on
	case MarkLoaded:
		if m.Clustered {
			on = fmt.Sprintf(" on broker %d", m.Broker)
		}
		if m.Reason == "created" {
			return "created" + on + " (nothing in the store)"
		}
		return "loaded" + on
	}
	return ""
}

// Sentence says what the mark means, as a line of a text timeline.
func (m Mark) Sentence() string {
	switch m.Kind {
	case MarkPublished:
		if m.Txn != "" {
			return "published by " + m.Producer + " in transaction " + m.Txn
		}
		if m.ReplicatedFrom != "" {
			return fmt.Sprintf("published by %s: the copy of %s on cluster %s", m.Producer, m.Source, m.ReplicatedFrom)
		}
		return "published by " + m.Producer
	case MarkTxnAcked:
		return fmt.Sprintf("acked by %s on %s in transaction %s: held until it ends", m.Consumer, m.Subscription, m.Txn)
	case MarkTxnReturned:
		return fmt.Sprintf("given back to %s by the abort of transaction %s", m.Subscription, m.Txn)
	case MarkTxnCommitted:
		return "transaction " + m.Txn + " committed: consumers may read it"
	case MarkTxnAborted:
		return "transaction " + m.Txn + " aborted"
	case MarkDelivered:
		return fmt.Sprintf("delivered to %s on %s with redelivery count %d", m.Consumer, m.Subscription, m.Count)
	case MarkAcked:
		if m.Txn != "" {
			return fmt.Sprintf("acked on %s by the commit of transaction %s: the cursor moves past it", m.Subscription, m.Txn)
		}
		how := "acked"
		if m.Cumulative {
			how = "acked cumulatively"
		}
		return fmt.Sprintf("%s by %s on %s: the cursor moves past it", how, m.Consumer, m.Subscription)
	case MarkAsked:
		return m.Consumer + " asked for redelivery (nack or ack timeout)"
	case MarkClosed, MarkCrashed, MarkBrokerClosed:
		return fmt.Sprintf("%s closed (%s) while holding it: back to %s, count unchanged", m.Consumer, m.Reason, m.Subscription)
	case MarkExpired:
		return "expired by message TTL on " + m.Subscription
	case MarkSeek:
		return fmt.Sprintf("%s reset by a seek to entry %d: to be delivered again", m.Subscription, m.Target)
	case MarkDeadLetter:
		return fmt.Sprintf("moved to the dead-letter topic %s by %s (copy %s)", m.Copy.Topic, m.Producer, m.CopyID())
	case MarkRetryLetter:
		return fmt.Sprintf("copied to the retry topic %s by %s (copy %s)", m.Copy.Topic, m.Producer, m.CopyID())
	case MarkUnloaded:
		return "topic " + m.MoveLabel() + ": the consumers' holds and the redelivery counts end with it"
	case MarkLoaded:
		if m.Reason == "created" {
			return "topic " + m.MoveLabel()
		}
		return "topic " + m.MoveLabel() + " from the store: what was not acked is delivered again, counts from 0"
	}
	return string(m.Kind)
}

// CopyID formats the id of a copy: "ledger:entry", and the batch index
// after a "#" when the copy is in a batch.
func (m Mark) CopyID() string {
	if m.CopyIndex >= 0 {
		return fmt.Sprintf("%d:%d #%d", m.Copy.Ledger, m.Copy.Entry, m.CopyIndex)
	}
	return fmt.Sprintf("%d:%d", m.Copy.Ledger, m.Copy.Entry)
}

// Life is what happened to one message (one entry) as the broker saw it.
type Life struct {
	Key
	// Published is the publish mark; its Seq is 0 when the history no longer
	// holds it.
	Published Mark
	// Marks lists everything that happened to the message, in event order.
	Marks []Mark
	// Subs are the subscriptions that delivered or settled the message, in
	// the order they first did.
	Subs []*SubLife
	// Copies are the dead-letter and retry-letter copies made of it.
	Copies []Mark
	// TxnEnd is the commit or abort of the transaction that produced it,
	// nil when none did or it has not ended.
	TxnEnd *Mark
	// Moves are the topic's unloads and loads during the message's life
	// (also in Marks): those after its first mark and before its last, or
	// later while a subscription that got it has not settled it.
	Moves []Mark
	// Replicas are, in the events of several clusters, the lives of the
	// copies geo-replicators wrote of the message on the other clusters
	// (each a Life of its own, its Key naming its cluster); their marks are
	// in Marks too, each naming its cluster.
	Replicas []*Life

	moved  int   // the topic's moves considered so far (builder.moves)
	origin *Life // for a replica, the life of the original
}

// SubLife is a message's life on one subscription.
type SubLife struct {
	Name string
	// Lanes has one lane per consumer that got or settled the message.
	Lanes []*Lane
	// Marks are the subscription's own marks: expiry, seeks, the commit
	// or abort of a transaction that acknowledged the message.
	Marks []Mark
	// Outcome is where the message stands on the subscription.
	Outcome Outcome

	settled *Mark // the ack or expiry that settled the message, nil if none
	txnHeld *Mark // the acknowledgement in a transaction not yet ended
}

// Lane is one consumer's part in a message's life on a subscription.
type Lane struct {
	Consumer   string
	Deliveries []*Delivery
	// Acks are acknowledgements by this consumer that ended no delivery of
	// its own (another consumer held the message, or nobody did).
	Acks []Mark
}

// Delivery is one delivery of a message to a consumer and what ended it.
type Delivery struct {
	At Mark
	// End is the ack, redelivery request, close, crash or expiry that ended
	// the consumer's hold on the message; nil while it still holds it.
	End *Mark
}

// OutcomeKind classifies where a message stands on a subscription.
type OutcomeKind string

// The outcomes of a message on a subscription.
const (
	OutcomeAcked        OutcomeKind = "acked"
	OutcomeDeadLettered OutcomeKind = "dead-lettered"
	OutcomeRetried      OutcomeKind = "retry-lettered"
	OutcomeExpired      OutcomeKind = "expired"
	OutcomeHeld         OutcomeKind = "held"
	OutcomeTxnHeld      OutcomeKind = "txn-held"
	OutcomeWaiting      OutcomeKind = "waiting"
)

// Outcome is where a message stands on a subscription, in a phrase.
type Outcome struct {
	Kind OutcomeKind
	Text string
}

// Deliveries counts the message's deliveries on every subscription, and
// returns the highest redelivery count among them.
func (l *Life) Deliveries() (n int, maxCount int32) {
	for _, m := range l.Marks {
		if m.Kind == MarkDelivered {
			n++
			maxCount = max(maxCount, m.Count)
		}
	}
	return n, maxCount
}

// Start and End return the times of the first and last marks.
func (l *Life) Start() time.Time { return l.Marks[0].Time }

// End returns the time of the last mark.
func (l *Life) End() time.Time { return l.Marks[len(l.Marks)-1].Time }

// Clustered reports whether the life's events came from a cluster of
// several brokers, whose marks name their broker.
func (l *Life) Clustered() bool { return len(l.Marks) > 0 && l.Marks[0].Clustered }

// Geo reports whether the life's events came from several clusters, whose
// marks name their cluster.
func (l *Life) Geo() bool { return len(l.Marks) > 0 && l.Marks[0].Cluster != "" }

// Where names the places the life's marks come from, as a marks table's
// column heads them: "cluster", "broker" or "" for a lone broker's.
func (l *Life) Where() string {
	switch {
	case l.Geo():
		return "cluster"
	case l.Clustered():
		return "broker"
	}
	return ""
}

// String draws the life as text, one mark a line with its time after the
// first mark (and its broker, in a cluster of several).
func (l *Life) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "message %d:%d on %s\n", l.Ledger, l.Entry, l.Topic)
	for _, m := range l.Marks {
		where := m.Where()
		if where != "" {
			where += "  "
		}
		fmt.Fprintf(&sb, "  %+8.3fs  %s%s\n", m.Time.Sub(l.Start()).Seconds(), where, m.Sentence())
	}
	for _, s := range l.Subs {
		fmt.Fprintf(&sb, "  on %s: %s\n", s.Name, s.Outcome.Text)
	}
	for _, r := range l.Replicas {
		for _, s := range r.Subs {
			fmt.Fprintf(&sb, "  on %s of cluster %s: %s\n", s.Name, r.Published.Cluster, s.Outcome.Text)
		}
	}
	return sb.String()
}

// Store gives the messages of a stored entry; *broker.Broker is one. A
// store that also tells its cluster's brokers, as *broker.Broker does
// (Brokers), makes the lives of a cluster of several name the broker of
// each mark. A store that tells its cluster's name and the clusters of its
// configuration store, as *broker.Broker does (ClusterName, Clusters),
// makes the lives read from the events of several clusters (Event.Cluster)
// name the cluster of each mark, keep each cluster's entries apart (Key's
// Cluster) and join to each message the lives of the copies replicators
// wrote of it on the other clusters (Life.Replicas).
type Store interface {
	Entry(topic string, id broker.MessageID) (broker.Entry, error)
}

// clustered reports whether store is a broker of a cluster of several.
func clustered(store Store) bool {
	c, ok := store.(interface{ Brokers() []broker.BrokerInfo })
	return ok && len(c.Brokers()) > 1
}

// geoOf returns the store's cluster and whether its configuration store
// lists several clusters.
func geoOf(store Store) (local string, geo bool) {
	c, ok := store.(interface {
		ClusterName() string
		Clusters() []string
	})
	if !ok {
		return "", false
	}
	return c.ClusterName(), len(c.Clusters()) > 1
}

// Lives reads the messages' lives from events, for the entries want accepts
// (every entry when want is nil), in the order they first appear. A publish
// event carries the properties of a batch's first message only: with a
// store (nil for none), the copies a dead-letter or retry policy produced in
// a batch are read from the stored entry, so that each finds its origin.
func Lives(events []broker.Event, store Store, want func(Key) bool) []*Life {
	b := newBuilder(store, want)
	for i := range events {
		b.add(&events[i])
	}
	return b.finish()
}

func newBuilder(store Store, want func(Key) bool) *builder {
	b := &builder{want: want, store: store, lives: map[Key]*Life{}, held: map[holder]map[Key]*Delivery{},
		touched: map[subKey][]*Life{}, produced: map[string][]Key{}, moves: map[subKey][]Mark{},
		joined: map[Key]bool{}, clustered: store != nil && clustered(store)}
	if store != nil {
		b.local, b.geo = geoOf(store)
	}
	return b
}

// finish brings the lives up to date with the events added so far, and
// returns them, less the replicas joined to their original's life. More
// events may be added afterwards.
func (b *builder) finish() []*Life {
	out := b.order
	if len(b.joined) > 0 {
		out = make([]*Life, 0, len(b.order))
	}
	for _, l := range b.order {
		b.addMoves(l)
		l.finish()
		if len(b.joined) > 0 && l.origin == nil {
			out = append(out, l)
		}
	}
	return out
}

// addMoves adds to l the moves of its topic that it has not considered yet
// and that fall in its life: after its first mark, and before its last one
// or while a subscription that got it has not settled it. A move after the
// last mark of a settled message is looked at again next time, as a seek
// may bring the message back.
func (b *builder) addMoves(l *Life) {
	ms := b.moves[subKey{l.Cluster, l.Topic, ""}]
	if l.moved == len(ms) || len(l.Marks) == 0 {
		return
	}
	first, last := l.Marks[0].order, l.Marks[0].order
	for i := len(l.Marks) - 1; i >= 0; i-- {
		if k := l.Marks[i].Kind; k != MarkUnloaded && k != MarkLoaded {
			last = l.Marks[i].order
			break
		}
	}
	settled := len(l.Subs) > 0
	for _, s := range l.Subs {
		settled = settled && s.settled != nil
	}
	for ; l.moved < len(ms); l.moved++ {
		m := ms[l.moved]
		if m.order < first {
			continue
		}
		if m.order > last && settled {
			return
		}
		l.Moves = append(l.Moves, m)
		i := len(l.Marks)
		for i > 0 && l.Marks[i-1].order > m.order {
			i--
		}
		l.Marks = slices.Insert(l.Marks, i, m)
	}
}

// finish orders the subscriptions by name, says which one each copy came
// from, and works out the outcomes.
func (l *Life) finish() {
	sort.SliceStable(l.Subs, func(i, j int) bool { return l.Subs[i].Name < l.Subs[j].Name })
	for i := range l.Copies {
		c := &l.Copies[i]
		if c.Subscription == "" {
			c.Subscription = l.copySource(*c)
		}
		for j := range l.Marks {
			if l.Marks[j].order == c.order {
				l.Marks[j].Subscription = c.Subscription
			}
		}
	}
	for _, s := range l.Subs {
		s.Outcome = outcomeOf(l, s)
	}
}

// copySource guesses the subscription whose consumer produced copy c, when
// the copy does not say (Java's REAL_SUBSCRIPTION): the one named in the
// producer's name (pulsar-client-go names its dead-letter producer
// "topic-subscription-consumer-random-DLQ"), else the one whose consumer
// got the latest delivery before the copy and still held it.
func (l *Life) copySource(c Mark) string {
	best := ""
	for _, s := range l.Subs {
		if strings.Contains(c.Producer, "-"+s.Name+"-") && len(s.Name) > len(best) {
			best = s.Name
		}
	}
	if best != "" {
		return best
	}
	var latest int
	for _, s := range l.Subs {
		for _, ln := range s.Lanes {
			for _, d := range ln.Deliveries {
				if d.At.order < c.order && (d.End == nil || d.End.order > c.order) && d.At.order > latest {
					best, latest = s.Name, d.At.order
				}
			}
		}
	}
	return best
}

// LifeOf returns the life of one entry, or nil when the events never
// mention it. store is as for Lives.
func LifeOf(events []broker.Event, store Store, k Key) *Life {
	ls := Lives(events, store, func(o Key) bool { return o == k })
	if len(ls) == 0 {
		return nil
	}
	return ls[0]
}

// Busiest returns the lives with the most marks first, at most n of them
// (all when n <= 0); ties keep event order.
func Busiest(lives []*Life, n int) []*Life {
	out := append([]*Life(nil), lives...)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Marks) > len(out[j].Marks) })
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// holder identifies one consumer: a name may come back on a new connection,
// and two consumers may share a name; their connections tell them apart.
type holder struct {
	cluster, topic, sub, consumer string
	id                            uint64
	remote                        string
}

func (b *builder) holderOf(e *broker.Event) holder {
	return holder{b.foreign(e.Cluster), e.Topic, e.Subscription, e.Consumer, e.ConsumerID, e.Remote}
}

// subKey names a subscription (a topic, when sub is "") on a cluster (""
// for the store's own).
type subKey struct{ cluster, topic, sub string }

// builder follows events and keeps, per consumer, the deliveries it holds.
type builder struct {
	// produced lists the entries each transaction produced, by topic.
	produced map[string][]Key
	want     func(Key) bool
	store    Store
	lives    map[Key]*Life
	order    []*Life
	held     map[holder]map[Key]*Delivery
	touched  map[subKey][]*Life // lives per subscription, for expiry and seeks
	// moves are the unloads and loads of each topic, in event order.
	moves map[subKey][]Mark
	// joined are the replicas whose life joins their original's.
	joined map[Key]bool
	// n counts the events read; clustered is set for the events of a
	// cluster of several brokers, geo for those of several clusters, local
	// naming the store's cluster.
	n         int
	clustered bool
	geo       bool
	local     string
}

func (b *builder) wanted(k Key) bool { return b.want == nil || b.want(k) || b.joined[k] }

// mark appends m to l's marks, and to its original's when l is a replica.
func (l *Life) mark(m Mark) {
	l.Marks = append(l.Marks, m)
	if l.origin != nil {
		l.origin.Marks = append(l.origin.Marks, m)
	}
}

// life returns the life of k, created on first use.
func (b *builder) life(k Key) *Life {
	l := b.lives[k]
	if l == nil {
		l = &Life{Key: k}
		b.lives[k] = l
		b.order = append(b.order, l)
	}
	return l
}

// sub returns the life's part on a subscription, created on first use.
func (b *builder) sub(l *Life, name string) *SubLife {
	for _, s := range l.Subs {
		if s.Name == name {
			return s
		}
	}
	s := &SubLife{Name: name}
	l.Subs = append(l.Subs, s)
	sk := subKey{l.Cluster, l.Topic, name}
	b.touched[sk] = append(b.touched[sk], l)
	return s
}

// lane returns the subscription's lane of a consumer, created on first use.
func (s *SubLife) lane(consumer string) *Lane {
	for _, ln := range s.Lanes {
		if ln.Consumer == consumer {
			return ln
		}
	}
	ln := &Lane{Consumer: consumer}
	s.Lanes = append(s.Lanes, ln)
	return ln
}

func (b *builder) markOf(e *broker.Event, kind MarkKind) Mark {
	m := Mark{Seq: e.Seq, Time: e.Time, Kind: kind, Subscription: e.Subscription, Consumer: e.Consumer,
		Count: e.RedeliveryCount, Cumulative: e.Cumulative, Producer: e.Producer, Reason: e.Reason,
		Broker: e.Broker, Clustered: b.clustered, order: b.n}
	if b.geo {
		m.Cluster = e.Cluster
	}
	if e.Txn != nil {
		m.Txn = e.Txn.String()
	}
	return m
}

// consumerEvent reports whether e is something a consumer did or got.
func consumerEvent(e *broker.Event) bool {
	switch e.Kind {
	case broker.EventDelivered, broker.EventRedeliveryAsked, broker.EventConsumerOpened,
		broker.EventConsumerClosed, broker.EventTxnAcked:
		return true
	case broker.EventAcked:
		return e.Txn == nil // a commit's acks are the transaction's
	}
	return false
}

func (b *builder) add(e *broker.Event) {
	b.n++
	if e.Consumer == "" && consumerEvent(e) {
		// A consumer without a name (a pulsar-client-go reader's) is named
		// by its id, so that lanes and sentences have a name to show.
		named := *e
		named.Consumer = fmt.Sprintf("unnamed consumer %d", e.ConsumerID)
		e = &named
	}
	switch e.Kind {
	case broker.EventPublished:
		b.published(e)
	case broker.EventDelivered:
		b.delivered(e)
	case broker.EventAcked:
		if e.Txn != nil {
			b.committed(e)
			return
		}
		b.acked(e)
	case broker.EventTxnAcked:
		b.txnAcked(e)
	case broker.EventTxnReturned:
		b.txnReturned(e)
	case broker.EventTxnCommitted, broker.EventTxnAborted:
		b.txnEnded(e)
	case broker.EventRedeliveryAsked:
		h := b.holderOf(e)
		if len(e.IDs) == 0 {
			b.release(h, nil, b.markOf(e, MarkAsked))
			return
		}
		keys := make([]Key, len(e.IDs))
		for i, id := range e.IDs {
			keys[i] = b.keyOf(e, id)
		}
		b.release(h, keys, b.markOf(e, MarkAsked))
	case broker.EventConsumerClosed:
		kind := MarkClosed
		switch e.Reason {
		case "disconnect":
			kind = MarkCrashed
		case "broker":
			kind = MarkBrokerClosed
		}
		h := b.holderOf(e)
		b.release(h, nil, b.markOf(e, kind))
		delete(b.held, h)
	case broker.EventExpired:
		b.expired(e)
	case broker.EventTopicUnloaded:
		mk := subKey{b.foreign(e.Cluster), e.Topic, ""}
		b.moves[mk] = append(b.moves[mk], b.markOf(e, MarkUnloaded))
	case broker.EventTopicLoaded:
		mk := subKey{b.foreign(e.Cluster), e.Topic, ""}
		b.moves[mk] = append(b.moves[mk], b.markOf(e, MarkLoaded))
	case broker.EventSubscriptionSeek:
		m := b.markOf(e, MarkSeek)
		m.Target = e.ID.Entry
		for _, l := range b.touched[subKey{b.foreign(e.Cluster), e.Topic, e.Subscription}] {
			if l.Ledger == e.ID.Ledger && l.Entry >= e.ID.Entry {
				s := b.sub(l, e.Subscription)
				s.settled = nil
				s.Marks = append(s.Marks, m)
				l.mark(m)
			}
		}
	}
}

func (b *builder) published(e *broker.Event) {
	k := b.keyOf(e, e.ID)
	from, source, origin, replica := b.replicaOf(e)
	if replica && !b.joined[k] && b.wanted(origin) {
		// A replicator's copy of a wanted message: its life joins the
		// original's, and its later events are wanted too.
		o := b.life(origin)
		b.joined[k] = true
		r := b.life(k)
		r.origin = o
		o.Replicas = append(o.Replicas, r)
	}
	if b.wanted(k) {
		l := b.life(k)
		l.Published = b.markOf(e, MarkPublished)
		if replica {
			l.Published.ReplicatedFrom, l.Published.Source = from, source
		}
		l.mark(l.Published)
		if e.Txn != nil {
			tk := b.foreign(e.Cluster) + e.Txn.String()
			b.produced[tk] = append(b.produced[tk], k)
		}
	}
	copies, batched := copiesIn(e, b.store, b.foreign(e.Cluster) == "")
	for i, props := range copies {
		origin, kind, ok := originOf(props)
		origin.Cluster = b.foreign(e.Cluster)
		if !ok || !b.wanted(origin) {
			continue
		}
		l := b.life(origin)
		m := b.markOf(e, kind)
		m.Copy, m.CopyIndex = k, -1
		if batched {
			m.CopyIndex = int32(i)
		}
		m.Subscription = props["REAL_SUBSCRIPTION"]
		l.Copies = append(l.Copies, m)
		l.mark(m)
	}
}

// replicaOf tells, in the events of several clusters, whether e publishes
// the copy a geo-replicator wrote of a message of another cluster: the
// replicator's producer is named pulsar.repl.<source>--><here>, and the
// copy's property __MSG_PROP_REPL_SOURCE_POSITION names the original's
// ledger:entry on the source cluster.
func (b *builder) replicaOf(e *broker.Event) (from, source string, origin Key, ok bool) {
	if !b.geo {
		return "", "", Key{}, false
	}
	source = e.Properties[replSourcePosition]
	clusters, isRepl := strings.CutPrefix(e.Producer, replicatorPrefix)
	from, _, isRepl = strings.Cut(clusters, "-->")
	if source == "" || !isRepl || from == "" || from == e.Cluster {
		return "", "", Key{}, false
	}
	origin = Key{Topic: e.Topic, Cluster: b.foreign(from)}
	if _, err := fmt.Sscanf(source, "%d:%d", &origin.Ledger, &origin.Entry); err != nil {
		return "", "", Key{}, false
	}
	return from, source, origin, true
}

// replSourcePosition is the property of a geo-replicated copy naming its
// original's ledger:entry on the source cluster, and replicatorPrefix the
// start of a replicator's producer name, followed by its source cluster
// (Pulsar's MSG_PROP_REPL_SOURCE_POSITION and replicatorPrefix).
const (
	replSourcePosition = "__MSG_PROP_REPL_SOURCE_POSITION"
	replicatorPrefix   = "pulsar.repl."
)

func (b *builder) delivered(e *broker.Event) {
	k := b.keyOf(e, e.ID)
	if !b.wanted(k) {
		return
	}
	l := b.life(k)
	s := b.sub(l, e.Subscription)
	s.settled = nil // a delivery after a settlement follows a seek
	m := b.markOf(e, MarkDelivered)
	d := &Delivery{At: m}
	ln := s.lane(e.Consumer)
	ln.Deliveries = append(ln.Deliveries, d)
	l.mark(m)
	h := b.holderOf(e)
	if b.held[h] == nil {
		b.held[h] = map[Key]*Delivery{}
	}
	b.held[h][k] = d
}

func (b *builder) acked(e *broker.Event) {
	h := b.holderOf(e)
	m := b.markOf(e, MarkAcked)
	if e.Cumulative {
		// Every entry the consumer holds up to the acknowledged one.
		for k := range b.held[h] {
			if k.Ledger == e.ID.Ledger && k.Entry <= e.ID.Entry {
				b.settle(k, h, m)
			}
		}
		return
	}
	if k := b.keyOf(e, e.ID); b.wanted(k) {
		b.settle(k, h, m)
	}
}

// settle records the ack m of k by h, ending h's delivery of it or, when h
// did not hold it, any other consumer's.
func (b *builder) settle(k Key, h holder, m Mark) {
	l := b.life(k)
	s := b.sub(l, h.sub)
	if s.settled != nil {
		return // the entry was settled already
	}
	l.mark(m)
	s.settled = &m
	if d := b.held[h][k]; d != nil {
		d.End = s.settled
		delete(b.held[h], k)
		return
	}
	s.lane(h.consumer).Acks = append(s.lane(h.consumer).Acks, m)
	for o, ds := range b.held {
		if d := ds[k]; d != nil && o.topic == h.topic && o.sub == h.sub {
			d.End = s.settled
			delete(ds, k)
		}
	}
}

// release ends h's deliveries of keys (all it holds when keys is nil) with m.
func (b *builder) release(h holder, keys []Key, m Mark) {
	ds := b.held[h]
	end := func(k Key, d *Delivery) {
		l := b.lives[k]
		l.mark(m)
		last := m
		d.End = &last
		delete(ds, k)
	}
	if keys == nil {
		for _, k := range sortedKeys(ds) {
			end(k, ds[k])
		}
		return
	}
	for _, k := range keys {
		if d := ds[k]; d != nil {
			end(k, d)
		}
	}
}

func sortedKeys(ds map[Key]*Delivery) []Key {
	keys := make([]Key, 0, len(ds))
	for k := range ds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Entry < keys[j].Entry })
	return keys
}

// expired settles the entries an expiry covered: From to ID, less those the
// subscription had acknowledged already.
func (b *builder) expired(e *broker.Event) {
	m := b.markOf(e, MarkExpired)
	expire := func(l *Life) {
		s := b.sub(l, e.Subscription)
		if s.settled != nil {
			return
		}
		s.Marks = append(s.Marks, m)
		l.mark(m)
		settled := m
		s.settled = &settled
		for o, ds := range b.held {
			if d := ds[l.Key]; d != nil && o.sub == e.Subscription && o.topic == e.Topic {
				d.End = s.settled
				delete(ds, l.Key)
			}
		}
	}
	if e.From == (broker.MessageID{}) {
		// No range: the entries up to ID that the subscription delivered.
		for _, l := range b.touched[subKey{b.foreign(e.Cluster), e.Topic, e.Subscription}] {
			if l.Ledger == e.ID.Ledger && l.Entry <= e.ID.Entry {
				expire(l)
			}
		}
		return
	}
	for n := e.From.Entry; n <= e.ID.Entry; n++ {
		if k := (Key{Topic: e.Topic, Ledger: e.ID.Ledger, Entry: n, Cluster: b.foreign(e.Cluster)}); b.wanted(k) {
			expire(b.life(k))
		}
	}
}

// copiesIn returns the properties of the messages a publish stored when its
// first message is a copy (it names an origin): the event's own for an entry
// of one message, and with a store each message's for a batch (a client's
// dead-letter producer batches its copies), when the entry is on the
// store's own cluster (local).
func copiesIn(e *broker.Event, store Store, local bool) (props []map[string]string, batched bool) {
	if _, _, ok := originOf(e.Properties); !ok {
		return nil, false
	}
	if store != nil && local {
		if ent, err := store.Entry(e.Topic, e.ID); err == nil && ent.BatchSize > 0 {
			for _, m := range ent.Messages {
				props = append(props, m.Properties)
			}
			return props, true
		}
	}
	return []map[string]string{e.Properties}, false
}

// originOf returns the entry a dead-letter or retry-letter copy came from,
// read from its REAL_TOPIC and ORIGIN_MESSAGE_ID properties. Clients write
// the id as "ledger:entry:partition[:batch]" (Go, Java, Rust) or
// "(ledger,entry,partition,batch)" (C++).
func originOf(props map[string]string) (Key, MarkKind, bool) {
	origin, real := props["ORIGIN_MESSAGE_ID"], props["REAL_TOPIC"]
	if origin == "" || real == "" {
		return Key{}, "", false
	}
	parts := strings.FieldsFunc(origin, func(r rune) bool { return r == ':' || r == ',' || r == '(' || r == ')' })
	if len(parts) < 2 {
		return Key{}, "", false
	}
	l, err1 := strconv.ParseInt(parts[0], 10, 64)
	n, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return Key{}, "", false
	}
	kind := MarkDeadLetter
	if _, ok := props["RECONSUMETIMES"]; ok {
		kind = MarkRetryLetter
	}
	if tn, err := broker.ParseTopicName(real); err == nil {
		real = tn.String()
	}
	return Key{Topic: real, Ledger: l, Entry: n}, kind, true
}

// outcomeOf says where the message stands on s at the end of the events.
func outcomeOf(l *Life, s *SubLife) Outcome {
	if m := s.settled; m != nil {
		if m.Kind == MarkExpired {
			return Outcome{OutcomeExpired, "expired by message TTL"}
		}
		for _, c := range l.Copies {
			if c.order <= m.order && c.Subscription == s.Name {
				if c.Kind == MarkRetryLetter {
					return Outcome{OutcomeRetried, fmt.Sprintf("copied to the retry topic %s, then acked", c.Copy.Topic)}
				}
				return Outcome{OutcomeDeadLettered, fmt.Sprintf("moved to the dead-letter topic %s, then acked", c.Copy.Topic)}
			}
		}
		if m.Txn != "" {
			return Outcome{OutcomeAcked, "acked by the commit of transaction " + m.Txn}
		}
		return Outcome{OutcomeAcked, "acked by " + m.Consumer}
	}
	if m := s.txnHeld; m != nil {
		return Outcome{OutcomeTxnHeld, "acked in transaction " + m.Txn + ", which has not ended"}
	}
	for _, ln := range s.Lanes {
		for _, d := range ln.Deliveries {
			if d.End == nil {
				return Outcome{OutcomeHeld, fmt.Sprintf("held by %s (redelivery count %d)", ln.Consumer, d.At.Count)}
			}
		}
	}
	return Outcome{OutcomeWaiting, "waiting to be delivered again"}
}

// txnAcked records an acknowledgement in a transaction: it ends the
// consumer's hold (the message waits for the transaction's end).
func (b *builder) txnAcked(e *broker.Event) {
	h := b.holderOf(e)
	m := b.markOf(e, MarkTxnAcked)
	keys := []Key{b.keyOf(e, e.ID)}
	if e.Cumulative {
		keys = keys[:0]
		for k := range b.held[h] {
			if k.Ledger == e.ID.Ledger && k.Entry <= e.ID.Entry {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		if !b.wanted(k) {
			continue
		}
		l := b.life(k)
		s := b.sub(l, e.Subscription)
		mark := m
		s.txnHeld = &mark
		l.mark(m)
		if d := b.held[h][k]; d != nil {
			d.End = &mark
			delete(b.held[h], k)
		} else {
			s.lane(e.Consumer).Acks = append(s.lane(e.Consumer).Acks, m)
		}
	}
}

// committed records a commit's acknowledgement of what its transaction
// held.
func (b *builder) committed(e *broker.Event) {
	k := b.keyOf(e, e.ID)
	if !b.wanted(k) {
		return
	}
	l := b.life(k)
	s := b.sub(l, e.Subscription)
	if s.settled != nil {
		return
	}
	m := b.markOf(e, MarkAcked)
	s.settled, s.txnHeld = &m, nil
	s.Marks = append(s.Marks, m)
	l.mark(m)
}

// txnReturned records an abort giving messages back to a subscription.
func (b *builder) txnReturned(e *broker.Event) {
	m := b.markOf(e, MarkTxnReturned)
	for _, id := range e.IDs {
		k := b.keyOf(e, id)
		if !b.wanted(k) {
			continue
		}
		l := b.life(k)
		s := b.sub(l, e.Subscription)
		s.txnHeld = nil
		s.Marks = append(s.Marks, m)
		l.mark(m)
	}
}

// txnEnded marks the end of a transaction on the messages it produced on
// the topic (the topic's own event: its Topic is set).
func (b *builder) txnEnded(e *broker.Event) {
	if e.Topic == "" || e.Txn == nil {
		return
	}
	kind := MarkTxnAborted
	if e.Kind == broker.EventTxnCommitted {
		kind = MarkTxnCommitted
	}
	m := b.markOf(e, kind)
	for _, k := range b.produced[b.foreign(e.Cluster)+e.Txn.String()] {
		if k.Topic == e.Topic {
			l := b.life(k)
			l.mark(m)
			l.TxnEnd = &m
		}
	}
}
