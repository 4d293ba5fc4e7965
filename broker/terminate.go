package broker

// TerminateTopic terminates a topic, as Pulsar's admin "terminate" does: it
// takes no more messages and keeps what it has for its subscriptions. Its
// producers are closed from the broker side; when they come back they get
// ERROR TopicTerminatedError (and a SEND that still arrives gets SEND_ERROR
// TopicTerminatedError). The consumers of subscriptions that have
// acknowledged everything get REACHED_END_OF_TOPIC now, the others once they
// have (endoftopic.go). It returns the id of the topic's last message.
func (b *Broker) TerminateTopic(name string) (MessageID, error) {
	tn, err := ParseTopicName(name)
	if err != nil {
		return MessageID{}, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return MessageID{}, topicNotFound(tn)
	}
	t.mu.Lock()
	t.terminated = true
	t.saveLedgerLocked()
	last := t.eventID(t.log.End() - 1)
	for p := range t.producers {
		t.closeProducerLocked(p)
	}
	for _, s := range t.subs {
		s.reachedEndLocked()
	}
	t.mu.Unlock()
	return last, nil
}
