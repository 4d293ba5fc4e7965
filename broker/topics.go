package broker

import "sort"

// The topic operations of the exported API: create, delete, grow, unload,
// and list partitioned topics. Topics are named as ParseTopicName reads them.

// CreateTopic creates a non-partitioned topic. It fails with ErrTopicExists
// when a topic or a partitioned topic has the name already.
func (b *Broker) CreateTopic(name string) error {
	return b.CreateTopicWithProperties(name, nil)
}

// CreatePartitionedTopic creates a partitioned topic with n partitions, named
// "<name>-partition-0" … "<name>-partition-<n-1>".
func (b *Broker) CreatePartitionedTopic(name string, n int) error {
	return b.CreatePartitionedTopicWithProperties(name, n, nil)
}

// creatableLocked says why a topic or partitioned topic cannot be created
// under tn's name, nil when it can. The caller holds b.mu.
func (b *Broker) creatableLocked(tn TopicName) error {
	if !b.namespaceReadyLocked(tn.NamespaceName()) {
		return errNoNamespace
	}
	if b.topicExistsLocked(tn) {
		return ErrTopicExists
	}
	return nil
}

// createPartitionsLocked creates partitions from to n-1 of tn, those that do
// not exist yet.
func (b *Broker) createPartitionsLocked(tn TopicName, from, n int) {
	for i := from; i < n; i++ {
		full := tn.PartitionName(i).String()
		if b.topics[full] == nil && b.data.Ledgers[full] == nil {
			b.createOrRecordLocked(tn.PartitionName(i))
		}
	}
}

// DeleteTopic deletes a non-partitioned topic (or one partition). Without
// force it fails with ErrTopicBusy while producers or consumers are attached;
// with force they are disconnected first, as Pulsar's force delete does.
func (b *Broker) DeleteTopic(name string, force bool) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	t := b.lookupTopic(tn.String())
	if t == nil || b.partitions(tn) > 0 {
		return topicNotFound(tn)
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
		return errorf(ErrPartitionedTopicNotFound, "Topic %s not found.", tn)
	}
	return b.deleteTopics(tn, force)
}

// deleteTopics deletes tn: all its partitions and its metadata when it is a
// partitioned topic, else the topic itself. A topic that does not exist is
// no error.
func (b *Broker) deleteTopics(tn TopicName, force bool) error {
	n := b.partitions(tn)
	if n == 0 {
		if t := b.lookupTopic(tn.String()); t != nil {
			return b.deleteTopic(t, force)
		}
		return nil
	}
	var parts []*Topic
	for i := 0; i < n; i++ {
		if t := b.lookupTopic(tn.PartitionName(i).String()); t != nil {
			if !force && t.busy() {
				return ErrTopicBusy
			}
			parts = append(parts, t)
		}
	}
	for _, t := range parts {
		if err := b.deleteTopic(t, true); err != nil {
			return err
		}
	}
	b.mu.Lock()
	delete(b.data.Partitioned, tn.String())
	delete(b.data.PartitionedProperties, tn.String())
	b.forgetTopicLocked(tn)
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
	t.disconnectAllLocked()
	b.emit(Event{Kind: EventTopicDeleted, Topic: t.full, Reason: "request"})
	t.mu.Unlock()
	b.removeTopic(t)
	return nil
}

// removeTopic takes a deleted topic out of the broker's table, with its
// schemas and policies unless it is a partition (its partitioned topic
// keeps them).
func (b *Broker) removeTopic(t *Topic) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics[t.full] == t {
		delete(b.topics, t.full)
	}
	delete(b.data.Ledgers, t.full)
	if b.disk != nil && t.name.Persistent {
		b.disk.DeleteLedger(t.full)
		b.forgetTopicPending(t.full)
	}
	if t.name.Partition < 0 {
		b.forgetTopicLocked(t.name)
	}
}

// forgetTopicLocked drops what the broker keeps by a deleted topic's base
// name: its schemas and its policies.
func (b *Broker) forgetTopicLocked(tn TopicName) {
	delete(b.data.Schemas, tn.String())
	delete(b.data.TopicPolicies, tn.String())
}

// UpdatePartitionedTopic raises the partition count of a partitioned topic
// to n, creating the new partitions. Pulsar only lets the count grow: fewer
// partitions fail with ErrFewerPartitions, the same count changes nothing.
func (b *Broker) UpdatePartitionedTopic(name string, n int) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	have, ok := b.data.Partitioned[tn.String()]
	switch {
	case !ok:
		return errorf(ErrNotPartitioned, "Topic %s is not the partitioned topic.", tn)
	case n < have:
		return errorf(ErrFewerPartitions, "Desired partitions %d can't be less than the current partitions %d.", n, have)
	}
	b.data.Partitioned[tn.String()] = n
	b.createPartitionsLocked(tn, have, n)
	return nil
}

// UnloadTopic unloads a topic (each partition of a partitioned topic) from
// the broker, as Pulsar's unload does: clients get CLOSE_PRODUCER and
// CLOSE_CONSUMER and reconnect, and the topic is loaded anew from its
// ledger when it is next used (load.go): its messages and durable
// subscriptions stay, its redelivery counters and readers do not, and a
// non-persistent topic is gone.
func (b *Broker) UnloadTopic(name string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	ts := b.topicsNamed(tn)
	if len(ts) == 0 && b.partitions(tn) == 0 {
		return topicNotFound(tn)
	}
	for _, t := range ts {
		b.releaseTopic(t, true, nil)
	}
	return nil
}

// topicsNamed returns the topics tn names: each existing partition of a
// partitioned topic, else the topic itself if it exists.
func (b *Broker) topicsNamed(tn TopicName) []*Topic {
	var ts []*Topic
	if n := b.partitions(tn); n > 0 {
		for i := 0; i < n; i++ {
			if t := b.lookupTopic(tn.PartitionName(i).String()); t != nil {
				ts = append(ts, t)
			}
		}
	} else if t := b.lookupTopic(tn.String()); t != nil {
		ts = append(ts, t)
	}
	return ts
}

// PartitionedMetadata returns a topic's partition count as Pulsar's
// partitioned metadata answers it: N for a partitioned topic, 0 for any
// other topic, and 0 for a topic that does not exist yet when the broker
// creates topics on first use (else ErrTopicNotFound). A topic of a
// namespace that does not exist fails with ErrNamespaceNotFound.
func (b *Broker) PartitionedMetadata(topic string) (int, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return 0, err
	}
	return b.partitionedMetadata(tn, true, false)
}

// partitionedMetadata is PartitionedMetadata for a parsed name; autoCreate
// is the request's own permission to count a missing topic as one to
// create, and firstUse creates it when the policy in force creates
// partitioned topics (a client's PARTITIONED_METADATA; the admin API's
// reads create nothing).
func (b *Broker) partitionedMetadata(tn TopicName, autoCreate, firstUse bool) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.topicExistsLocked(tn) && !b.namespaceReadyLocked(tn.NamespaceName()) {
		return 0, errNoNamespace
	}
	exists := b.topicExistsLocked(tn)
	if b.partitionPastCountLocked(tn) || !exists && (!b.autoTopicCreationLocked(tn).Allow || !autoCreate) {
		return 0, topicNotFound(tn)
	}
	if tn.Partition >= 0 {
		return 0, nil
	}
	if !exists && firstUse {
		return b.autoCreatePartitionedLocked(tn), nil
	}
	return b.data.Partitioned[tn.String()], nil
}

// PartitionedTopics returns the sorted names of the partitioned topics of
// the namespace "tenant/ns" for the given mode: persistent, non-persistent or
// all.
func (b *Broker) PartitionedTopics(ns string, mode TopicsMode) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{}
	for base := range b.data.Partitioned {
		tn, err := ParseTopicName(base)
		if err == nil && tn.NamespaceName() == ns && modeWants(mode, tn) {
			out = append(out, base)
		}
	}
	sort.Strings(out)
	return out
}

// modeWants reports whether a listing in mode includes tn.
func modeWants(mode TopicsMode, tn TopicName) bool {
	switch mode {
	case TopicsPersistent:
		return tn.Persistent
	case TopicsNonPersistent:
		return !tn.Persistent
	}
	return true
}

// topicsNow returns the broker's topics at this moment, only the persistent
// ones when persistentOnly, for a periodic check that then locks each in
// turn (the broker lock is not held while it does).
func (b *Broker) topicsNow(persistentOnly bool) []*Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	topics := make([]*Topic, 0, len(b.topics))
	for _, t := range b.topics {
		if !persistentOnly || t.name.Persistent {
			topics = append(topics, t)
		}
	}
	return topics
}
