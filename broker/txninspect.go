package broker

import (
	"errors"
	"slices"
	"time"

	"github.com/pulsarsim/pulsarsim/txn"
)

// The exported API of transactions: what the broker knows of each one
// (open, and the newest DefaultTxnHistory ended), and seeding without a
// client.

// Errors of the transaction API, to test with errors.Is. Errors returned
// by the API carry Pulsar's wording.
var (
	// ErrTransactionsDisabled: the broker runs without the coordinator.
	ErrTransactionsDisabled = errors.New(errTxnsOff)
	// ErrTxnNotFound: no open transaction has the id (TransactionNotFound).
	ErrTxnNotFound error = txn.ErrNotFound
	// ErrTxnInvalidStatus: the transaction is not open (InvalidTxnStatus).
	ErrTxnInvalidStatus error = txn.ErrInvalidStatus
	// ErrTxnConflict: an acknowledgement another one covers
	// (TransactionConflict).
	ErrTxnConflict error = txn.ErrConflict
)

// TxnMessage is a message a transaction produced.
type TxnMessage struct {
	Topic string
	ID    MessageID
}

// TxnAck is a message a transaction acknowledged.
type TxnAck struct {
	Topic, Subscription string
	ID                  MessageID
	Cumulative          bool
}

// TxnSubscription is a subscription a transaction registered
// (ADD_SUBSCRIPTION_TO_TXN).
type TxnSubscription struct {
	Topic, Subscription string
}

// TxnStatus is the state of a transaction, by the name Pulsar's TxnStatus
// gives it.
type TxnStatus string

// The states of a transaction.
const (
	TxnStatusOpen       TxnStatus = "OPEN"
	TxnStatusCommitting TxnStatus = "COMMITTING"
	TxnStatusCommitted  TxnStatus = "COMMITTED"
	TxnStatusAborting   TxnStatus = "ABORTING"
	TxnStatusAborted    TxnStatus = "ABORTED"
)

// Transaction is a plain-value copy of what the broker knows of a
// transaction, comparable with go-cmp.
type Transaction struct {
	ID TxnID
	// Status is its state, by Pulsar's name (TxnStatus).
	Status TxnStatus
	// TimedOut is set when its timeout, not a client, aborted it.
	TimedOut bool
	// Owner is the role that opened it, "" without authentication.
	Owner   string
	Opened  time.Time
	Timeout time.Duration
	Ended   time.Time // zero until it ends
	// Partitions and Subscriptions are what it registered with its
	// coordinator, sorted: the topics it produces to, the subscriptions it
	// acknowledges on.
	Partitions    []string
	Subscriptions []TxnSubscription
	// Produced lists the messages it produced, Acked those it
	// acknowledged (accepted acknowledgements only), in the order they
	// happened.
	Produced []TxnMessage
	Acked    []TxnAck
}

func (r *txnRecord) snapshot() Transaction {
	tr := Transaction{ID: r.id, Status: TxnStatus(r.status.String()), TimedOut: r.timedOut, Owner: r.owner,
		Opened: r.opened, Timeout: r.timeout, Ended: r.ended,
		Partitions: slices.Clone(r.partitions), Produced: slices.Clone(r.produced), Acked: slices.Clone(r.acked)}
	for _, s := range r.subs {
		tr.Subscriptions = append(tr.Subscriptions, TxnSubscription{Topic: s.Topic, Subscription: s.Name})
	}
	return tr
}

// Transactions returns every transaction the broker knows: the open ones
// and the newest DefaultTxnHistory ended ones, in id order.
func (b *Broker) Transactions() []Transaction {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	out := make([]Transaction, 0, len(b.txns.records))
	for _, r := range b.txns.records {
		out = append(out, r.snapshot())
	}
	slices.SortFunc(out, func(a, b Transaction) int {
		switch {
		case a.ID.Most != b.ID.Most:
			return cmpUint(a.ID.Most, b.ID.Most)
		default:
			return cmpUint(a.ID.Least, b.ID.Least)
		}
	})
	return out
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Transaction returns one transaction, or false when the broker does not
// know it (never opened, or ended and forgotten).
func (b *Broker) Transaction(id TxnID) (Transaction, bool) {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	r := b.txns.records[id]
	if r == nil {
		return Transaction{}, false
	}
	return r.snapshot(), true
}

// OpenTransaction returns a transaction its coordinator still holds (open,
// or being ended), as Pulsar's admin API serves it: ErrTxnNotFound once it
// ended.
func (b *Broker) OpenTransaction(id TxnID) (Transaction, error) {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	c := b.txns.coords[id.Most]
	if c == nil {
		return Transaction{}, coordinatorNotFound(id.Most)
	}
	if _, err := c.Get(id); err != nil {
		return Transaction{}, err
	}
	return b.txns.records[id].snapshot(), nil
}

// TransactionOnTopic describes a transaction on a topic it produced to:
// the entry of its first message while it is ongoing there (nil when it is
// not), and whether the topic aborted it.
func (b *Broker) TransactionOnTopic(topic string, id TxnID) (start *MessageID, aborted bool, err error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return nil, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil {
		return nil, false, nil
	}
	if n, ok := t.buf.Start(id); ok {
		m := t.eventID(n)
		start = &m
	}
	return start, t.buf.IsAborted(id), nil
}

// TransactionOnSubscription describes a transaction on a subscription it
// acknowledged on: the position of its cumulative acknowledgement, nil
// when it holds none.
func (b *Broker) TransactionOnSubscription(topic, sub string, id TxnID) (*MessageID, error) {
	t, err := b.existingTopic(topic)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[sub]
	if s == nil {
		return nil, errorf(ErrSubscriptionNotFound, "Subscription %s not found", sub)
	}
	if s.pending == nil {
		return nil, nil
	}
	if p, ok := s.pending.Cumulative(id); ok {
		m := t.eventID(p.Entry)
		return &m, nil
	}
	return nil, nil
}

// existingTopic returns the topic of a name, or ErrTopicNotFound.
func (b *Broker) existingTopic(name string) (*Topic, error) {
	tn, err := ParseTopicName(name)
	if err != nil {
		return nil, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return nil, topicNotFound(tn)
	}
	return t, nil
}

// NewTransaction opens a transaction on coordinator 0 with a timeout, as a
// client's NEW_TXN does (the timeout runs on the broker clock). It fails
// with ErrTransactionsDisabled when the coordinator is off.
func (b *Broker) NewTransaction(timeout time.Duration) (TxnID, error) {
	if !b.cfg.transactions {
		return TxnID{}, ErrTransactionsDisabled
	}
	b.connectCoordinator(0)
	return b.beginTxn(0, timeout.Milliseconds(), "")
}

// CommitTransaction commits a transaction, as a client's END_TXN does.
func (b *Broker) CommitTransaction(id TxnID) error {
	if !b.cfg.transactions {
		return ErrTransactionsDisabled
	}
	return b.endTxn(id, true, false, "", false)
}

// AbortTransaction aborts a transaction, as a client's END_TXN does.
func (b *Broker) AbortTransaction(id TxnID) error {
	if !b.cfg.transactions {
		return ErrTransactionsDisabled
	}
	return b.endTxn(id, false, false, "", false)
}

// PublishInTransaction stores msgs on a topic as messages of transaction
// id, one entry each, registering the topic with the transaction first as
// a client does (ADD_PARTITION_TO_TXN). Consumers get them only once the
// transaction commits; meanwhile they hold back the topic's later messages.
// Errors as Publish, and the transaction's (ErrTxnNotFound…).
func (b *Broker) PublishInTransaction(id TxnID, topic string, msgs ...ProducerMessage) ([]MessageID, error) {
	if !b.cfg.transactions {
		return nil, ErrTransactionsDisabled
	}
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if err := b.addPartitions(id, "", []string{tn.String()}); err != nil {
		return nil, err
	}
	return b.publishIn(topic, false, msgs, &id)
}
