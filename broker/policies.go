package broker

import (
	"reflect"

	"github.com/pulsarsim/pulsarsim/model"
)

// WithDefaultPolicies sets broker-level policies: the fields p sets replace
// the broker's defaults, which apply to every topic whose topic and
// namespace leave the field unset. They take precedence over the options
// that set the same defaults otherwise (WithLimits,
// WithMaxUnackedMessagesPerConsumer). Out-of-range values are ignored.
func WithDefaultPolicies(p Policies) Option {
	return func(c *config) {
		if p.Validate() == nil {
			c.policies = p.Or(c.policies)
		}
	}
}

// brokerPolicies resolves the broker-level policies of a configuration:
// WithDefaultPolicies over the limits and the unacked limit set by their own
// options, over Pulsar's defaults.
func (cfg *config) brokerPolicies() Policies {
	l := cfg.limits
	fromOptions := Policies{
		MaxProducersPerTopic:          new(l.MaxProducersPerTopic),
		MaxConsumersPerTopic:          new(l.MaxConsumersPerTopic),
		MaxConsumersPerSubscription:   new(l.MaxConsumersPerSubscription),
		MaxSubscriptionsPerTopic:      new(l.MaxSubscriptionsPerTopic),
		MaxUnackedMessagesPerConsumer: new(max(cfg.maxUnackedPerCons, 0)),
		InactiveTopics:                new(cfg.inactive.Policy()),
		DeduplicationEnabled:          new(cfg.dedup),
		AutoTopicCreation:             &AutoTopicCreation{Allow: cfg.autoCreateTopics, Type: cfg.autoTopicType, DefaultNumPartitions: cfg.defaultPartitions},
	}
	return cfg.policies.Or(fromOptions).Or(model.DefaultPolicies())
}

// NamespacePolicies returns the policies set on the namespace "tenant/ns"
// itself (unset fields nil).
func (b *Broker) NamespacePolicies(ns string) (Policies, error) {
	if err := ValidateNamespaceName(ns); err != nil {
		return Policies{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.namespaceExistsLocked(ns) {
		return Policies{}, ErrNamespaceNotFound
	}
	return b.data.NamespacePolicies[ns].Clone(), nil
}

// UpdateNamespacePolicies changes the policies of the namespace "tenant/ns":
// change gets a copy of the namespace's own policies to edit (set a field,
// or set it to nil to unset it). Nothing changes when a value is out of its
// range (ErrInvalidPolicy). change runs without any broker lock held and may
// run more than once when another update races with it. The topics of the
// namespace apply the change at once.
func (b *Broker) UpdateNamespacePolicies(ns string, change func(*Policies)) error {
	if err := ValidateNamespaceName(ns); err != nil {
		return err
	}
	err := b.updatePolicies(b.data.NamespacePolicies, ns, func() error {
		if !b.namespaceExistsLocked(ns) {
			return ErrNamespaceNotFound
		}
		return nil
	}, change)
	if err == nil {
		b.reapplyPolicies(func(tn TopicName) bool { return tn.NamespaceName() == ns })
	}
	return err
}

// TopicPolicies returns the policies set on a topic itself (unset fields
// nil). A partition shares its partitioned topic's policies.
func (b *Broker) TopicPolicies(topic string) (Policies, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Policies{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.topicExistsLocked(tn) {
		return Policies{}, topicNotFound(tn)
	}
	return b.data.TopicPolicies[tn.Base().String()].Clone(), nil
}

// UpdateTopicPolicies changes the policies of an existing topic (all
// partitions of a partitioned topic), as UpdateNamespacePolicies does for a
// namespace.
func (b *Broker) UpdateTopicPolicies(topic string, change func(*Policies)) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	base := tn.Base()
	err = b.updatePolicies(b.data.TopicPolicies, base.String(), func() error {
		if !b.topicExistsLocked(tn) {
			return topicNotFound(tn)
		}
		return nil
	}, change)
	if err == nil {
		b.reapplyPolicies(func(other TopicName) bool { return other.Base() == base })
	}
	return err
}

// updatePolicies applies change to m[key] once existsLocked (run under the
// broker lock) finds the namespace or topic. change runs unlocked on a
// copy; the result is stored only if no other update came in between, else
// the update starts over. A change that changes nothing stores nothing.
func (b *Broker) updatePolicies(m map[string]Policies, key string, existsLocked func() error, change func(*Policies)) error {
	for {
		b.mu.Lock()
		if err := existsLocked(); err != nil {
			b.mu.Unlock()
			return err
		}
		before, gen := m[key].Clone(), b.data.PolicyGen.Load()
		b.mu.Unlock()
		p := before.Clone()
		change(&p)
		if err := p.Validate(); err != nil {
			return err
		}
		if reflect.DeepEqual(p, before) {
			return nil
		}
		b.mu.Lock()
		if b.data.PolicyGen.Load() != gen {
			b.mu.Unlock()
			continue
		}
		if err := existsLocked(); err != nil {
			b.mu.Unlock()
			return err
		}
		if p.IsEmpty() {
			delete(m, key)
		} else {
			m[key] = p.Clone()
		}
		b.data.PolicyGen.Add(1)
		b.mu.Unlock()
		return nil
	}
}

// AppliedPolicies returns the policies in force for an existing topic: each
// field from the topic, else its namespace, else the broker's default. Every
// field is set.
func (b *Broker) AppliedPolicies(topic string) (Policies, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Policies{}, err
	}
	if !b.topicExists(tn) {
		return Policies{}, topicNotFound(tn)
	}
	return b.appliedPolicies(tn), nil
}

// BrokerPolicies returns the broker-level policies: the defaults that apply
// where neither a topic nor its namespace sets a policy, with the settings
// changed at run time applied (dynamicconfig.go). Every field is set.
func (b *Broker) BrokerPolicies() Policies { return b.meta.dynamicPolicies(b.cfg.policies).Clone() }

// appliedPolicies resolves the policies in force for tn.
func (b *Broker) appliedPolicies(tn TopicName) Policies {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.appliedPoliciesLocked(tn)
}

func (b *Broker) appliedPoliciesLocked(tn TopicName) Policies {
	return b.data.TopicPolicies[tn.Base().String()].Or(b.data.NamespacePolicies[tn.NamespaceName()]).Or(b.meta.dynamicPolicies(b.cfg.policies))
}

// policiesLocked returns the policies in force for the topic, resolved
// again only when some policy changed since the last call. The caller holds
// the topic's lock and must not change what it gets.
func (t *Topic) policiesLocked() *Policies {
	gen := t.b.data.PolicyGen.Load()
	if t.pol == nil || t.polGen != gen {
		p := t.b.appliedPolicies(t.name)
		t.pol, t.polGen = &p, gen
	}
	return t.pol
}

// reapplyPolicies makes the topics that match apply the policies in force
// now, after a change: limits, rates and quotas take their new values, and
// each subscription dispatches what they allow.
func (b *Broker) reapplyPolicies(match func(TopicName) bool) {
	b.mu.Lock()
	var ts []*Topic
	for _, t := range b.topics {
		if match(t.name) {
			ts = append(ts, t)
		}
	}
	b.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		t.applyPoliciesLocked()
		t.mu.Unlock()
	}
}

// applyPoliciesLocked brings the topic's subscriptions in line with the
// policies in force.
func (t *Topic) applyPoliciesLocked() {
	p := t.policiesLocked()
	for _, s := range t.subs {
		s.applyPoliciesLocked(p)
		s.dispatchLocked()
	}
	t.ensureCompactionSubscriptionLocked(p)
	t.replicationLocked()
}
