package broker

import (
	"errors"
	"fmt"
)

// ErrTopicExists is returned when creating a topic that already exists.
var ErrTopicExists = errors.New("topic already exists")

// CreateTopic creates a non-partitioned topic.
func (b *Broker) CreateTopic(name string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[tn.String()]; ok {
		return ErrTopicExists
	}
	if _, ok := b.partitioned[tn.String()]; ok {
		return ErrTopicExists
	}
	b.createTopicLocked(tn)
	return nil
}

// CreatePartitionedTopic creates a partitioned topic with n partitions, named
// "<name>-partition-0" … "<name>-partition-<n-1>".
func (b *Broker) CreatePartitionedTopic(name string, n int) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	if n < 1 || tn.Partition >= 0 {
		return fmt.Errorf("invalid partitioned topic %s with %d partitions", name, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[tn.String()]; ok {
		return ErrTopicExists
	}
	if _, ok := b.partitioned[tn.String()]; ok {
		return ErrTopicExists
	}
	b.partitioned[tn.String()] = n
	for i := 0; i < n; i++ {
		if _, ok := b.topics[tn.PartitionName(i).String()]; !ok {
			b.createTopicLocked(tn.PartitionName(i))
		}
	}
	return nil
}
