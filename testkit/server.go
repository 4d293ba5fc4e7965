package testkit

import (
	"fmt"
)

// The broker's own API, as a test sees it. Each method below hands the call
// to the broker started for the test, and fails the test when the broker
// refuses it (see the package doc); the lifecycle (Listen, Serve, Close) is
// not among them.

// must fails the test when err is not nil, naming what failed.
func (b *Broker) must(err error, what string, args ...any) {
	b.tb.Helper()
	if err != nil {
		b.tb.Fatalf("pulsarsim: %s: %v", fmt.Sprintf(what, args...), err)
	}
}

// Subscription returns a snapshot of a subscription, or false when the topic
// or the subscription does not exist.
func (b *Broker) Subscription(topic, name string) (SubscriptionSnapshot, bool) {
	return b.srv.Subscription(topic, name)
}

// Topic returns a snapshot of a topic, or false when it does not exist.
func (b *Broker) Topic(topic string) (TopicSnapshot, bool) { return b.srv.Topic(topic) }

// Topics returns the full names of all topics, sorted.
func (b *Broker) Topics() []string { return b.srv.Topics() }

// OnEvent registers fn to receive every broker event from now on, and
// returns a function that unregisters it.
func (b *Broker) OnEvent(fn func(Event)) (cancel func()) { return b.srv.OnEvent(fn) }

// DeliverEvents returns once every event so far has reached the hooks; see
// broker.Broker.DeliverEvents. Not to be called from a hook.
func (b *Broker) DeliverEvents() { b.srv.DeliverEvents() }

// Clock returns the broker clock.
func (b *Broker) Clock() Clock { return b.srv.Clock() }

// RunTimers runs the broker's timers that the broker clock has reached (the
// periodic message-TTL check, the release of delayed messages, the end of a
// Failover switch delay); the broker runs them by itself as time passes.
func (b *Broker) RunTimers() { b.srv.RunTimers() }

// RunExpiryCheck runs a message-TTL expiry check now, by the broker clock,
// whenever the periodic one is due.
func (b *Broker) RunExpiryCheck() { b.srv.RunExpiryCheck() }

// CreateTopic creates a non-partitioned topic.
func (b *Broker) CreateTopic(name string) {
	b.tb.Helper()
	b.must(b.srv.CreateTopic(name), "create topic %s", name)
}

// CreatePartitionedTopic creates a partitioned topic with n partitions.
func (b *Broker) CreatePartitionedTopic(name string, n int) {
	b.tb.Helper()
	b.must(b.srv.CreatePartitionedTopic(name, n), "create partitioned topic %s with %d partitions", name, n)
}

// UpdatePartitionedTopic raises a partitioned topic's partition count to n.
func (b *Broker) UpdatePartitionedTopic(name string, n int) {
	b.tb.Helper()
	b.must(b.srv.UpdatePartitionedTopic(name, n), "update partitioned topic %s to %d partitions", name, n)
}

// DeleteTopic deletes a non-partitioned topic; force disconnects its clients
// first.
func (b *Broker) DeleteTopic(name string, force bool) {
	b.tb.Helper()
	b.must(b.srv.DeleteTopic(name, force), "delete topic %s", name)
}

// DeletePartitionedTopic deletes a partitioned topic and its partitions.
func (b *Broker) DeletePartitionedTopic(name string, force bool) {
	b.tb.Helper()
	b.must(b.srv.DeletePartitionedTopic(name, force), "delete partitioned topic %s", name)
}

// UnloadTopic disconnects a topic's producers and consumers, as Pulsar's
// unload does; the clients reconnect.
func (b *Broker) UnloadTopic(name string) {
	b.tb.Helper()
	b.must(b.srv.UnloadTopic(name), "unload topic %s", name)
}

// TerminateTopic terminates a topic and returns its last message id.
func (b *Broker) TerminateTopic(name string) MessageID {
	b.tb.Helper()
	id, err := b.srv.TerminateTopic(name)
	b.must(err, "terminate topic %s", name)
	return id
}

// CreateTenant creates a tenant.
func (b *Broker) CreateTenant(tenant string) {
	b.tb.Helper()
	b.must(b.srv.CreateTenant(tenant), "create tenant %s", tenant)
}

// DeleteTenant deletes a tenant.
func (b *Broker) DeleteTenant(tenant string) {
	b.tb.Helper()
	b.must(b.srv.DeleteTenant(tenant), "delete tenant %s", tenant)
}

// Tenants lists the tenants.
func (b *Broker) Tenants() []string { return b.srv.Tenants() }

// CreateNamespace creates a namespace "tenant/ns", with the default
// number of bundles.
func (b *Broker) CreateNamespace(ns string) {
	b.tb.Helper()
	b.must(b.srv.CreateNamespace(ns), "create namespace %s", ns)
}

// DeleteNamespace deletes a namespace; force deletes its topics too.
func (b *Broker) DeleteNamespace(ns string, force bool) {
	b.tb.Helper()
	b.must(b.srv.DeleteNamespace(ns, force), "delete namespace %s", ns)
}

// Namespaces lists a tenant's namespaces.
func (b *Broker) Namespaces(tenant string) []string {
	b.tb.Helper()
	ns, err := b.srv.Namespaces(tenant)
	b.must(err, "namespaces of %s", tenant)
	return ns
}

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
func (b *Broker) CheckSettlement() []Violation { return b.srv.CheckSettlement() }

// RunBacklogQuotaCheck applies the backlog quotas now, by the broker clock,
// as the periodic check does (every minute of broker time by default).
func (b *Broker) RunBacklogQuotaCheck() { b.srv.RunBacklogQuotaCheck() }

// BacklogSize returns a topic's backlog size in bytes as its backlog quota
// measures it.
func (b *Broker) BacklogSize(topic string) int64 {
	b.tb.Helper()
	n, err := b.srv.BacklogSize(topic)
	b.must(err, "backlog size of %s", topic)
	return n
}

// PublishThrottled reports whether a publish rate limit holds back the
// reads of a connection producing to topic.
func (b *Broker) PublishThrottled(topic string) bool { return b.srv.PublishThrottled(topic) }
