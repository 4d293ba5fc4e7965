package model

// TopicType is the type of topic created on first use
// (allowAutoTopicCreationType, the autoTopicCreation policy's topicType).
type TopicType string

// The topic types Pulsar knows.
const (
	TopicTypeNonPartitioned TopicType = "non-partitioned"
	TopicTypePartitioned    TopicType = "partitioned"
)

// AutoTopicCreation is the autoTopicCreation policy of a namespace
// (Pulsar's AutoTopicCreationOverride): Allow is allowAutoTopicCreation,
// Type topicType (kept as given when creation is off; Pulsar does not
// check it then), DefaultNumPartitions defaultNumPartitions (0: not given).
type AutoTopicCreation struct {
	Allow                bool
	Type                 TopicType
	DefaultNumPartitions int
}

// Validate checks the policy as Pulsar's validateOverride does, then the
// count against maxPartitions (0: no limit). The error is ErrInvalidPolicy
// with Pulsar's reason, or ErrTooManyPartitions.
func (a AutoTopicCreation) Validate(maxPartitions int) error {
	if !a.Allow {
		return nil
	}
	switch a.Type {
	case TopicTypePartitioned:
		switch {
		case a.DefaultNumPartitions == 0:
			return Errorf(ErrInvalidPolicy, "[defaultNumPartitions] cannot be null when the type is partitioned.")
		case a.DefaultNumPartitions < 0:
			return Errorf(ErrInvalidPolicy, "[defaultNumPartitions] cannot be less than 1 for partition type.")
		case maxPartitions > 0 && a.DefaultNumPartitions > maxPartitions:
			return Errorf(ErrTooManyPartitions, "Number of partitions should be less than or equal to %d", maxPartitions)
		}
	case TopicTypeNonPartitioned:
		if a.DefaultNumPartitions != 0 {
			return Errorf(ErrInvalidPolicy, "[defaultNumPartitions] is not allowed to be set when the type is non-partition.")
		}
	default:
		name := string(a.Type)
		if name == "" {
			name = "null"
		}
		return Errorf(ErrInvalidPolicy, "Unknown topic type [%s]", name)
	}
	return nil
}
