package broker

import (
	"errors"
	"maps"
)

// A topic's properties, as Pulsar keeps them: a non-partitioned topic's (or
// one partition's) in its managed ledger's metadata, so they live with the
// ledger, survive an unload and a restart on a data directory, and go with
// the topic; a partitioned topic's in its partitioned metadata, apart from
// its partitions' own (a partition starts with none). Only persistent topics
// have them.

// CreateTopicWithProperties is CreateTopic, the topic starting with props
// (none when props is empty).
func (b *Broker) CreateTopicWithProperties(name string, props map[string]string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.creatableLocked(tn); err != nil {
		return err
	}
	b.createOrRecordLocked(tn)
	if len(props) == 0 || !tn.Persistent {
		return nil
	}
	props = maps.Clone(props)
	// No other goroutine has the new topic before the store's lock is
	// released.
	if t := b.topics[tn.String()]; t != nil {
		t.properties = props
		t.saveLedgerLocked()
	} else if l := b.data.Ledgers[tn.String()]; l != nil {
		l.Properties = props
		if b.disk != nil {
			b.disk.PutLedger(tn.String(), l, false)
		}
	}
	return nil
}

// CreatePartitionedTopicWithProperties is CreatePartitionedTopic, the
// partitioned topic starting with props when they are not nil (its
// partitions with none).
func (b *Broker) CreatePartitionedTopicWithProperties(name string, n int, props map[string]string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	switch {
	case n < 1:
		return ErrInvalidPartitions
	case tn.Partition >= 0:
		return errorf(ErrInvalidName, "Partitioned topic name %s should not end with -partition-N", tn)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.creatableLocked(tn); err != nil {
		return err
	}
	b.data.Partitioned[tn.String()] = n
	if props != nil {
		b.data.PartitionedProperties[tn.String()] = maps.Clone(props)
	}
	b.createPartitionsLocked(tn, 0, n)
	return nil
}

// TopicProperties returns a topic's properties: a partitioned topic's from
// its metadata (nil when it was created without any and none was set since),
// any other's from its ledger (empty, not nil, when it has none), loading the
// topic as Pulsar does. ErrTopicNotFound when the topic does not exist.
func (b *Broker) TopicProperties(name string) (map[string]string, error) {
	tn, err := ParseTopicName(name)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if tn.Partition < 0 && b.data.Partitioned[tn.String()] > 0 {
		props := maps.Clone(b.data.PartitionedProperties[tn.String()])
		b.mu.Unlock()
		return props, nil
	}
	b.mu.Unlock()
	t, err := b.lockExistingTopic(tn)
	if err != nil {
		return nil, err
	}
	defer t.mu.Unlock()
	props := maps.Clone(t.properties)
	if props == nil {
		props = map[string]string{}
	}
	return props, nil
}

// UpdateTopicProperties adds props to a topic's properties, replacing the
// values of keys it has. Empty props change nothing and are no error, even
// for a topic that does not exist, as Pulsar answers them before it looks.
func (b *Broker) UpdateTopicProperties(name string, props map[string]string) error {
	if len(props) == 0 {
		return nil
	}
	return b.changeTopicProperties(name, func(old map[string]string) map[string]string {
		out := maps.Clone(old)
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, props)
		return out
	})
}

// RemoveTopicProperty removes the property key from a topic's properties;
// a key it does not have is no error.
func (b *Broker) RemoveTopicProperty(name, key string) error {
	return b.changeTopicProperties(name, func(old map[string]string) map[string]string {
		if _, ok := old[key]; !ok {
			return old
		}
		out := maps.Clone(old)
		delete(out, key)
		return out
	})
}

// changeTopicProperties replaces a topic's properties with what change
// makes of them (change must not modify the map it is given).
func (b *Broker) changeTopicProperties(name string, change func(map[string]string) map[string]string) error {
	tn, err := ParseTopicName(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if tn.Partition < 0 && b.data.Partitioned[tn.String()] > 0 {
		b.data.PartitionedProperties[tn.String()] = change(b.data.PartitionedProperties[tn.String()])
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	t, err := b.lockExistingTopic(tn)
	if err != nil {
		return err
	}
	defer t.mu.Unlock()
	t.properties = change(t.properties)
	t.saveLedgerLocked()
	return nil
}

// lockExistingTopic returns a persistent topic that exists, loaded here and
// locked; ErrTopicNotFound (naming it) when it does not exist.
func (b *Broker) lockExistingTopic(tn TopicName) (*Topic, error) {
	if !tn.Persistent {
		return nil, topicNotFound(tn)
	}
	t, err := b.lockTopic(tn, false)
	if errors.Is(err, errNoNamespace) || errors.Is(err, errPartitionPastCount) {
		return nil, topicNotFound(tn)
	}
	return t, err
}
