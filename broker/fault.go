package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Fault says which client commands to interfere with, and how. A command
// matches when it is of kind Command and concerns the given topic,
// subscription, consumer and producer (each empty field matches anything).
// What happens to a matching command is the fault's action: Delay, Drop,
// Observe, Hold or CutOff when set, else an error reply with code Error.
//
// Several faults may match one command. Every matching Observe and Delay
// fault fires (the delays add up), then the first matching fault with
// another action, in the order they were added; the others do not fire.
type Fault struct {
	// Command is the command kind, by its protocol name: CommandSubscribe
	// ("SUBSCRIBE"), CommandProducer, CommandSend, CommandAck, CommandFlow,
	// CommandRedeliverUnacknowledgedMessages, CommandLookup,
	// CommandPartitionedMetadata, CommandGetSchema, CommandSeek…
	Command CommandType
	// Topic narrows the fault to commands about this topic, by short or full
	// name. The name of a partitioned topic also matches its partitions.
	// SUBSCRIBE, PRODUCER, LOOKUP, PARTITIONED_METADATA and the schema
	// commands name their topic; the commands of a consumer or producer
	// (ACK, FLOW, SEND…) concern the topic it is attached to;
	// ADD_PARTITION_TO_TXN and ADD_SUBSCRIPTION_TO_TXN concern the first
	// topic (and subscription) they register. A command that
	// concerns no topic (PING, GET_TOPICS_OF_NAMESPACE…) does not match.
	Topic string
	// Subscription narrows the fault to a subscription: SUBSCRIBE names it,
	// a consumer's commands concern its subscription.
	Subscription string
	// Consumer narrows the fault to a consumer name: SUBSCRIBE carries it, a
	// consumer's commands (by consumer id) concern it.
	Consumer string
	// Producer narrows the fault to a producer name: PRODUCER carries it
	// (when the client chose one), SEND and CLOSE_PRODUCER concern it.
	Producer string
	// Count is how many commands the fault acts on before it retires; 0
	// means until it is removed.
	Count int

	// Error is the Pulsar error code a failing command is answered with,
	// the way Pulsar answers that command: SEND_ERROR for SEND; the error
	// inside the response for LOOKUP, PARTITIONED_METADATA, GET_SCHEMA,
	// GET_OR_CREATE_SCHEMA and CONSUMER_STATS; ACK_RESPONSE for an ACK with
	// a request id; the transaction command's own response for
	// TC_CLIENT_CONNECT_REQUEST, NEW_TXN, ADD_PARTITION_TO_TXN,
	// ADD_SUBSCRIPTION_TO_TXN and END_TXN (while the coordinator is on);
	// ERROR for any other command with a request id. A
	// command without an answer (FLOW, an ACK without request id…) is
	// dropped instead. The zero value is UnknownError.
	Error ServerError
	// Message is the error message; empty means one naming the injection.
	Message string
	// Delay, when set, makes the broker handle the command that much later.
	// The connection's later commands wait behind it, as behind a slow
	// broker.
	Delay time.Duration
	// Drop, when set, closes the connection instead of handling the
	// command, as a broker crash or a network cut would.
	Drop bool
	// Observe, when set, only counts the command, which is then handled as
	// usual: a test can wait for a command to arrive (FaultHandle.Wait).
	Observe bool
	// Hold, when set, sets the command aside until the test releases it
	// (FaultHandle.Next, HeldCommand.Release); the connection goes on with
	// its later commands meanwhile. See HeldCommand.
	Hold bool
	// Duplicate, for REDELIVER_UNACKNOWLEDGED_MESSAGES and SEND only.
	// REDELIVER_UNACKNOWLEDGED_MESSAGES is handled as usual and then the
	// entries it sends back to a Shared subscription are replayed twice, as
	// Pulsar 4.0.8 does now and then under load (FIDELITY.md): the next
	// consumer in turn gets the entry, and the next one that does not hold
	// it gets a second copy with the same redelivery count. Each copy is
	// pending at its consumer (a nack from either counts); an ack releases
	// both. On other subscription types it only counts the command. A SEND
	// is handled twice, as a client's resend of a message whose receipt it
	// did not get arrives: stored twice, unless the topic deduplicates
	// (WithDeduplication), which answers the second with a receipt for
	// message -1:-1 and stores it once. The client gets both receipts.
	Duplicate bool
	// CutOff, when set, cuts the broker's whole cluster off from its
	// clients instead of handling the command (see Cluster.CutOff: every
	// broker's listeners close, so a connect is refused, and every client
	// connection is cut, this one included), as a network partition
	// around the cluster would at that moment; Reconnect on the cluster,
	// or on each broker, brings it back.
	CutOff bool
}

// action is what a fault does to a command it matches.
type action int

const (
	actFail action = iota
	actDelay
	actDrop
	actObserve
	actHold
	actDuplicate
	actCutOff
)

// passes reports whether the action lets the command go on to the next fault
// and its handler.
func (a action) passes() bool { return a == actDelay || a == actObserve || a == actDuplicate }

// FaultHandle is a fault added to a broker. It counts the commands the fault
// acted on and removes it.
type FaultHandle struct {
	b     *Broker
	spec  Fault
	kind  pb.BaseCommand_Type
	act   action
	topic string // canonical, "" for any

	mu      sync.Mutex
	fired   int
	done    bool           // removed, or retired after Count firings
	changed chan struct{}  // closed and replaced whenever fired, done or log changes
	held    []*HeldCommand // held now, in the order they were held
	log     []*HeldCommand // every command held, for Next
	next    int            // log[next] is the next one Next returns
	holding int            // firings of a hold whose command is not in log yet
}

// faults is a broker's fault registry: the faults in force by command kind,
// in the order they were added.
type faults struct {
	mu     sync.Mutex
	any    atomic.Bool
	byKind map[pb.BaseCommand_Type][]*FaultHandle
	// legacy holds the faults FailNext and DelayReplies keep, one of each
	// per command kind, so that a new call replaces the last one.
	legacy map[legacyKey]*FaultHandle
}

type legacyKey struct {
	kind  pb.BaseCommand_Type
	delay bool
}

// commandType resolves a command name such as "SUBSCRIBE" or "LOOKUP".
func commandType(kind string) (pb.BaseCommand_Type, error) {
	v, ok := pb.BaseCommand_Type_value[kind]
	if !ok {
		return 0, fmt.Errorf("unknown command %q (use the protocol's names: SUBSCRIBE, PRODUCER, SEND, LOOKUP…)", kind)
	}
	return pb.BaseCommand_Type(v), nil
}

// AddFault puts f in force from now on and returns its handle. It fails when
// f names an unknown command or topic, has a negative Count or Delay, or
// sets more than one action.
func (b *Broker) AddFault(f Fault) (*FaultHandle, error) {
	h, err := b.newFault(f)
	if err != nil {
		return nil, err
	}
	b.faults.add(h)
	return h, nil
}

func (b *Broker) newFault(f Fault) (*FaultHandle, error) {
	kind, err := commandType(string(f.Command))
	if err != nil {
		return nil, err
	}
	h := &FaultHandle{b: b, spec: f, kind: kind, changed: make(chan struct{})}
	if f.Topic != "" {
		tn, err := ParseTopicName(f.Topic)
		if err != nil {
			return nil, fmt.Errorf("fault on %s: %w", f.Command, err)
		}
		h.topic = tn.String()
	}
	if f.Count < 0 || f.Delay < 0 {
		return nil, fmt.Errorf("fault on %s: negative count or delay", f.Command)
	}
	set := 0
	for _, on := range []struct {
		set bool
		act action
	}{{f.Delay > 0, actDelay}, {f.Drop, actDrop}, {f.Observe, actObserve}, {f.Hold, actHold}, {f.Duplicate, actDuplicate}, {f.CutOff, actCutOff}} {
		if on.set {
			set++
			h.act = on.act
		}
	}
	if set > 1 || (set == 1 && (f.Error != 0 || f.Message != "")) {
		return nil, fmt.Errorf("fault on %s: give one action (an error, Delay, Drop, Observe, Hold, Duplicate or CutOff)", f.Command)
	}
	if f.Duplicate && kind != pb.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES && kind != pb.BaseCommand_SEND {
		return nil, fmt.Errorf("fault on %s: Duplicate is for REDELIVER_UNACKNOWLEDGED_MESSAGES and SEND", f.Command)
	}
	if h.act == actFail && h.spec.Message == "" {
		h.spec.Message = fmt.Sprintf("pulsarsim: injected %s for %s", f.Error, f.Command)
	}
	return h, nil
}

func (fs *faults) add(h *FaultHandle) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.byKind == nil {
		fs.byKind = map[pb.BaseCommand_Type][]*FaultHandle{}
	}
	fs.byKind[h.kind] = append(fs.byKind[h.kind], h)
	fs.any.Store(true)
}

// remove takes h out of force. It reports whether h was in force.
func (fs *faults) remove(h *FaultHandle) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	list := fs.byKind[h.kind]
	for i, o := range list {
		if o == h {
			list = append(list[:i:i], list[i+1:]...)
			if len(list) == 0 {
				delete(fs.byKind, h.kind)
			} else {
				fs.byKind[h.kind] = list
			}
			fs.any.Store(len(fs.byKind) > 0)
			return true
		}
	}
	return false
}

// forKind returns the faults in force for a command kind, in order.
func (fs *faults) forKind(kind pb.BaseCommand_Type) []*FaultHandle {
	if !fs.any.Load() {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.byKind[kind]
}

// Fired returns how many commands the fault has acted on.
func (h *FaultHandle) Fired() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fired
}

// Remove takes the fault out of force and releases the commands it holds.
// It is safe to call more than once.
func (h *FaultHandle) Remove() {
	h.b.faults.remove(h)
	h.mu.Lock()
	h.finishLocked()
	h.mu.Unlock()
	h.ReleaseAll()
}

// finishLocked marks the fault done and wakes its waiters.
func (h *FaultHandle) finishLocked() {
	if !h.done {
		h.done = true
		h.notifyLocked()
	}
}

func (h *FaultHandle) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// ErrFaultDone is returned by FaultHandle.Wait when the fault was removed, or
// retired after its Count, before it fired as often as waited for.
var ErrFaultDone = errors.New("broker: fault removed or retired")

// Wait blocks until the fault has fired n times. It returns ErrFaultDone when
// the fault is removed or retires before that, ErrClosed when the broker
// closes, and ctx's error when ctx ends.
func (h *FaultHandle) Wait(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		fired, done, changed := h.fired, h.done, h.changed
		h.mu.Unlock()
		switch {
		case fired >= n:
			return nil
		case done:
			return ErrFaultDone
		}
		select {
		case <-changed:
		case <-h.b.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fire counts one firing, unless the fault is done. A fault whose Count is
// reached retires: it is taken out of force.
func (h *FaultHandle) fire() bool {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return false
	}
	h.fired++
	if h.act == actHold {
		h.holding++ // until addHeld logs the command: Next waits for it
	}
	h.notifyLocked()
	retired := h.spec.Count > 0 && h.fired >= h.spec.Count
	if retired {
		h.finishLocked()
	}
	h.mu.Unlock()
	if retired {
		h.b.faults.remove(h)
	}
	return true
}

// matches reports whether the fault applies to a command with this scope.
func (h *FaultHandle) matches(s commandScope) bool {
	f := h.spec
	return (h.topic == "" || h.topic == s.topic || h.topic == s.base) &&
		(f.Subscription == "" || f.Subscription == s.subscription) &&
		(f.Consumer == "" || f.Consumer == s.consumer) &&
		(f.Producer == "" || f.Producer == s.producer)
}

// FailNext makes the next n commands of a kind (by its protocol name:
// "SUBSCRIBE", "PRODUCER", "SEND", "LOOKUP", "PARTITIONED_METADATA", "ACK"…)
// fail with the given Pulsar error code, from any connection. Each failure is
// answered the way Pulsar answers that command: ERROR for most requests,
// SEND_ERROR for SEND, the error inside the response for LOOKUP,
// PARTITIONED_METADATA, GET_SCHEMA and ACK with a request id. A command that
// has no answer (FLOW, an ACK without request id…) is dropped instead. A
// new call for the same kind replaces the last one; n <= 0 clears it. It is
// AddFault with Count n and no scope.
func (b *Broker) FailNext(kind CommandType, n int, code ServerError) error {
	return b.replaceLegacy(string(kind), false, n > 0, Fault{Command: kind, Count: n, Error: code})
}

// DelayReplies makes the broker wait d before it handles each command of a
// kind, so its reply comes d later; 0 removes the delay. The connection's
// later commands wait behind it, as behind a slow broker. It is AddFault with
// Delay d and no scope.
func (b *Broker) DelayReplies(kind CommandType, d time.Duration) error {
	return b.replaceLegacy(string(kind), true, d > 0, Fault{Command: kind, Delay: d})
}

// replaceLegacy removes the FailNext or DelayReplies fault of f's kind and,
// when on, puts f in its place.
func (b *Broker) replaceLegacy(kind string, delay, on bool, f Fault) error {
	t, err := commandType(kind)
	if err != nil {
		return err
	}
	var h *FaultHandle
	if on {
		if h, err = b.newFault(f); err != nil {
			return err
		}
	}
	key := legacyKey{t, delay}
	b.faults.mu.Lock()
	old := b.faults.legacy[key]
	if h != nil {
		if b.faults.legacy == nil {
			b.faults.legacy = map[legacyKey]*FaultHandle{}
		}
		b.faults.legacy[key] = h
	} else {
		delete(b.faults.legacy, key)
	}
	b.faults.mu.Unlock()
	if old != nil {
		old.Remove()
	}
	if h != nil {
		b.faults.add(h)
	}
	return nil
}
