package broker

// topicNotFound is ErrTopicNotFound worded as Pulsar words it.
func topicNotFound(tn TopicName) error {
	return errorf(ErrTopicNotFound, "Topic %s not found", tn)
}
