package broker

import "maps"

// Subscription properties (PIP-105): string pairs a subscription carries.
// SUBSCRIBE's subscription_properties give them to the subscription it
// creates; a SUBSCRIBE that joins an existing subscription has its own
// looked past, as in Pulsar 4.0.8. The admin API reads and replaces them
// (SubscriptionProperties, SetSubscriptionProperties) and gives them to a
// subscription it creates (CreateSubscriptionWithProperties). Topic stats
// show them (SubscriptionStats.Properties); Pulsar's internal stats do
// not. They live as long as the subscription: a topic's unload, a seek or a
// reset keep them.

// SubscriptionProperties returns the properties of subscription sub of a
// topic (partition 0's for a partitioned topic, whose partitions are given
// the same ones), an empty map for none. A missing topic is
// ErrTopicNotFound, a missing subscription ErrSubscriptionNotFound.
func (b *Broker) SubscriptionProperties(topic, sub string) (map[string]string, error) {
	t, err := b.propertiesTopic(topic, sub)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.subs[sub]
	if s == nil {
		return nil, errorf(ErrSubscriptionNotFound, "Subscription %s not found for topic %s", sub, topic)
	}
	out := map[string]string{}
	maps.Copy(out, s.properties)
	return out, nil
}

// SetSubscriptionProperties replaces the properties of subscription sub of
// a topic (of each partition of a partitioned topic) with props, as
// Pulsar's PUT .../subscription/{sub}/properties does. Errors as
// SubscriptionProperties.
func (b *Broker) SetSubscriptionProperties(topic, sub string, props map[string]string) error {
	if _, err := b.propertiesTopic(topic, sub); err != nil {
		return err
	}
	tn, _ := ParseTopicName(topic)
	for _, t := range b.topicsNamed(tn) {
		t.mu.Lock()
		if s := t.subs[sub]; s != nil {
			s.properties = maps.Clone(props)
			if s.persisted != nil {
				s.saveCursorLocked() // Pulsar writes them with the cursor at once
			}
		}
		t.mu.Unlock()
	}
	return nil
}

// propertiesTopic returns the topic whose subscription sub a properties
// request reads: the topic itself, or partition 0 of a partitioned topic.
func (b *Broker) propertiesTopic(topic, sub string) (*Topic, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	if n := b.partitions(tn); n > 0 {
		tn = tn.PartitionName(0)
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return nil, topicNotFound(tn)
	}
	if !t.hasSubscription(sub) {
		return nil, errorf(ErrSubscriptionNotFound, "Subscription %s not found for topic %s", sub, topic)
	}
	return t, nil
}

// CreateSubscriptionWithProperties is CreateSubscription for a
// subscription that carries props, as the admin API's create subscription
// with a body's properties.
func (b *Broker) CreateSubscriptionWithProperties(topic, sub string, at Position, props map[string]string) error {
	return b.createSubscription(topic, sub, at, props)
}
