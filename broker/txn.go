package broker

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/txn"
)

// Transactions, as a Pulsar 4.0 standalone with transactionCoordinatorEnabled
// runs them: the coordinator's assign topic
// (persistent://pulsar/system/transaction_coordinator_assign, one partition)
// for clients to find the coordinator; coordinators by id, loaded by
// TC_CLIENT_CONNECT; NEW_TXN, ADD_PARTITION_TO_TXN, ADD_SUBSCRIPTION_TO_TXN
// and END_TXN; timeouts that abort on the broker clock. Ending a transaction
// tells every subscription it acknowledged on (txnsub.go) and every topic it
// produced to (txntopic.go), as Pulsar's TransactionMetadataStoreService
// does, in place: pulsarsim is one broker.
//
// The coordinators' lock (transactions.mu) is taken alone or under a topic
// lock (to record what a transaction produced or acknowledged), and nothing
// is taken under it.

// TxnID is a transaction id: the coordinator's id in Most, its sequence
// number in Least. String formats it as Pulsar does, "(most,least)".
type TxnID = txn.ID

// CoordinatorAssignTopic is the partitioned topic clients look up to find
// the transaction coordinators; partition N is coordinator N.
const CoordinatorAssignTopic = "persistent://pulsar/system/transaction_coordinator_assign"

// DefaultTxnHistory is how many ended transactions the broker keeps for
// inspection (Transactions), the newest ones.
const DefaultTxnHistory = 10_000

// WithTransactions turns the transaction coordinator on
// (transactionCoordinatorEnabled). Default off, as in a Pulsar standalone:
// every transaction command is then refused with NotAllowedError. On, the
// broker creates the coordinators' assign topic with one partition, as the
// standalone does.
func WithTransactions(on bool) Option { return func(c *config) { c.transactions = on } }

// WithMaxActiveTransactions bounds the transactions a coordinator holds
// open at once (maxActiveTransactionsPerCoordinator); a NEW_TXN beyond it
// gets no answer, as on Pulsar. Default 0: no bound.
func WithMaxActiveTransactions(n int) Option { return func(c *config) { c.maxActiveTxns = n } }

// TransactionsEnabled reports whether the transaction coordinator is on.
func (b *Broker) TransactionsEnabled() bool { return b.cfg.transactions }

// transactions is the broker's coordinator service.
type transactions struct {
	mu     sync.Mutex
	coords map[uint64]*txn.Coordinator
	// records describe every transaction opened, for inspection; ended
	// holds the ended ones in the order they ended, oldest dropped past
	// the history bound.
	records map[txn.ID]*txnRecord
	ended   []txn.ID
	// resume are the transactions a data directory kept while they were
	// being committed or aborted, for the broker to end again
	// (datadirtxn.go).
	resume []txn.Txn
}

// txnRecord is what the broker remembers of a transaction.
type txnRecord struct {
	id       txn.ID
	status   txn.Status
	owner    string
	opened   time.Time
	timeout  time.Duration
	ended    time.Time
	timedOut bool
	produced []TxnMessage
	acked    []TxnAck
	// partitions and subs mirror the coordinator's registrations.
	partitions []string
	subs       []txn.Subscription
}

// errTxnsOff is Pulsar's refusal of every transaction command when the
// coordinator is off.
const errTxnsOff = "Transactions are not enabled."

// initTransactions registers the coordinators' assign topic. Called by New,
// for each broker of a cluster: the coordinators are the cluster's.
func (b *Broker) initTransactions() {
	b.txns.mu.Lock()
	if b.txns.coords == nil {
		b.txns.coords = map[uint64]*txn.Coordinator{}
		b.txns.records = map[txn.ID]*txnRecord{}
	}
	b.txns.mu.Unlock()
	if !b.cfg.transactions {
		return
	}
	tn, _ := ParseTopicName(CoordinatorAssignTopic)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.data.Partitioned[tn.String()] == 0 {
		b.data.Partitioned[tn.String()] = 1 // a standalone's one coordinator
	}
}

// coordinatorNotFound is Pulsar's CoordinatorNotFoundException.
func coordinatorNotFound(tc uint64) *txn.Error {
	return &txn.Error{Kind: txn.KindCoordinatorNotFound, Msg: fmt.Sprintf("Transaction coordinator with id %d not found!", tc)}
}

// connectCoordinator loads coordinator tc (TC_CLIENT_CONNECT), as Pulsar
// opens the store of any id a client names.
func (b *Broker) connectCoordinator(tc uint64) {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	if b.txns.coords[tc] == nil {
		b.txns.coords[tc] = txn.NewCoordinator(tc, b.cfg.maxActiveTxns)
		b.saveCoordinatorLocked(b.txns.coords[tc])
	}
}

// beginTxn opens a transaction on coordinator tc for owner, with a timeout
// in ms.
func (b *Broker) beginTxn(tc uint64, timeoutMs int64, owner string) (txn.ID, error) {
	now := b.cfg.clock.Now()
	b.txns.mu.Lock()
	c := b.txns.coords[tc]
	if c == nil {
		b.txns.mu.Unlock()
		return txn.ID{}, coordinatorNotFound(tc)
	}
	id, err := c.Begin(now.UnixMilli(), timeoutMs, owner)
	if err == nil {
		b.txns.records[id] = &txnRecord{id: id, status: txn.Open, owner: owner, opened: now,
			timeout: time.Duration(timeoutMs) * time.Millisecond}
		b.saveCoordinatorLocked(c)
		b.saveTxnLocked(c, id)
	}
	b.txns.mu.Unlock()
	if err != nil {
		return id, err
	}
	b.wakeTimers()
	b.emitAlone(Event{Kind: EventTxnOpened, Txn: &id})
	return id, nil
}

// withCoordinator runs fn on the coordinator of id, under the coordinators'
// lock, after checking that role may use the transaction (its owner, or a
// super-user when authentication and authorization are on).
func (b *Broker) withCoordinator(id txn.ID, role string, fn func(*txn.Coordinator, *txnRecord) error) error {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	c := b.txns.coords[id.Most]
	if c == nil {
		return coordinatorNotFound(id.Most)
	}
	if err := c.CheckOwner(id, role, b.superUser(role)); err != nil {
		return err
	}
	return fn(c, b.txns.records[id])
}

// superUser reports whether role counts as a super-user for transactions:
// with authentication or authorization off, Pulsar lets everyone through.
func (b *Broker) superUser(role string) bool {
	if b.cfg.authn == nil || b.cfg.authz == nil {
		return false
	}
	return b.cfg.authz.IsSuperUser(role)
}

// addPartitions registers the partitions a transaction produces to.
func (b *Broker) addPartitions(id txn.ID, role string, partitions []string) error {
	return b.withCoordinator(id, role, func(c *txn.Coordinator, r *txnRecord) error {
		if err := c.AddProduced(id, partitions); err != nil {
			return err
		}
		b.saveTxnLocked(c, id)
		if r != nil {
			t, _ := c.Get(id)
			r.partitions = t.Produced
		}
		return nil
	})
}

// addSubscriptions registers the subscriptions a transaction acknowledges
// on.
func (b *Broker) addSubscriptions(id txn.ID, role string, subs []txn.Subscription) error {
	return b.withCoordinator(id, role, func(c *txn.Coordinator, r *txnRecord) error {
		if err := c.AddAcked(id, subs); err != nil {
			return err
		}
		b.saveTxnLocked(c, id)
		if r != nil {
			t, _ := c.Get(id)
			r.subs = t.Acked
		}
		return nil
	})
}

// endTxn ends a transaction as Pulsar's coordinator does: it becomes
// committing or aborting, every subscription it registered is told, then
// every partition, and it becomes committed or aborted and is forgotten.
// role is checked as the owner unless the end is the broker's own (a
// timeout, with check off).
func (b *Broker) endTxn(id txn.ID, commit, timeout bool, role string, check bool) error {
	b.txns.mu.Lock()
	c := b.txns.coords[id.Most]
	if c == nil {
		b.txns.mu.Unlock()
		return coordinatorNotFound(id.Most)
	}
	if check {
		if err := c.CheckOwner(id, role, b.superUser(role)); err != nil {
			b.txns.mu.Unlock()
			return err
		}
	}
	t, err := c.StartEnd(id, commit, timeout)
	lwm := c.LowWaterMark()
	if r := b.txns.records[id]; err == nil && r != nil {
		r.status, r.timedOut = t.Status, t.TimedOut
	}
	if err == nil {
		b.saveTxnLocked(c, id)
	}
	b.txns.mu.Unlock()
	if err != nil {
		return err
	}
	for _, s := range t.Acked {
		b.endOnSubscription(s.Topic, s.Name, id, commit, lwm)
	}
	for _, p := range t.Produced {
		b.endOnTopic(p, id, commit, lwm)
	}
	b.txns.mu.Lock()
	final, ok := c.FinishEnd(id)
	if ok {
		b.saveTxnLocked(c, id)
	}
	if r := b.txns.records[id]; ok && r != nil {
		r.status, r.ended = final.Status, b.cfg.clock.Now()
		b.txns.ended = append(b.txns.ended, id)
		b.trimTxnHistoryLocked()
	}
	b.txns.mu.Unlock()
	if ok {
		kind, reason := EventTxnAborted, "client"
		if commit {
			kind = EventTxnCommitted
		}
		if timeout {
			reason = "timeout"
		}
		b.emitAlone(Event{Kind: kind, Txn: &id, Reason: reason})
	}
	return nil
}

// trimTxnHistoryLocked forgets the oldest ended transactions past the
// history bound.
func (b *Broker) trimTxnHistoryLocked() {
	if over := len(b.txns.ended) - DefaultTxnHistory; over > 0 {
		for _, id := range b.txns.ended[:over] {
			delete(b.txns.records, id)
		}
		b.txns.ended = slices.Delete(b.txns.ended, 0, over)
	}
}

// nextTxnTimeout returns when the earliest transaction timeout falls due
// (ms of the broker clock).
func (b *Broker) nextTxnTimeout() (int64, bool) {
	b.txns.mu.Lock()
	defer b.txns.mu.Unlock()
	first, ok := int64(0), false
	for _, c := range b.txns.coords {
		if at, due := c.NextDue(); due && (!ok || at < first) {
			first, ok = at, true
		}
	}
	return first, ok
}

// abortTimedOut aborts every open transaction whose timeout is due at now
// (ms), as Pulsar's timeout tracker does.
func (b *Broker) abortTimedOut(now int64) {
	b.txns.mu.Lock()
	var due []txn.ID
	for _, c := range b.txns.coords {
		due = append(due, c.Due(now)...)
	}
	b.txns.mu.Unlock()
	for _, id := range due {
		if err := b.endTxn(id, false, true, "", false); err != nil && !errors.Is(err, txn.ErrInvalidStatus) {
			b.cfg.logger.Info("transaction timeout", "txn", id.String(), "err", err)
		}
	}
}

// recordProduced notes that a transaction produced a message. Called under
// the topic's lock.
func (b *Broker) recordProduced(id txn.ID, m TxnMessage) {
	b.txns.mu.Lock()
	if r := b.txns.records[id]; r != nil {
		r.produced = append(r.produced, m)
	}
	b.txns.mu.Unlock()
}

// recordAcked notes that a transaction acknowledged a message. Called under
// the topic's lock.
func (b *Broker) recordAcked(id txn.ID, a TxnAck) {
	b.txns.mu.Lock()
	if r := b.txns.records[id]; r != nil {
		r.acked = append(r.acked, a)
	}
	b.txns.mu.Unlock()
}

// lockClusterTopic returns clusterTopic(name) locked, looking again when
// the topic it found was released meanwhile (moved, or its broker gone).
func (b *Broker) lockClusterTopic(name string) *Topic {
	for {
		t := b.clusterTopic(name)
		if t == nil {
			return nil
		}
		t.mu.Lock()
		if !t.released {
			return t
		}
		t.mu.Unlock()
	}
}

// clusterTopic returns the topic name as the broker that serves it has it
// loaded, loading it there from its ledger when needed, so that a
// transaction's end reaches every topic it touched wherever the topic lives,
// as Pulsar's coordinator sends END_TXN_ON_PARTITION to the topic's owner. A
// bundle nobody owns is taken by this broker, as the lookup that Pulsar's
// coordinator makes first would assign it. nil when no live broker can
// serve the topic (its owner crashed and still holds its bundle), or when
// it does not exist.
func (b *Broker) clusterTopic(name string) *Topic {
	tn, err := ParseTopicName(name)
	if err != nil {
		return nil
	}
	full := tn.String()
	find := func() (*Topic, *Broker) {
		b.mu.Lock()
		defer b.mu.Unlock()
		var server *Broker
		for _, m := range b.members {
			if t := m.topics[full]; t != nil {
				return t, m
			}
			if m.servesLocked(tn) {
				server = m
			}
		}
		return nil, server
	}
	t, server := find()
	if t != nil {
		return t
	}
	if server == nil {
		if a := b.lookupOwner(tn, true); !a.connect || a.failed {
			return nil
		}
		if _, server = find(); server == nil {
			return nil
		}
	}
	return server.lookupTopic(full)
}
