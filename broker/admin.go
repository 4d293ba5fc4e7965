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

// Errors of the topic operations.
var (
	// ErrTopicNotFound: the topic does not exist.
	ErrTopicNotFound = errors.New("Topic not found")
	// ErrPartitionedTopicNotFound: the partitioned topic does not exist.
	ErrPartitionedTopicNotFound = errors.New("Partitioned topic does not exist")
	// ErrTopicBusy: deleting without force a topic that has producers or
	// consumers.
	ErrTopicBusy = errors.New("Topic has active producers/subscriptions")
)

// DeleteTopic deletes a non-partitioned topic (or one partition). Without
// force it fails with ErrTopicBusy while producers or consumers are attached;
// with force they are disconnected first, as Pulsar's force delete does.
func (b *Broker) DeleteTopic(name string, force bool) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	if b.partitions(tn) > 0 {
		return ErrTopicNotFound
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return ErrTopicNotFound
	}
	return b.deleteTopic(t, force)
}

// DeletePartitionedTopic deletes a partitioned topic and all its partitions.
func (b *Broker) DeletePartitionedTopic(name string, force bool) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	if b.partitions(tn) == 0 {
		return ErrPartitionedTopicNotFound
	}
	return b.deleteTopics(tn, force)
}

// deleteTopics deletes tn: all its partitions and its metadata when it is a
// partitioned topic, else the topic itself.
func (b *Broker) deleteTopics(tn TopicName, force bool) error {
	n := b.partitions(tn)
	if n == 0 {
		if t := b.lookupTopic(tn.String()); t != nil {
			return b.deleteTopic(t, force)
		}
		return nil
	}
	if !force {
		for i := 0; i < n; i++ {
			if t := b.lookupTopic(tn.PartitionName(i).String()); t != nil && t.busy() {
				return ErrTopicBusy
			}
		}
	}
	for i := 0; i < n; i++ {
		if t := b.lookupTopic(tn.PartitionName(i).String()); t != nil {
			if err := b.deleteTopic(t, true); err != nil {
				return err
			}
		}
	}
	b.mu.Lock()
	delete(b.partitioned, tn.String())
	delete(b.schemas, tn.String())
	delete(b.topicTTL, tn.String())
	b.mu.Unlock()
	return nil
}

// deleteTopic removes one topic from the broker.
func (b *Broker) deleteTopic(t *Topic, force bool) error {
	t.mu.Lock()
	if !force && t.busyLocked() {
		t.mu.Unlock()
		return ErrTopicBusy
	}
	t.deleted = true
	prods, conss := t.disconnectAllLocked()
	t.mu.Unlock()
	forgetAll(prods, conss)
	b.mu.Lock()
	if b.topics[t.full] == t {
		delete(b.topics, t.full)
	}
	if t.name.Partition < 0 {
		delete(b.schemas, t.full)
		delete(b.topicTTL, t.full)
	}
	b.mu.Unlock()
	return nil
}

// UpdatePartitionedTopic raises the partition count of a partitioned topic
// to n, creating the new partitions. Pulsar only lets the count grow.
func (b *Broker) UpdatePartitionedTopic(name string, n int) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	have, ok := b.partitioned[tn.String()]
	if !ok {
		return ErrPartitionedTopicNotFound
	}
	if n <= have {
		return fmt.Errorf("Expect partitions %d grater than current partitions %d", n, have)
	}
	b.partitioned[tn.String()] = n
	for i := have; i < n; i++ {
		if _, ok := b.topics[tn.PartitionName(i).String()]; !ok {
			b.createTopicLocked(tn.PartitionName(i))
		}
	}
	return nil
}

// UnloadTopic disconnects every producer and consumer of a topic (each
// partition of a partitioned topic), as Pulsar's unload does: clients get
// CLOSE_PRODUCER and CLOSE_CONSUMER and reconnect. The topic keeps its
// messages and durable subscriptions.
func (b *Broker) UnloadTopic(name string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	var ts []*Topic
	if n := b.partitions(tn); n > 0 {
		for i := 0; i < n; i++ {
			if t := b.lookupTopic(tn.PartitionName(i).String()); t != nil {
				ts = append(ts, t)
			}
		}
	} else if t := b.lookupTopic(tn.String()); t != nil {
		ts = append(ts, t)
	} else {
		return ErrTopicNotFound
	}
	for _, t := range ts {
		t.mu.Lock()
		prods, conss := t.disconnectAllLocked()
		t.mu.Unlock()
		forgetAll(prods, conss)
	}
	return nil
}
