package broker

import "net/http"

// TerminateTopic terminates a topic, as Pulsar's admin "terminate" does: it
// takes no more messages and keeps what it has for its subscriptions. Its
// producers are closed from the broker side; when they come back they get
// ERROR TopicTerminatedError (and a SEND that still arrives gets SEND_ERROR
// TopicTerminatedError). It returns the id of the topic's last message.
// pulsarsim does not send REACHED_END_OF_TOPIC to consumers that read to the
// end.
func (b *Broker) TerminateTopic(name string) (MessageID, error) {
	t := b.topicByName(name)
	if t == nil {
		return MessageID{}, ErrTopicNotFound
	}
	t.mu.Lock()
	t.terminated = true
	last := t.eventID(t.log.end() - 1)
	var closed []*Producer
	for p := range t.producers {
		t.closeProducerLocked(p)
		closed = append(closed, p)
	}
	t.mu.Unlock()
	for _, p := range closed {
		p.conn.forgetProducer(p)
	}
	return last, nil
}

// terminateTopic answers POST …/terminate with the last message id.
func (a *adminAPI) terminateTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	id, err := a.b.TerminateTopic(tn.String())
	if err != nil {
		reply(w, nil, topicStatus(err))
		return
	}
	reply(w, map[string]int64{"ledgerId": id.Ledger, "entryId": id.Entry, "partitionIndex": int64(id.Partition)}, nil)
}
