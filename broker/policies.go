package broker

import (
	"reflect"
)

// Policies are the settings Pulsar keeps per namespace and per topic, such as
// the message TTL. Every field is a pointer: nil means unset at that level.
// The policy in force for a topic is resolved field by field, as Pulsar
// resolves it: the topic's own value, else its namespace's, else the
// broker's default (WithDefaultPolicies).
//
// A topic's policies apply to all partitions of a partitioned topic.
//
// To add a policy, add a pointer field below (a plain value: a number, a
// string, a struct of those), give it a default in defaultPolicies and a
// range check in Policies.validate, and read it where the broker applies it
// through appliedPolicies.
type Policies struct {
	// MessageTTLSeconds is the message TTL in whole seconds (Pulsar's
	// messageTTL, message_ttl_in_seconds): messages older than that leave
	// every subscription's backlog. 0 means they never expire. Default 0.
	MessageTTLSeconds *int
}

// defaultPolicies are the broker-level policies: every field set, with
// Pulsar 4.0's standalone defaults.
func defaultPolicies() Policies {
	return Policies{
		MessageTTLSeconds: new(0), // ttlDurationDefaultInSeconds
	}
}

// validate checks the set fields' ranges. The error is ErrInvalidPolicy,
// worded as Pulsar words it.
func (p Policies) validate() error {
	if v := p.MessageTTLSeconds; v != nil && *v < 0 {
		return errorf(ErrInvalidPolicy, "Invalid value for message TTL, message TTL must >= 0")
	}
	return nil
}

// Or returns p with each unset field taken from fallback: the resolution of
// a lower level over a higher one, e.g. topic.Or(namespace).
func (p Policies) Or(fallback Policies) Policies {
	out := p.clone()
	ov, fv := reflect.ValueOf(&out).Elem(), reflect.ValueOf(fallback.clone())
	for i := range ov.NumField() {
		if ov.Field(i).IsNil() {
			ov.Field(i).Set(fv.Field(i))
		}
	}
	return out
}

// clone copies p so that the copy shares no pointer with it.
func (p Policies) clone() Policies {
	out := p
	v := reflect.ValueOf(&out).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsNil() {
			c := reflect.New(f.Type().Elem())
			c.Elem().Set(f.Elem())
			f.Set(c)
		}
	}
	return out
}

// empty reports whether no field is set.
func (p Policies) empty() bool {
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			return false
		}
	}
	return true
}

// WithDefaultPolicies sets broker-level policies: the fields p sets replace
// the broker's defaults, which apply to every topic whose topic and
// namespace leave the field unset. Out-of-range values are ignored.
func WithDefaultPolicies(p Policies) Option {
	return func(c *config) {
		if p.validate() == nil {
			c.policies = p.Or(c.policies)
		}
	}
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
	return b.nsPolicies[ns].clone(), nil
}

// UpdateNamespacePolicies changes the policies of the namespace "tenant/ns":
// change gets a copy of the namespace's own policies to edit (set a field,
// or set it to nil to unset it). Nothing changes when a value is out of its
// range (ErrInvalidPolicy). change runs without any broker lock held and may
// run more than once when another update races with it.
func (b *Broker) UpdateNamespacePolicies(ns string, change func(*Policies)) error {
	if err := ValidateNamespaceName(ns); err != nil {
		return err
	}
	return b.updatePolicies(b.nsPolicies, ns, func() error {
		if !b.namespaceExistsLocked(ns) {
			return ErrNamespaceNotFound
		}
		return nil
	}, change)
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
	return b.topicPolicies[tn.Base().String()].clone(), nil
}

// UpdateTopicPolicies changes the policies of an existing topic (all
// partitions of a partitioned topic), as UpdateNamespacePolicies does for a
// namespace.
func (b *Broker) UpdateTopicPolicies(topic string, change func(*Policies)) error {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return err
	}
	return b.updatePolicies(b.topicPolicies, tn.Base().String(), func() error {
		if !b.topicExistsLocked(tn) {
			return topicNotFound(tn)
		}
		return nil
	}, change)
}

// updatePolicies applies change to m[key] once existsLocked (run under the
// broker lock) finds the namespace or topic. change runs unlocked on a
// copy; the result is stored only if no other update came in between, else
// the update starts over.
func (b *Broker) updatePolicies(m map[string]Policies, key string, existsLocked func() error, change func(*Policies)) error {
	for {
		b.mu.Lock()
		if err := existsLocked(); err != nil {
			b.mu.Unlock()
			return err
		}
		p, gen := m[key].clone(), b.policyGen
		b.mu.Unlock()
		change(&p)
		if err := p.validate(); err != nil {
			return err
		}
		b.mu.Lock()
		if b.policyGen != gen {
			b.mu.Unlock()
			continue
		}
		if err := existsLocked(); err != nil {
			b.mu.Unlock()
			return err
		}
		if p.empty() {
			delete(m, key)
		} else {
			m[key] = p.clone()
		}
		b.policyGen++
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

// appliedPolicies resolves the policies in force for tn.
func (b *Broker) appliedPolicies(tn TopicName) Policies {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicPolicies[tn.Base().String()].Or(b.nsPolicies[tn.NamespaceName()]).Or(b.cfg.policies)
}
