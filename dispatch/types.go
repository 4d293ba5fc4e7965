package dispatch

import (
	"errors"
	"fmt"
)

// SubType is a subscription type, numbered as on the Pulsar wire
// (CommandSubscribe.SubType).
type SubType int

// The four subscription types.
const (
	Exclusive SubType = 0
	Shared    SubType = 1
	Failover  SubType = 2
	KeyShared SubType = 3
)

// String returns the type's Pulsar name.
func (t SubType) String() string {
	switch t {
	case Exclusive:
		return "Exclusive"
	case Shared:
		return "Shared"
	case Failover:
		return "Failover"
	case KeyShared:
		return "Key_Shared"
	}
	return "SubType(?)"
}

// singleActive reports whether the type delivers to one active consumer.
func (t SubType) singleActive() bool { return t == Exclusive || t == Failover }

// KeySharedMode is a Key_Shared consumer's mode, numbered as on the wire
// (KeySharedMeta.keySharedMode).
type KeySharedMode int

// The Key_Shared modes.
const (
	// AutoSplit spreads hashes over consumers with a consistent-hash ring.
	AutoSplit KeySharedMode = 0
	// Sticky gives each consumer the hash ranges it asked for.
	Sticky KeySharedMode = 1
)

// Range is an inclusive range of sticky-key hashes, within 0..65535.
type Range struct {
	Start, End int32
}

// EntryInfo is what a dispatcher needs to know about one log entry.
type EntryInfo struct {
	// Messages is the entry's num_messages_in_batch, or 1 for a non-batched
	// entry: the permit cost of sending it whole.
	Messages int32
	// Key is the entry's sticky key, already chosen by the broker: ordering_key,
	// else partition_key, else "NONE_KEY". Only Key_Shared reads it.
	Key []byte
	// DeliverAt is the entry's deliver_at_time in milliseconds, 0 when it is
	// not delayed. Only Shared and Key_Shared honour it (see SetTime).
	DeliverAt int64
	// Skip keeps the entry from every consumer: a transaction marker or a
	// message of an aborted transaction (SkipAck), an entry acknowledged in
	// an open transaction (SkipHold). See txn.go.
	Skip Skip
	// Free, for a batch entry some of whose indexes an open transaction
	// holds, are the indexes a consumer may still get (1 bits, the wire
	// convention of ack sets); nil otherwise.
	Free []int64
	// Size is the entry's size in bytes; only a Budget's byte limit reads
	// it.
	Size int
}

// Log is the read-only view of a topic's log that the broker passes to Dispatch.
type Log interface {
	// End returns the number of entries in the log (the next entry's number).
	End() int64
	// Info describes entry e, 0 ≤ e < End().
	Info(e int64) EntryInfo
}

// Compacted is a Log that also has a compacted view (Pulsar's compacted
// topic): for some entries up to a horizon, other contents. A consumer that
// reads compacted (ConsumerSpec.ReadCompacted) of an Exclusive or Failover
// subscription reads the view's entries while its read position is at or
// before the horizon, and the log after it.
type Compacted interface {
	Log
	// CompactedHorizon returns the last entry the view covers, or -1 when
	// the topic has no compacted view.
	CompactedHorizon() int64
	// CompactedNext returns the first entry of the view at or after e, or
	// CompactedHorizon()+1 when there is none.
	CompactedNext(e int64) int64
}

// ConsumerSpec describes a consumer joining a subscription.
type ConsumerSpec struct {
	// ID is the consumer's id, unique within the subscription.
	ID uint64
	// Name is the consumer name; Failover and Key_Shared AUTO_SPLIT hash it.
	Name string
	// Priority is priority_level: 0 is the highest priority.
	Priority int32
	// KeySharedMode is the Key_Shared mode the consumer asked for.
	KeySharedMode KeySharedMode
	// Ranges are the hash ranges of a Key_Shared STICKY consumer.
	Ranges []Range
	// AllowOutOfOrder is KeySharedMeta.allowOutOfOrderDelivery: the
	// Key_Shared subscription neither drains hashes that move to another
	// consumer nor holds new entries behind replays of the same key. Every
	// consumer of a subscription must ask for the same.
	AllowOutOfOrder bool
	// Epoch is the consumer_epoch sent with SUBSCRIBE, or -1 when absent.
	Epoch int64
	// ReadCompacted is SUBSCRIBE.read_compacted: on Exclusive and Failover
	// the consumer reads the log's compacted view up to its horizon (see
	// Compacted). The broker refuses it on other types.
	ReadCompacted bool
}

// Delivery is one decision of Dispatch: send entry Entry to consumer Consumer.
type Delivery struct {
	// Consumer is the receiving consumer's id.
	Consumer uint64
	// Entry is the log entry to send, whole.
	Entry int64
	// RedeliveryCount is MESSAGE.redelivery_count (always 0 on Exclusive and
	// Failover; omit the field on the wire when 0).
	RedeliveryCount int32
	// AckSet is MESSAGE.ack_set for a partly acknowledged batch entry, else nil.
	AckSet []int64
	// Messages is the number of messages charged to the consumer's permits
	// (the batch size minus the indexes already acknowledged).
	Messages int32
	// Epoch is MESSAGE.consumer_epoch: the consumer's epoch on Exclusive and
	// Failover, -1 (omit the field) on Shared and Key_Shared.
	Epoch int64
	// Compacted says the entry comes from the log's compacted view (send
	// the view's contents of Entry, not the log's).
	Compacted bool
}

// Defaults used when the corresponding Options field is zero.
const (
	// DefaultMaxUnackedPerConsumer is maxUnackedMessagesPerConsumer.
	DefaultMaxUnackedPerConsumer = 50000
	// DefaultMaxUnackedPerSubscription is maxUnackedMessagesPerSubscription.
	DefaultMaxUnackedPerSubscription = 200000
	// DefaultMaxRoundRobinBatch is dispatcherMaxRoundRobinBatchSize.
	DefaultMaxRoundRobinBatch = 20
	// DefaultMaxReadBatch is dispatcherMaxReadBatchSize.
	DefaultMaxReadBatch = 100
	// DefaultConsistentHashPoints is subscriptionKeySharedConsistentHashingReplicaPoints.
	DefaultConsistentHashPoints = 100
	// DefaultLookAheadPerConsumer is keySharedLookAheadMsgInReplayThresholdPerConsumer.
	DefaultLookAheadPerConsumer = 2000
	// DefaultLookAheadPerSub is keySharedLookAheadMsgInReplayThresholdPerSubscription.
	DefaultLookAheadPerSub = 20000
	// DefaultDelayTick is delayedDeliveryTickTimeMillis.
	DefaultDelayTick = 1000
	// DefaultFailoverDelay is activeConsumerFailoverDelayTimeMillis.
	DefaultFailoverDelay = 1000
)

// Options configure a Dispatcher. Zero numeric fields take the Default… values,
// except PartitionIndex, whose zero value means partition 0.
type Options struct {
	// Type is the subscription type.
	Type SubType
	// Topic is the topic name; a non-partitioned Failover subscription hashes it
	// to pick the active consumer.
	Topic string
	// PartitionIndex is the topic's partition index, or -1 for a
	// non-partitioned topic (see DefaultOptions).
	PartitionIndex int
	// MaxUnackedPerConsumer is maxUnackedMessagesPerConsumer, in messages, for
	// Shared and Key_Shared: 0 means the default 50000, a negative value means
	// unlimited (use it for non-durable subscriptions, as Pulsar does).
	MaxUnackedPerConsumer int
	// MaxUnackedPerSubscription is maxUnackedMessagesPerSubscription, in
	// messages, for Shared and Key_Shared: once the consumers hold this many
	// unacknowledged messages in all, the subscription reads no new entries
	// (replays and released delayed entries still go out) until they hold
	// fewer than half as many. 0 means the default 200000, a negative value
	// unlimited.
	MaxUnackedPerSubscription int
	// MaxRoundRobinBatch is dispatcherMaxRoundRobinBatchSize: the most entries a
	// Shared consumer gets per round-robin turn (default 20).
	MaxRoundRobinBatch int
	// MaxReadBatch is dispatcherMaxReadBatchSize: the most entries one read
	// takes from the log or the replay queue (default 100).
	MaxReadBatch int
	// ConsistentHashPoints is the number of ring points per Key_Shared
	// AUTO_SPLIT consumer (default 100).
	ConsistentHashPoints int
	// LookAheadPerConsumer and LookAheadPerSub bound Key_Shared's replay queue:
	// new reads stop while it holds min(per-consumer × consumers, per-sub)
	// entries (defaults 2000 and 20000, Pulsar 4.0.8's
	// keySharedLookAheadMsgInReplayThresholdPerConsumer/PerSubscription).
	LookAheadPerConsumer int
	// LookAheadPerSub is the subscription-wide cap of that limit (see above).
	LookAheadPerSub int
	// DelayTick is delayedDeliveryTickTimeMillis: a delayed entry due within
	// one tick of now is sent at once (default 1000 ms).
	DelayTick int64
	// FailoverDelay is activeConsumerFailoverDelayTimeMillis: when the active
	// consumer of a Failover subscription changes, the new one gets nothing
	// until this much time has passed (default 1000 ms; negative: no delay).
	FailoverDelay int64
	// KeySharedAutoSplitRanges gives Key_Shared AUTO_SPLIT consumers hash
	// ranges split in halves as they join (Pulsar with
	// subscriptionKeySharedUseConsistentHashing=false) instead of the
	// consistent-hash ring (the default).
	KeySharedAutoSplitRanges bool
}

// DefaultOptions returns Pulsar 4.0's defaults for a subscription of type t on
// a non-partitioned topic.
func DefaultOptions(t SubType) Options {
	return Options{
		Type:                      t,
		PartitionIndex:            -1,
		MaxUnackedPerConsumer:     DefaultMaxUnackedPerConsumer,
		MaxUnackedPerSubscription: DefaultMaxUnackedPerSubscription,
		MaxRoundRobinBatch:        DefaultMaxRoundRobinBatch,
		MaxReadBatch:              DefaultMaxReadBatch,
		ConsistentHashPoints:      DefaultConsistentHashPoints,
		LookAheadPerConsumer:      DefaultLookAheadPerConsumer,
		LookAheadPerSub:           DefaultLookAheadPerSub,
		DelayTick:                 DefaultDelayTick,
		FailoverDelay:             DefaultFailoverDelay,
	}
}

// withDefaults fills zero fields.
func (o Options) withDefaults() Options {
	if o.MaxUnackedPerConsumer == 0 {
		o.MaxUnackedPerConsumer = DefaultMaxUnackedPerConsumer
	}
	if o.MaxUnackedPerSubscription == 0 {
		o.MaxUnackedPerSubscription = DefaultMaxUnackedPerSubscription
	}
	if o.MaxRoundRobinBatch <= 0 {
		o.MaxRoundRobinBatch = DefaultMaxRoundRobinBatch
	}
	if o.MaxReadBatch <= 0 {
		o.MaxReadBatch = DefaultMaxReadBatch
	}
	if o.ConsistentHashPoints <= 0 {
		o.ConsistentHashPoints = DefaultConsistentHashPoints
	}
	if o.LookAheadPerConsumer <= 0 {
		o.LookAheadPerConsumer = DefaultLookAheadPerConsumer
	}
	if o.LookAheadPerSub <= 0 {
		o.LookAheadPerSub = DefaultLookAheadPerSub
	}
	if o.DelayTick <= 0 {
		o.DelayTick = DefaultDelayTick
	}
	if o.FailoverDelay == 0 {
		o.FailoverDelay = DefaultFailoverDelay
	}
	return o
}

// Errors returned by AddConsumer. The broker maps them to wire error codes.
var (
	// ErrConsumerBusy: a second Exclusive consumer (wire: ConsumerBusy).
	ErrConsumerBusy = errors.New("dispatch: consumer busy")
	// ErrKeySharedModeMismatch: a Key_Shared consumer whose mode differs from
	// the connected consumers' (wire: ConsumerBusy). It wraps ErrConsumerBusy.
	ErrKeySharedModeMismatch = fmt.Errorf("%w: key_shared mode differs", ErrConsumerBusy)
	// ErrOutOfOrderMismatch: a Key_Shared consumer whose allowOutOfOrderDelivery
	// differs from the connected consumers' (wire: ConsumerBusy). It wraps
	// ErrConsumerBusy.
	ErrOutOfOrderMismatch = fmt.Errorf("%w: allowOutOfOrderDelivery differs", ErrConsumerBusy)
	// ErrConsumerAssign: a Key_Shared STICKY consumer without ranges, with a bad
	// range or with a range overlapping another consumer's (wire:
	// ConsumerAssignError).
	ErrConsumerAssign = errors.New("dispatch: consumer assign error")
	// ErrDuplicateConsumer: the consumer id is already attached.
	ErrDuplicateConsumer = errors.New("dispatch: consumer id already attached")
)
