package broker

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Blue-green migration (PIP-188), as Pulsar 4.0.8 does it. A cluster's
// policies (Pulsar's ClusterPolicies, beside its ClusterData in the
// configuration store) say whether it is migrated, and to which cluster:
// POST /admin/v2/clusters/{cluster}/migrate writes them. Once the broker's
// own cluster is migrated, each of its topics is migrated when it loads,
// and a topic loaded already when it is checked (see below): each
// producer is told TOPIC_MIGRATED (the green cluster's broker service
// URLs) and closed from the broker side, and no producer attaches again; each consumer is told the same once its subscription has nothing
// left to acknowledge (backlog 0: after its last ack, or at once), so that
// what the blue cluster holds is consumed there before the consumers move.
// A PRODUCER on a migrated topic gets TOPIC_MIGRATED and CLOSE_PRODUCER
// instead of an answer, a SUBSCRIBE whose subscription has nothing left
// TOPIC_MIGRATED and CLOSE_CONSUMER (one with a backlog is attached, and
// moves once it has drained it). Lookups are answered as before: clients
// find the green cluster through TOPIC_MIGRATED.
//
// Pulsar checks the loaded topics every clusterMigrationCheckDurationSeconds,
// by default 0: never, so that only the topics loaded after the migration
// are migrated (a producer or consumer of a topic loaded before goes on as
// before, as on Pulsar 4.0.8). With a check interval
// (WithClusterMigrationCheck), pulsarsim checks the loaded topics at once
// when the cluster's policies say it is migrated, where Pulsar does at its
// next check. Pulsar's namespace-level migration (a namespace's local
// policy "migrated") is not kept.

// WithClusterMigrationCheck sets clusterMigrationCheckDurationSeconds: with
// d > 0 the topics loaded when the broker's cluster is migrated are
// migrated too (at once: see migration.go); 0, the default, leaves them.
func WithClusterMigrationCheck(d time.Duration) Option {
	return func(c *config) { c.migrationCheck = d }
}

// ClusterURL is where the clients of a migrated cluster go (Pulsar's
// ClusterPolicies.ClusterUrl): the green cluster's admin and broker
// service URLs, each "" when not given.
type ClusterURL struct {
	ServiceURL, ServiceURLTLS, BrokerServiceURL, BrokerServiceURLTLS string
}

// ClusterPolicies are a cluster's policies (Pulsar's ClusterPolicies):
// whether it is migrated, and where to.
type ClusterPolicies struct {
	Migrated           bool
	MigratedClusterURL ClusterURL
}

// ClusterPolicies returns a cluster's policies, ok false when none were
// written. As Pulsar's, they need not belong to a cluster that exists, and
// outlive a deleted one.
func (b *Broker) ClusterPolicies(cluster string) (ClusterPolicies, bool) {
	m := b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[cluster]
	return p, ok
}

// SetClusterMigration writes a cluster's policies: migrated or not, and
// the cluster its clients go to. When the cluster is the broker's own and
// migrated, and the brokers check for a migration
// (WithClusterMigrationCheck), every topic they have loaded is migrated
// now.
func (b *Broker) SetClusterMigration(cluster string, migrated bool, url ClusterURL) {
	m := b.meta
	m.mu.Lock()
	m.policies[cluster] = ClusterPolicies{Migrated: migrated, MigratedClusterURL: url}
	m.mu.Unlock()
	if !migrated || cluster != b.ClusterName() || b.cfg.migrationCheck <= 0 {
		return
	}
	b.mu.Lock()
	var topics []*Topic
	for _, member := range b.members {
		for _, t := range member.topics {
			topics = append(topics, t)
		}
	}
	b.mu.Unlock()
	for _, t := range topics {
		t.mu.Lock()
		t.checkMigrationLocked()
		t.mu.Unlock()
	}
}

// migrationURL returns where the broker's cluster migrated to, ok false
// while it is not migrated.
func (b *Broker) migrationURL() (ClusterURL, bool) {
	p, ok := b.ClusterPolicies(b.ClusterName())
	if !ok || !p.Migrated {
		return ClusterURL{}, false
	}
	return p.MigratedClusterURL, true
}

// EventTopicMigrated: the broker told a producer or consumer (Topic,
// Producer or Subscription and Consumer) that its topic migrated to another
// cluster (TOPIC_MIGRATED, naming it in Reason), and closed it.
const EventTopicMigrated EventKind = "topic-migrated"

// checkMigrationLocked migrates the topic when its cluster is migrated and
// it is not yet: its producers move now, its consumers once their
// subscription has nothing left to acknowledge.
func (t *Topic) checkMigrationLocked() {
	if t.migrated {
		return
	}
	if _, ok := t.b.migrationURL(); !ok {
		return
	}
	t.migrated = true
	for p := range t.producers {
		t.migrateProducerLocked(p.conn, p.ID, p.Name)
		t.closeProducerLocked(p)
	}
	for _, s := range t.subs {
		s.reachedEndLocked()
	}
}

// migrateProducerLocked tells a producer its topic migrated.
func (t *Topic) migrateProducerLocked(c *conn, id uint64, name string) {
	url, _ := t.b.migrationURL()
	t.b.emit(Event{Kind: EventTopicMigrated, Topic: t.full, Producer: name, Reason: url.BrokerServiceURL})
	c.send(topicMigrated(pb.BaseCommand_PRODUCER, id, url))
}

// refuseMigratedProducerLocked answers a PRODUCER on a migrated topic as
// Pulsar does: TOPIC_MIGRATED, then CLOSE_PRODUCER, and no answer to the
// request. It reports false when the topic is not migrated.
func (t *Topic) refuseMigratedProducerLocked(c *conn, p *pb.CommandProducer) bool {
	if !t.migrated {
		return false
	}
	t.migrateProducerLocked(c, p.GetProducerId(), p.GetProducerName())
	c.send(protocol.Base(pb.BaseCommand_CLOSE_PRODUCER, &pb.CommandCloseProducer{
		ProducerId: proto.Uint64(p.GetProducerId()), RequestId: proto.Uint64(minusOne)}))
	return true
}

// migrateConsumersLocked tells the consumers of a subscription with
// nothing left to acknowledge on a migrated topic (all of them, or only
// one) that the topic migrated, and closes them. It reports whether it did.
func (s *Subscription) migrateConsumersLocked(only *Consumer) bool {
	t := s.topic
	url, ok := t.b.migrationURL()
	if !t.migrated || !ok || s.cur.Backlog(t.log.End()) != 0 {
		return false
	}
	for _, cons := range s.consumers {
		if only != nil && cons != only {
			continue
		}
		t.b.emit(Event{Kind: EventTopicMigrated, Topic: t.full, Subscription: s.name, Consumer: cons.Name,
			ConsumerID: cons.ID, Remote: cons.conn.remote, Reason: url.BrokerServiceURL})
		cons.conn.send(topicMigrated(pb.BaseCommand_SUBSCRIBE, cons.ID, url))
	}
	s.closeConsumersLocked(nil, only)
	return true
}

// topicMigrated is a TOPIC_MIGRATED command for a producer (kind PRODUCER)
// or a consumer (SUBSCRIBE). Its sub-command (field 68 of BaseCommand,
// CommandTopicMigrated) is not in pulsarsim's schema, which no broker
// reads: it is written as the wire has it, as a field the schema does not
// know, which the encoder writes as it is.
func topicMigrated(kind pb.BaseCommand_Type, id uint64, url ClusterURL) *pb.BaseCommand {
	var sub []byte
	sub = protowire.AppendTag(sub, 1, protowire.VarintType) // resource_id
	sub = protowire.AppendVarint(sub, id)
	resource := uint64(0) // ResourceType Producer
	if kind == pb.BaseCommand_SUBSCRIBE {
		resource = 1 // Consumer
	}
	sub = protowire.AppendTag(sub, 2, protowire.VarintType) // resource_type
	sub = protowire.AppendVarint(sub, resource)
	if url.BrokerServiceURL != "" {
		sub = protowire.AppendTag(sub, 3, protowire.BytesType) // brokerServiceUrl
		sub = protowire.AppendString(sub, url.BrokerServiceURL)
	}
	if url.BrokerServiceURLTLS != "" {
		sub = protowire.AppendTag(sub, 4, protowire.BytesType) // brokerServiceUrlTls
		sub = protowire.AppendString(sub, url.BrokerServiceURLTLS)
	}
	field := protowire.AppendTag(nil, protoFieldTopicMigrated, protowire.BytesType)
	field = protowire.AppendBytes(field, sub)
	cmd := &pb.BaseCommand{Type: pb.BaseCommand_TOPIC_MIGRATED.Enum()}
	cmd.ProtoReflect().SetUnknown(field)
	return cmd
}

// protoFieldTopicMigrated is BaseCommand.topicMigrated's field number.
const protoFieldTopicMigrated = 68
