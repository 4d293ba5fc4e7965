package testkit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/admin/view"
	"github.com/pulsarsim/pulsarsim/broker"
)

// Clusters are several pulsarsim clusters started for one test, sharing one
// configuration store as Pulsar's clusters share a global one: tenants,
// namespaces and their policies, partitioned-topic metadata, permissions
// and the cluster metadata are the same for all, while each cluster has
// its own brokers, ledgers and bundle ownership. A namespace whose
// replication clusters name several of them (Replicate) is geo-replicated
// between them, as Pulsar 4.0 replicates it.
type Clusters struct {
	tb     testing.TB
	cs     *broker.ConfigStore
	names  []string
	byName map[string]*Cluster
	// history records the events of every broker of every cluster (each
	// naming its cluster): what each broker's web view and each cluster's
	// report read, so that a message's life shows its copies on the other
	// clusters.
	history *view.History
}

// ReplicatorStats is one replicator's state (Clusters.Replicators).
type ReplicatorStats = broker.ReplicatorStats

// StartClusters starts a cluster of brokersEach brokers (StartCluster) for
// each name, over one configuration store, each configured by opts. Each
// cluster's metadata (its serviceUrl and brokerServiceUrl) is written in
// the configuration store, and the public tenant may use every cluster.
// Replication starts once a namespace names several clusters (Replicate).
// The clusters record their events in one history: the web view of any of
// their brokers (ViewURL), and each cluster's report (WriteReport, and a
// failing test's), draw a message's life with its copies on the other
// clusters, while each cluster's Events are still its own.
func StartClusters(tb testing.TB, names []string, brokersEach int, opts ...Option) *Clusters {
	tb.Helper()
	cs := broker.NewConfigStore()
	g := &Clusters{tb: tb, cs: cs, names: slices.Clone(names), byName: map[string]*Cluster{}, history: view.NewHistory(0)}
	shared := func(s *settings) { s.history = g.history }
	for _, name := range names {
		c := StartCluster(tb, brokersEach, append(slices.Clone(opts),
			WithBroker(broker.WithClusterName(name), broker.WithConfigStore(cs)), shared)...)
		g.byName[name] = c
		b := c.srv.Broker(0)
		err := b.UpdateCluster(name, broker.ClusterData{Fields: map[string]any{
			"serviceUrl": c.AdminURLs()[0], "brokerServiceUrl": c.URL(),
		}})
		if err != nil {
			tb.Fatalf("pulsarsim: cluster metadata of %s: %v", name, err)
		}
	}
	if err := g.any().SetTenantAllowedClusters("public", names); err != nil {
		tb.Fatalf("pulsarsim: allowed clusters of public: %v", err)
	}
	tb.Cleanup(func() {
		if !tb.Failed() {
			return
		}
		// Before the clusters close (cleanups run last first): the report
		// of each, named after it, from one cleanup.
		for _, name := range g.names {
			c := g.byName[name]
			note := fmt.Sprintf("%s failed. These are the lives of its busiest messages, as the brokers of every cluster saw them; the topics are those of cluster %s.", tb.Name(), name)
			reportFailureAs(tb, "."+name, func(path string) error { return c.writeReport(path, note, true) })
		}
	})
	return g
}

// any returns a broker of the first cluster, through which the shared
// configuration store is read and written.
func (g *Clusters) any() *broker.Broker { return g.byName[g.names[0]].srv.Broker(0) }

// Names returns the clusters' names, in the order StartClusters got them.
func (g *Clusters) Names() []string { return slices.Clone(g.names) }

// Cluster returns the cluster of that name; it fails the test for a name
// StartClusters was not given.
func (g *Clusters) Cluster(name string) *Cluster {
	g.tb.Helper()
	c := g.byName[name]
	if c == nil {
		g.tb.Fatalf("pulsarsim: no cluster %q (clusters: %s)", name, strings.Join(g.names, ", "))
	}
	return c
}

// SetReachable makes cluster name unreachable for the other clusters'
// replicators (false), as a partition between regions would, or reachable
// again (true); its brokers keep serving their own clients
// (broker.ConfigStore.SetReachable).
func (g *Clusters) SetReachable(name string, reachable bool) {
	g.tb.Helper()
	g.Cluster(name)
	g.cs.SetReachable(name, reachable)
}

// ConfigStore returns the configuration store the clusters share.
func (g *Clusters) ConfigStore() *broker.ConfigStore { return g.cs }

// Replicate makes namespace ns (tenant/ns) replicated between clusters, as
// `pulsar-admin namespaces set-clusters` does, creating it first when it
// does not exist; the tenant is created too, allowed on every cluster.
func (g *Clusters) Replicate(ns string, clusters ...string) {
	g.tb.Helper()
	b := g.any()
	tenant, _, _ := strings.Cut(ns, "/")
	if !slices.Contains(b.Tenants(), tenant) {
		if err := b.CreateTenant(tenant); err != nil {
			g.tb.Fatalf("pulsarsim: create tenant %s: %v", tenant, err)
		}
		if err := b.SetTenantAllowedClusters(tenant, g.names); err != nil {
			g.tb.Fatalf("pulsarsim: allowed clusters of %s: %v", tenant, err)
		}
	}
	if !b.NamespaceExists(ns) {
		if err := b.CreateNamespace(ns); err != nil {
			g.tb.Fatalf("pulsarsim: create namespace %s: %v", ns, err)
		}
	}
	list := slices.Clone(clusters)
	if err := b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.ReplicationClusters = &list }); err != nil {
		g.tb.Fatalf("pulsarsim: replication clusters of %s: %v", ns, err)
	}
}

// Replicators returns the replicators of topic on cluster by remote
// cluster (for a partitioned topic, name a partition): their state,
// backlog and counts. None while no broker of the cluster has the topic
// loaded.
func (g *Clusters) Replicators(cluster, topic string) map[string]ReplicatorStats {
	g.tb.Helper()
	b := g.serving(cluster, topic)
	if b == nil {
		return map[string]ReplicatorStats{}
	}
	st, err := b.ReplicationStats(topic)
	if err != nil {
		return map[string]ReplicatorStats{}
	}
	return st
}

// serving returns the broker of cluster that owns topic's bundle (a
// cluster of one broker owns everything), nil while none does.
func (g *Clusters) serving(cluster, topic string) *broker.Broker {
	c := g.Cluster(cluster)
	if c.Size() == 1 {
		return c.srv.Broker(0)
	}
	if n := c.Owner(topic); n >= 0 {
		return c.srv.Broker(n)
	}
	return nil
}

// Messages returns the messages cluster stores on topic, oldest first,
// with batches expanded (markers are no messages); none while no broker
// of the cluster has the topic.
func (g *Clusters) Messages(cluster, topic string) []broker.Message {
	g.tb.Helper()
	b := g.serving(cluster, topic)
	if b == nil {
		return nil
	}
	msgs, err := b.Messages(topic)
	if err != nil {
		return nil
	}
	return msgs
}

// WaitReplicated blocks until every replicator of topic on cluster from
// has sent everything (connected, no replication backlog). It fails the
// test when ctx ends first, naming the backlog left.
func (g *Clusters) WaitReplicated(ctx context.Context, from, topic string) {
	g.tb.Helper()
	var last map[string]ReplicatorStats
	err := g.waitFor(ctx, func() bool {
		last = g.Replicators(from, topic)
		if len(last) == 0 {
			return false
		}
		for _, rs := range last {
			if !rs.Connected || rs.ReplicationBacklog > 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		g.tb.Fatalf("pulsarsim: waiting for %s on %s to be replicated: %v (replicators: %+v)", topic, from, err, last)
	}
}

// WaitFor blocks until cond holds, checking it every few milliseconds; it
// fails the test, naming what, when ctx ends first.
func (g *Clusters) WaitFor(ctx context.Context, what string, cond func() bool) {
	g.tb.Helper()
	if err := g.waitFor(ctx, cond); err != nil {
		g.tb.Fatalf("pulsarsim: waiting for %s: %v", what, err)
	}
}

func (g *Clusters) waitFor(ctx context.Context, cond func() bool) error {
	if d, ok := g.tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Second))
			defer cancel()
		}
	}
	tick := time.NewTicker(fallbackPoll)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// Copy is one cluster's copy of a message (Clusters.Copies).
type Copy struct {
	Cluster string
	Message broker.Message
}

// Copies returns the copies of a message produced on cluster from with
// this producer name and sequence id, on each cluster that holds one
// (from's own first, then the others in StartClusters' order): the
// original, and the replicas a replicator wrote, whose ReplicatedFrom
// names from. A cluster where no broker has the topic yet holds none.
func (g *Clusters) Copies(from, topic, producer string, seq uint64) []Copy {
	g.tb.Helper()
	order := append([]string{from}, slices.DeleteFunc(slices.Clone(g.names), func(n string) bool { return n == from })...)
	var out []Copy
	for _, name := range order {
		b := g.serving(name, topic)
		if b == nil {
			continue
		}
		msgs, err := b.Messages(topic)
		if err != nil {
			continue // the topic is not there (yet)
		}
		for _, m := range msgs {
			origin := m.ReplicatedFrom
			if origin == "" {
				origin = name
			}
			if m.Producer == producer && m.SequenceID == seq && origin == from {
				out = append(out, Copy{Cluster: name, Message: m})
			}
		}
	}
	return out
}

// String names the clusters.
func (g *Clusters) String() string { return fmt.Sprintf("clusters %s", strings.Join(g.names, ", ")) }

// Timeline tells the life of a message produced on cluster from with this
// producer name and sequence id on every cluster holding a copy of it
// (Copies), each as that cluster's brokers saw it (Cluster.Timeline): its
// publication by its producer on from, its copy's publication by the
// replicator's producer on the others, and each copy's deliveries and
// acknowledgements there.
func (g *Clusters) Timeline(from, topic, producer string, seq uint64) string {
	g.tb.Helper()
	var b strings.Builder
	for _, cp := range g.Copies(from, topic, producer, seq) {
		fmt.Fprintf(&b, "on cluster %s:\n%s", cp.Cluster, g.Cluster(cp.Cluster).Timeline(topic, cp.Message.ID))
	}
	if b.Len() == 0 {
		return fmt.Sprintf("no cluster holds the message %s #%d of %s\n", producer, seq, topic)
	}
	return b.String()
}
