package broker

// A partition past its partitioned topic's count ("t-partition-2" of a
// topic with 2 partitions) does not exist for Pulsar until the topic grows
// to include it: its partitioned metadata is TopicNotFound, a PRODUCER is
// refused with TopicNotFound "Topic not found <name>" and a SUBSCRIBE with
// TopicNotFound "Topic <name> does not exist", whatever the auto-creation
// settings. A partition-like name whose base is not partitioned stays an
// ordinary topic name.

// errPartitionPastCount is getOrCreateTopic's error for such a partition.
var errPartitionPastCount = errorf(ErrTopicNotFound, "partition past the partitioned topic's count")

// partitionPastCountLocked reports whether tn is a partition of a
// partitioned topic that has fewer partitions. The caller holds b.mu.
func (b *Broker) partitionPastCountLocked(tn TopicName) bool {
	if tn.Partition < 0 {
		return false
	}
	n := b.data.Partitioned[tn.Base().String()]
	return n > 0 && tn.Partition >= n
}
