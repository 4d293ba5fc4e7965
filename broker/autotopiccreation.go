package broker

// Topics created on first use. The broker's allowAutoTopicCreation
// (WithAutoTopicCreation), allowAutoTopicCreationType
// (WithAutoTopicCreationType) and defaultNumPartitions
// (WithDefaultNumPartitions) say whether a topic nobody created may be
// created by its first user, and of which type; a namespace's
// autoTopicCreation policy (Policies.AutoTopicCreation) replaces all three
// for its topics. As in Pulsar 4.0.8:
//   - a partitioned topic is created only by PARTITIONED_METADATA, which
//     pulsar-client-go (and every client) sends before it produces or
//     subscribes: the partitioned topic gets the default count, its
//     partitions are created as they are used;
//   - a PRODUCER or SUBSCRIBE for a topic that still does not exist creates
//     it non-partitioned, whatever the type; LOOKUP creates nothing;
//   - with creation off, a missing topic is TopicNotFound.

// WithAutoTopicCreationType sets allowAutoTopicCreationType: the type of the
// topics created on first use. Default non-partitioned.
func WithAutoTopicCreationType(t TopicType) Option { return func(c *config) { c.autoTopicType = t } }

// WithDefaultNumPartitions sets defaultNumPartitions: the partition count of
// partitioned topics created on first use. Default 1; values below 1 are
// ignored.
func WithDefaultNumPartitions(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.defaultPartitions = n
		}
	}
}

// WithMaxPartitionsPerTopic sets maxNumPartitionsPerPartitionedTopic, which
// bounds the count a namespace's autoTopicCreation policy may set. 0, the
// default, is no limit.
func WithMaxPartitionsPerTopic(n int) Option { return func(c *config) { c.maxPartitions = max(n, 0) } }

// MaxPartitionsPerTopic returns maxNumPartitionsPerPartitionedTopic (0: no
// limit), as set at run time (dynamicconfig.go) or else by the option.
func (b *Broker) MaxPartitionsPerTopic() int {
	_, n := b.meta.dynamicAutoTopicCreation(AutoTopicCreation{}, b.cfg.maxPartitions)
	return n
}

// BrokerAutoTopicCreation returns the broker's own policy of topic
// creation on first use, with the settings changed at run time applied.
func (b *Broker) BrokerAutoTopicCreation() AutoTopicCreation {
	a, _ := b.meta.dynamicAutoTopicCreation(*b.cfg.policies.AutoTopicCreation, 0)
	return a
}

// autoTopicCreationLocked is the creation policy in force for tn's
// namespace: its own, else the broker's (with its settings changed at run
// time). The caller holds b.mu.
func (b *Broker) autoTopicCreationLocked(tn TopicName) AutoTopicCreation {
	if a := b.data.NamespacePolicies[tn.NamespaceName()].AutoTopicCreation; a != nil {
		return *a
	}
	return b.BrokerAutoTopicCreation()
}

// autoCreateAllowed reports whether a topic of tn's namespace may be
// created by its first user.
func (b *Broker) autoCreateAllowed(tn TopicName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.autoTopicCreationLocked(tn).Allow
}

// autoCreatePartitionedLocked creates tn as a partitioned topic with the
// default count when the policy in force creates partitioned topics, and
// returns the count (0 when it creates none). Its partitions are created as
// they are used. The caller holds b.mu and has checked that tn does not
// exist and may be created.
func (b *Broker) autoCreatePartitionedLocked(tn TopicName) int {
	a := b.autoTopicCreationLocked(tn)
	if a.Type != TopicTypePartitioned || tn.Partition >= 0 {
		return 0
	}
	n := a.DefaultNumPartitions
	if n < 1 {
		n = b.cfg.defaultPartitions
	}
	b.data.Partitioned[tn.String()] = n
	return n
}
