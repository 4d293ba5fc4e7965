package testkit

import "github.com/pulsarsim/pulsarsim/broker"

// A cluster that goes away and comes back, for clients' own failover
// between clusters (a service URL naming several hosts, the Java, C++ and
// Python clients' AutoClusterFailover): two clusters, each started with
// StartCluster (or Start) and its own store, stand for two Pulsar
// clusters; CutOff and Reconnect make one unreachable and reachable again
// with its state kept, Kill and Revive stop it without a goodbye and start
// it again empty-handed but for what its store kept.

// CutOff makes every broker of the cluster unreachable to clients, as a
// network partition around it would: its listeners close (a client's
// connect is refused) and its connections are cut, while the brokers keep
// their topics, subscriptions and bundle owners. The admin APIs stay up.
// Reconnect brings it back.
func (c *Cluster) CutOff() {
	c.tb.Helper()
	c.must(c.srv.CutOff(), "cut the cluster off")
}

// Reconnect makes a cluster cut off by CutOff reachable again, on the same
// addresses.
func (c *Cluster) Reconnect() {
	c.tb.Helper()
	c.must(c.srv.Reconnect(), "reconnect the cluster")
}

// Kill crashes every serving broker of the cluster (see Crash), as a power
// cut of its site would. Revive starts them again.
func (c *Cluster) Kill() {
	c.tb.Helper()
	for i := range c.Size() {
		if c.srv.Broker(i).Serving() {
			c.Crash(i)
		}
	}
}

// Revive starts every broker of the cluster that is down (after Kill,
// Crash or Stop) again, on its addresses, with nothing loaded.
func (c *Cluster) Revive() {
	c.tb.Helper()
	for i := range c.Size() {
		if !c.srv.Broker(i).Serving() {
			c.Start(i)
		}
	}
}

// CutOff makes the broker unreachable to clients while it keeps its
// state: its listeners close (a client's connect is refused) and its
// connections are cut. The admin API stays up. Reconnect brings it back.
func (b *Broker) CutOff() {
	b.tb.Helper()
	if err := b.srv.CutOff(); err != nil {
		b.tb.Fatalf("pulsarsim: cut the broker off: %v", err)
	}
}

// Reconnect makes a broker cut off by CutOff reachable again, on the same
// addresses.
func (b *Broker) Reconnect() {
	b.tb.Helper()
	if err := b.srv.Reconnect(); err != nil {
		b.tb.Fatalf("pulsarsim: reconnect the broker: %v", err)
	}
}

// MigrateTo migrates the cluster to green (blue-green migration, PIP-188),
// as POST /admin/v2/clusters/{cluster}/migrate?migrated=true with green's
// URLs does: the topics that load on the cluster from now on send their
// producers, and their consumers once they have acknowledged what the
// cluster holds, to green's first broker with TOPIC_MIGRATED (see the
// broker package's migration.go; the topics loaded already move too when
// the brokers check for migrations, broker.WithClusterMigrationCheck).
func (c *Cluster) MigrateTo(green *Cluster) {
	c.tb.Helper()
	b := c.srv.Brokers()[0]
	g := green.Broker(0)
	b.SetClusterMigration(b.ClusterName(), true, broker.ClusterURL{ServiceURL: g.AdminURL(), BrokerServiceURL: g.URL()})
}
