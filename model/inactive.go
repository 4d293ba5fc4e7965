package model

import "time"

// InactiveTopicDeleteMode is when a topic without producers and consumers
// counts as inactive (Pulsar's InactiveTopicDeleteMode).
type InactiveTopicDeleteMode string

// The inactive-topic delete modes.
const (
	// DeleteWhenNoSubscriptions: once it has no subscriptions either.
	DeleteWhenNoSubscriptions InactiveTopicDeleteMode = "delete_when_no_subscriptions"
	// DeleteWhenSubscriptionsCaughtUp: once no subscription has a backlog;
	// its subscriptions go with it.
	DeleteWhenSubscriptionsCaughtUp InactiveTopicDeleteMode = "delete_when_subscriptions_caught_up"
)

// InactiveTopicPolicies is the inactive-topic policy of a namespace or
// topic (Pulsar's InactiveTopicPolicies, Policies.InactiveTopics); the
// broker's own comes from broker.WithInactiveTopicDeletion.
type InactiveTopicPolicies struct {
	// DeleteWhileInactive is deleteWhileInactive: whether the topic may be
	// deleted when inactive.
	DeleteWhileInactive bool
	// MaxInactiveDurationSeconds is maxInactiveDurationSeconds.
	MaxInactiveDurationSeconds int
	// Mode is inactiveTopicDeleteMode.
	Mode InactiveTopicDeleteMode
}

// InactiveTopicDeletion is the broker's inactive-topic deletion: Pulsar's
// brokerDeleteInactiveTopicsEnabled, brokerDeleteInactiveTopicsFrequencySeconds,
// brokerDeleteInactiveTopicsMaxInactiveDurationSeconds and
// brokerDeleteInactiveTopicsMode. The zero value keeps every topic.
type InactiveTopicDeletion struct {
	// Enabled runs the periodic check at all; without it no topic is
	// deleted for inactivity, whatever its namespace or topic policy says.
	Enabled bool
	// Frequency is how often the check runs (0: 60 s).
	Frequency time.Duration
	// MaxInactive is how long a topic must have been inactive (0: the
	// frequency), in whole seconds.
	MaxInactive time.Duration
	// Mode is when a topic counts as inactive (empty:
	// DeleteWhenNoSubscriptions).
	Mode InactiveTopicDeleteMode
}

// DefaultInactiveTopicDeletion is Pulsar 4.0's standalone setting: on, every
// 60 s, after 60 s, delete_when_no_subscriptions.
var DefaultInactiveTopicDeletion = InactiveTopicDeletion{Enabled: true, Frequency: 60 * time.Second,
	MaxInactive: 60 * time.Second, Mode: DeleteWhenNoSubscriptions}

// WithDefaults fills the unset fields.
func (d InactiveTopicDeletion) WithDefaults() InactiveTopicDeletion {
	if d.Frequency <= 0 {
		d.Frequency = DefaultInactiveTopicDeletion.Frequency
	}
	if d.MaxInactive <= 0 {
		d.MaxInactive = d.Frequency
	}
	if d.Mode == "" {
		d.Mode = DeleteWhenNoSubscriptions
	}
	return d
}

// Interval returns how often the periodic check runs, 0 for never.
func (d InactiveTopicDeletion) Interval() time.Duration {
	if !d.Enabled {
		return 0
	}
	return d.Frequency
}

// Policy is the broker-level InactiveTopics policy d implies.
func (d InactiveTopicDeletion) Policy() InactiveTopicPolicies {
	return InactiveTopicPolicies{DeleteWhileInactive: d.Enabled,
		MaxInactiveDurationSeconds: int(d.MaxInactive / time.Second), Mode: d.Mode}
}

// Valid reports whether m is one of the two modes.
func (m InactiveTopicDeleteMode) Valid() bool {
	return m == DeleteWhenNoSubscriptions || m == DeleteWhenSubscriptionsCaughtUp
}
