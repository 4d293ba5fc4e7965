package testkit

import "github.com/pulsarsim/pulsarsim/broker"

// The broker's own API, as a test sees it. Each method below hands the call
// to the broker started for the test; the lifecycle (Listen, Serve, Close)
// is not among them.

// Subscription returns a snapshot of a subscription, or false when the topic
// or the subscription does not exist. Sub is the form that fails the test.
func (b *Broker) Subscription(topic, name string) (broker.SubscriptionSnapshot, bool) {
	return b.srv.Subscription(topic, name)
}

// Topic returns a snapshot of a topic, or false when it does not exist.
func (b *Broker) Topic(topic string) (broker.TopicSnapshot, bool) { return b.srv.Topic(topic) }

// Topics returns the full names of all topics, sorted.
func (b *Broker) Topics() []string { return b.srv.Topics() }

// OnEvent registers fn to receive every broker event from now on, and
// returns a function that unregisters it.
func (b *Broker) OnEvent(fn func(broker.Event)) (cancel func()) { return b.srv.OnEvent(fn) }

// DeliverEvents returns once every event so far has reached the hooks; see
// broker.Broker.DeliverEvents. Not to be called from a hook.
func (b *Broker) DeliverEvents() { b.srv.DeliverEvents() }

// Clock returns the broker clock.
func (b *Broker) Clock() broker.Clock { return b.srv.Clock() }

// RunTimers runs the broker's timers that the broker clock has reached (the
// periodic message-TTL check, the release of delayed messages, the end of a
// Failover switch delay); the broker runs them by itself as time passes.
func (b *Broker) RunTimers() { b.srv.RunTimers() }

// RunExpiryCheck runs a message-TTL expiry check now, by the broker clock,
// whenever the periodic one is due.
func (b *Broker) RunExpiryCheck() { b.srv.RunExpiryCheck() }

// CreateTopic creates a non-partitioned topic.
func (b *Broker) CreateTopic(name string) error { return b.srv.CreateTopic(name) }

// CreatePartitionedTopic creates a partitioned topic with n partitions.
func (b *Broker) CreatePartitionedTopic(name string, n int) error {
	return b.srv.CreatePartitionedTopic(name, n)
}

// UpdatePartitionedTopic raises a partitioned topic's partition count to n.
func (b *Broker) UpdatePartitionedTopic(name string, n int) error {
	return b.srv.UpdatePartitionedTopic(name, n)
}

// DeleteTopic deletes a non-partitioned topic; force disconnects its clients
// first.
func (b *Broker) DeleteTopic(name string, force bool) error { return b.srv.DeleteTopic(name, force) }

// DeletePartitionedTopic deletes a partitioned topic and its partitions.
func (b *Broker) DeletePartitionedTopic(name string, force bool) error {
	return b.srv.DeletePartitionedTopic(name, force)
}

// UnloadTopic disconnects a topic's producers and consumers, as Pulsar's
// unload does; the clients reconnect.
func (b *Broker) UnloadTopic(name string) error { return b.srv.UnloadTopic(name) }

// TerminateTopic terminates a topic and returns its last message id.
func (b *Broker) TerminateTopic(name string) (broker.MessageID, error) {
	return b.srv.TerminateTopic(name)
}

// CreateTenant creates a tenant.
func (b *Broker) CreateTenant(tenant string) error { return b.srv.CreateTenant(tenant) }

// DeleteTenant deletes a tenant.
func (b *Broker) DeleteTenant(tenant string) error { return b.srv.DeleteTenant(tenant) }

// Tenants lists the tenants.
func (b *Broker) Tenants() []string { return b.srv.Tenants() }

// CreateNamespace creates a namespace "tenant/ns".
func (b *Broker) CreateNamespace(ns string) error { return b.srv.CreateNamespace(ns) }

// DeleteNamespace deletes a namespace; force deletes its topics too.
func (b *Broker) DeleteNamespace(ns string, force bool) error {
	return b.srv.DeleteNamespace(ns, force)
}

// Namespaces lists a tenant's namespaces.
func (b *Broker) Namespaces(tenant string) ([]string, error) { return b.srv.Namespaces(tenant) }

// DropConnections closes every client connection, as a broker restart would,
// and returns how many it closed.
func (b *Broker) DropConnections() int { return b.srv.DropConnections() }

// DropConsumerConnection closes the connection that carries the named
// consumer, as a crash of that client would.
func (b *Broker) DropConsumerConnection(topic, sub, consumer string) bool {
	return b.srv.DropConsumerConnection(topic, sub, consumer)
}

// CloseConsumer closes the named consumer from the broker side; the client
// subscribes again.
func (b *Broker) CloseConsumer(topic, sub, consumer string) bool {
	return b.srv.CloseConsumer(topic, sub, consumer)
}

// CloseProducer closes the named producer from the broker side; the client
// reconnects.
func (b *Broker) CloseProducer(topic, producer string) bool {
	return b.srv.CloseProducer(topic, producer)
}

// CheckSettlement checks the broker's settlement invariants now
// (broker.Broker.CheckSettlement) and returns the violations, nil when all
// hold.
func (b *Broker) CheckSettlement() []broker.Violation { return b.srv.CheckSettlement() }

// RunBacklogQuotaCheck applies the backlog quotas now, by the broker clock,
// as the periodic check does (every minute of broker time by default).
func (b *Broker) RunBacklogQuotaCheck() { b.srv.RunBacklogQuotaCheck() }

// BacklogSize returns a topic's backlog size in bytes as its backlog quota
// measures it.
func (b *Broker) BacklogSize(topic string) (int64, error) { return b.srv.BacklogSize(topic) }

// PublishThrottled reports whether a publish rate limit holds back the
// reads of a connection producing to topic.
func (b *Broker) PublishThrottled(topic string) bool { return b.srv.PublishThrottled(topic) }
