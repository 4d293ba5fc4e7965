package txn

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
)

// TimeoutTick is the tick of Pulsar's transaction timeout tracker, in ms: a
// transaction asked with a shorter timeout is aborted at once.
const TimeoutTick = 100

// Subscription names a subscription a transaction acknowledged on.
type Subscription struct {
	Topic, Name string
}

// Txn is a copy of one transaction's metadata at its coordinator.
type Txn struct {
	ID     ID
	Status Status
	// Owner is the role that opened it, "" when the connection had none
	// (authentication off); only the owner or a super-user may use it.
	Owner string
	// OpenedAt is when it was opened, in ms of the broker clock; Timeout
	// is the timeout it was opened with, in ms.
	OpenedAt, Timeout int64
	// Produced are the partitions (full topic names) registered for its
	// messages, sorted; Acked the subscriptions registered for its
	// acknowledgements, sorted.
	Produced []string
	Acked    []Subscription
	// TimedOut is set when its timeout, not a client, ended it.
	TimedOut bool
}

// Coordinator is one transaction coordinator: the transactions it opened
// that have not ended, and their timeouts. Ended transactions are forgotten,
// as Pulsar's store forgets them, so a second END_TXN finds nothing.
type Coordinator struct {
	tc        uint64
	last      int64 // the last sequence number handed out, -1 before the first
	maxActive int
	active    map[uint64]*Txn
	order     []uint64 // active sequence numbers, ascending
	deadlines deadlineHeap
}

// NewCoordinator returns the coordinator of id tc. maxActive bounds the
// transactions open at once; 0 means no bound (Pulsar's default).
func NewCoordinator(tc uint64, maxActive int) *Coordinator {
	return &Coordinator{tc: tc, last: -1, maxActive: maxActive, active: map[uint64]*Txn{}}
}

// ID returns the coordinator's id.
func (c *Coordinator) ID() uint64 { return c.tc }

// Begin opens a transaction at time now (ms) with a timeout in ms, owned by
// owner. A timeout below TimeoutTick is due at once (Due reports it). It
// fails with ErrMaxActive when the coordinator is full.
func (c *Coordinator) Begin(now, timeout int64, owner string) (ID, error) {
	if c.maxActive > 0 && len(c.active) >= c.maxActive {
		return ID{}, ErrMaxActive
	}
	c.last++
	seq := uint64(c.last)
	id := ID{Most: c.tc, Least: seq}
	c.active[seq] = &Txn{ID: id, Status: Open, Owner: owner, OpenedAt: now, Timeout: timeout}
	c.order = append(c.order, seq)
	heap.Push(&c.deadlines, deadline{at: dueAt(now, timeout), seq: seq})
	return id, nil
}

// dueAt is when the timeout tracker aborts a transaction opened at opened
// (ms) with timeout: once the deadline has passed, at once for a timeout
// below the tick.
func dueAt(opened, timeout int64) int64 {
	if timeout < TimeoutTick {
		return opened
	}
	return opened + timeout + 1
}

// lookup returns the active transaction with this id.
func (c *Coordinator) lookup(id ID) (*Txn, error) {
	if id.Most != c.tc {
		return nil, notFound(id)
	}
	t := c.active[id.Least]
	if t == nil {
		return nil, notFound(id)
	}
	return t, nil
}

// Get returns a copy of an active transaction, or a KindNotFound error.
func (c *Coordinator) Get(id ID) (Txn, error) {
	t, err := c.lookup(id)
	if err != nil {
		return Txn{}, err
	}
	return t.copy(), nil
}

// CheckOwner checks that role may use the transaction: it has no owner,
// role owns it, or super says role is a super-user. Otherwise it fails with
// KindNotFound, as Pulsar answers a client that does not own it.
func (c *Coordinator) CheckOwner(id ID, role string, super bool) error {
	t, err := c.lookup(id)
	if err != nil {
		return err
	}
	if t.Owner == "" || t.Owner == role || super {
		return nil
	}
	return &Error{KindNotFound, fmt.Sprintf("Client (%s) is neither the owner of the transaction %s nor a super user", role, id)}
}

// AddProduced registers partitions a transaction produces to. The
// transaction must be open.
func (c *Coordinator) AddProduced(id ID, partitions []string) error {
	t, err := c.lookup(id)
	if err != nil {
		return err
	}
	if t.Status != Open {
		return invalidStatus(id, Open, t.Status)
	}
	for _, p := range partitions {
		if i, found := slices.BinarySearch(t.Produced, p); !found {
			t.Produced = slices.Insert(t.Produced, i, p)
		}
	}
	return nil
}

// AddAcked registers subscriptions a transaction acknowledges on. The
// transaction must be open.
func (c *Coordinator) AddAcked(id ID, subs []Subscription) error {
	t, err := c.lookup(id)
	if err != nil {
		return err
	}
	if t.Status != Open {
		return invalidStatus(id, Open, t.Status)
	}
	for _, s := range subs {
		i, found := slices.BinarySearchFunc(t.Acked, s, compareSubs)
		if !found {
			t.Acked = slices.Insert(t.Acked, i, s)
		}
	}
	return nil
}

func compareSubs(a, b Subscription) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// StartEnd begins ending a transaction: an open one becomes Committing (or
// Aborting), and a copy is returned for the caller to tell its topics and
// subscriptions before FinishEnd. A transaction already committing accepts
// another commit (and one aborting another abort), as Pulsar retries an end
// that did not finish; any other state fails with KindInvalidStatus. A
// timeout ends it only while it is open.
func (c *Coordinator) StartEnd(id ID, commit, timeout bool) (Txn, error) {
	t, err := c.lookup(id)
	if err != nil {
		return Txn{}, err
	}
	next := Aborting
	if commit {
		next = Committing
	}
	switch {
	case t.Status == Open:
		t.Status = next
		t.TimedOut = timeout
	case t.Status == next && !timeout:
	default:
		return Txn{}, invalidStatus(id, next, t.Status)
	}
	return t.copy(), nil
}

// FinishEnd completes an end begun by StartEnd: the transaction becomes
// Committed or Aborted and is forgotten. It returns its final copy, and
// false when it was not being ended.
func (c *Coordinator) FinishEnd(id ID) (Txn, bool) {
	t, err := c.lookup(id)
	if err != nil {
		return Txn{}, false
	}
	switch t.Status {
	case Committing:
		t.Status = Committed
	case Aborting:
		t.Status = Aborted
	default:
		return Txn{}, false
	}
	delete(c.active, id.Least)
	if i, found := slices.BinarySearch(c.order, id.Least); found {
		c.order = slices.Delete(c.order, i, i+1)
	}
	return t.copy(), true
}

// LowWaterMark is the coordinator's low water mark: one below the oldest
// transaction not yet forgotten, 0 when there is none. Every transaction at
// or below it has ended. (Pulsar's getLowWaterMark; the mark of a
// coordinator whose only transaction is 0 is -1.)
func (c *Coordinator) LowWaterMark() int64 {
	if len(c.order) == 0 {
		return 0
	}
	return int64(c.order[0]) - 1
}

// NextDue returns when the earliest timeout falls due (ms).
func (c *Coordinator) NextDue() (int64, bool) {
	for len(c.deadlines) > 0 {
		d := c.deadlines[0]
		if t := c.active[d.seq]; t != nil && t.Status == Open {
			return d.at, true
		}
		heap.Pop(&c.deadlines)
	}
	return 0, false
}

// Due returns the open transactions whose timeout has passed at time now,
// oldest deadline first. The caller aborts each (StartEnd with timeout).
func (c *Coordinator) Due(now int64) []ID {
	var out []ID
	for len(c.deadlines) > 0 && c.deadlines[0].at <= now {
		d := heap.Pop(&c.deadlines).(deadline)
		if t := c.active[d.seq]; t != nil && t.Status == Open {
			out = append(out, t.ID)
		}
	}
	return out
}

// Active returns copies of the transactions not yet forgotten, oldest first.
func (c *Coordinator) Active() []Txn {
	out := make([]Txn, 0, len(c.order))
	for _, seq := range c.order {
		out = append(out, c.active[seq].copy())
	}
	return out
}

func (t *Txn) copy() Txn {
	out := *t
	out.Produced = slices.Clone(t.Produced)
	out.Acked = slices.Clone(t.Acked)
	return out
}

// deadline is a transaction's timeout, due at ms.
type deadline struct {
	at  int64
	seq uint64
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h deadlineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)   { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
