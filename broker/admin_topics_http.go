package broker

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Admin HTTP handlers for topics, partitioned topics, subscriptions and
// topic policies.

// topicStatus maps the broker's topic errors to HTTP statuses.
func topicStatus(err error) error {
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.Is(err, ErrTopicNotFound), errors.Is(err, ErrPartitionedTopicNotFound):
		return errStatus(http.StatusNotFound, err.Error())
	case errors.Is(err, ErrTopicExists):
		return errStatus(http.StatusConflict, "This topic already exists")
	case errors.Is(err, ErrTopicBusy):
		return errStatus(http.StatusPreconditionFailed, err.Error())
	}
	return errStatus(http.StatusPreconditionFailed, err.Error())
}

// requireNamespace fails with 404 when the topic's namespace does not exist.
func (a *adminAPI) requireNamespace(tn TopicName) error {
	if !a.b.NamespaceExists(tn.NamespaceName()) {
		return namespaceStatus(ErrNamespaceNotFound)
	}
	return nil
}

func (a *adminAPI) createTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil {
		err = a.requireNamespace(tn)
	}
	if err == nil {
		err = topicStatus(a.b.CreateTopic(tn.String()))
	}
	reply(w, nil, err)
}

func (a *adminAPI) deleteTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil {
		err = topicStatus(a.b.DeleteTopic(tn.String(), boolParam(r, "force")))
	}
	reply(w, nil, err)
}

func (a *adminAPI) createPartitionedTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	var n int
	if err == nil {
		n, err = readInt(r)
	}
	if err == nil {
		err = a.requireNamespace(tn)
	}
	if err == nil && n < 1 {
		err = errStatus(http.StatusNotAcceptable, "Number of partitions should be more than 0")
	}
	if err == nil {
		err = topicStatus(a.b.CreatePartitionedTopic(tn.String(), n))
	}
	reply(w, nil, err)
}

func (a *adminAPI) updatePartitions(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	var n int
	if err == nil {
		n, err = readInt(r)
	}
	if err == nil {
		err = topicStatus(a.b.UpdatePartitionedTopic(tn.String(), n))
	}
	reply(w, nil, err)
}

// getPartitions answers the partitioned metadata: N for a partitioned topic,
// 0 for any other, as Pulsar answers when auto-creation is allowed.
func (a *adminAPI) getPartitions(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if !a.b.topicExists(tn) && !a.b.cfg.autoCreateTopics {
		reply(w, nil, errStatus(http.StatusNotFound, "Topic not found"))
		return
	}
	reply(w, map[string]int{"partitions": a.b.partitions(tn)}, nil)
}

func (a *adminAPI) deletePartitionedTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil {
		err = topicStatus(a.b.DeletePartitionedTopic(tn.String(), boolParam(r, "force")))
	}
	reply(w, nil, err)
}

// listTopics lists the namespace's topics of the path's domain, each
// partition of a partitioned topic separately, as Pulsar's getList does.
func (a *adminAPI) listTopics(w http.ResponseWriter, r *http.Request) {
	ns, ok := a.existingNamespace(w, r)
	if !ok {
		return
	}
	mode := pb.CommandGetTopicsOfNamespace_PERSISTENT
	if r.PathValue("domain") == "non-persistent" {
		mode = pb.CommandGetTopicsOfNamespace_NON_PERSISTENT
	} else if r.PathValue("domain") != "persistent" {
		reply(w, nil, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path))
		return
	}
	reply(w, a.b.TopicsOfNamespace(ns, mode), nil)
}

// listPartitionedTopics lists the namespace's partitioned topics by name.
func (a *adminAPI) listPartitionedTopics(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	prefix := r.PathValue("domain") + "://" + ns + "/"
	a.b.mu.Lock()
	out := []string{}
	for base := range a.b.partitioned {
		if strings.HasPrefix(base, prefix) {
			out = append(out, base)
		}
	}
	a.b.mu.Unlock()
	sort.Strings(out)
	reply(w, out, nil)
}

func (a *adminAPI) unloadTopic(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil {
		err = topicStatus(a.b.UnloadTopic(tn.String()))
	}
	reply(w, nil, err)
}

// existingTopic returns the topic named by the path, or a 404.
func (a *adminAPI) existingTopic(r *http.Request) (*Topic, error) {
	tn, err := topicFromPath(r)
	if err != nil {
		return nil, err
	}
	t := a.b.lookupTopic(tn.String())
	if t == nil {
		return nil, errStatus(http.StatusNotFound, "Topic not found")
	}
	return t, nil
}

func (a *adminAPI) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var ts []*Topic
	if n := a.b.partitions(tn); n > 0 {
		for i := 0; i < n; i++ {
			if t := a.b.lookupTopic(tn.PartitionName(i).String()); t != nil {
				ts = append(ts, t)
			}
		}
	} else if t := a.b.lookupTopic(tn.String()); t != nil {
		ts = append(ts, t)
	} else {
		reply(w, nil, errStatus(http.StatusNotFound, "Topic not found"))
		return
	}
	set := map[string]bool{}
	for _, t := range ts {
		t.mu.Lock()
		for name := range t.subs {
			set[name] = true
		}
		t.mu.Unlock()
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	reply(w, out, nil)
}

// createSubscription creates a durable subscription at the latest position
// (or at the message id of the body, or at the earliest for a body of
// {"ledgerId": -1, "entryId": -1} … as pulsaradmin sends), on every
// partition of a partitioned topic.
func (a *adminAPI) createSubscription(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var body struct {
		LedgerID *int64 `json:"ledgerId"`
		EntryID  *int64 `json:"entryId"`
	}
	_ = decodeJSON(r, &body)
	names := []TopicName{tn}
	if n := a.b.partitions(tn); n > 0 {
		names = names[:0]
		for i := 0; i < n; i++ {
			names = append(names, tn.PartitionName(i))
		}
	}
	sub := r.PathValue("sub")
	for _, name := range names {
		t, ok := a.b.getOrCreateTopic(name, a.b.cfg.autoCreateTopics)
		if !ok {
			reply(w, nil, errStatus(http.StatusNotFound, "Topic not found"))
			return
		}
		t.mu.Lock()
		if t.subs[sub] != nil {
			t.mu.Unlock()
			reply(w, nil, errStatus(http.StatusConflict, "Subscription already exists for topic"))
			return
		}
		md := t.log.end() - 1
		if body.LedgerID != nil && body.EntryID != nil {
			switch l := *body.LedgerID; {
			case l < 0 || (l < int64(t.ledger)):
				md = t.log.base - 1
			case l == int64(t.ledger) && *body.EntryID < t.log.end():
				md = max(*body.EntryID-1, t.log.base-1)
			}
		}
		t.newSubscriptionLocked(sub, true, md)
		t.mu.Unlock()
	}
	reply(w, nil, nil)
}

func (a *adminAPI) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	names := []TopicName{tn}
	if n := a.b.partitions(tn); n > 0 {
		names = names[:0]
		for i := 0; i < n; i++ {
			names = append(names, tn.PartitionName(i))
		}
	}
	sub, force, found := r.PathValue("sub"), boolParam(r, "force"), false
	for _, name := range names {
		t := a.b.lookupTopic(name.String())
		if t == nil {
			continue
		}
		t.mu.Lock()
		s := t.subs[sub]
		if s == nil {
			t.mu.Unlock()
			continue
		}
		found = true
		if len(s.consumers) > 0 && !force {
			t.mu.Unlock()
			reply(w, nil, errStatus(http.StatusPreconditionFailed, "Subscription has active connected consumers"))
			return
		}
		closed := s.closeConsumersLocked(nil, nil)
		delete(t.subs, sub)
		t.mu.Unlock()
		forgetAll(nil, closed)
	}
	if !found {
		reply(w, nil, errStatus(http.StatusNotFound, "Subscription not found"))
		return
	}
	reply(w, nil, nil)
}

// messageByID answers one stored entry the way Pulsar's REST API does: the
// (uncompressed) payload as the body, the metadata in X-Pulsar-* headers.
func (a *adminAPI) messageByID(w http.ResponseWriter, r *http.Request) {
	t, err := a.existingTopic(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	ledger, err1 := strconv.ParseInt(r.PathValue("ledger"), 10, 64)
	entryID, err2 := strconv.ParseInt(r.PathValue("entry"), 10, 64)
	if err1 != nil || err2 != nil {
		reply(w, nil, errStatus(http.StatusPreconditionFailed, "Invalid message id"))
		return
	}
	t.mu.Lock()
	var data []byte
	if ledger == int64(t.ledger) {
		if e := t.log.get(entryID); e != nil {
			data = e.data
		}
	}
	t.mu.Unlock()
	if data == nil {
		reply(w, nil, errStatus(http.StatusNotFound, "Message not found"))
		return
	}
	hdr, body, err := restMessage(data)
	if err != nil {
		reply(w, nil, err)
		return
	}
	hdr.Set("X-Pulsar-Message-ID", strconv.FormatInt(ledger, 10)+":"+strconv.FormatInt(entryID, 10))
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(body)
}

// topicOwnTTL returns the topic's own message TTL policy.
func (b *Broker) topicOwnTTL(tn TopicName) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.topicTTL[tn.Base().String()]
	return d, ok
}

func (a *adminAPI) getTopicTTL(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil && !a.b.topicExists(tn) {
		err = errStatus(http.StatusNotFound, "Topic not found")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	d, ok := a.b.topicOwnTTL(tn)
	if !ok && boolParam(r, "applied") {
		d = a.b.messageTTL(tn)
	}
	reply(w, int(d/time.Second), nil)
}

func (a *adminAPI) setTopicTTL(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil && !a.b.topicExists(tn) {
		err = errStatus(http.StatusNotFound, "Topic not found")
	}
	var secs int
	if err == nil {
		secs, err = strconv.Atoi(r.URL.Query().Get("messageTTL"))
		if err != nil || secs < 0 {
			err = errStatus(http.StatusPreconditionFailed, "Invalid value for message TTL, message TTL must >= 0")
		}
	}
	if err == nil {
		err = a.b.SetTopicMessageTTL(tn.String(), time.Duration(secs)*time.Second)
	}
	reply(w, nil, err)
}

func (a *adminAPI) removeTopicTTL(w http.ResponseWriter, r *http.Request) {
	tn, err := topicFromPath(r)
	if err == nil && !a.b.topicExists(tn) {
		err = errStatus(http.StatusNotFound, "Topic not found")
	}
	if err == nil {
		err = a.b.SetTopicMessageTTL(tn.String(), 0)
	}
	reply(w, nil, err)
}
