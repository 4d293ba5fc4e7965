package broker

import (
	"net"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The subscribe rate (Pulsar's SubscribeRateLimiter), applied to a
// persistent topic when its subscribeRate policy (topic over namespace)
// allows fewer than unlimited subscribes: each consumer, known by its
// client's host, its name and its consumer id, may subscribe PerConsumer
// times a period; the next SUBSCRIBE in that period is refused with
// NotAllowedError. Pulsar forgets every count at the end of each period,
// counted from when the topic first needed the limit; so does this, on the
// broker clock. A consumer that reconnects keeps its name and id, so the
// limit is what stops a reconnection storm; a new consumer has a new id.

// subscriberID is who a subscribe counts for.
type subscriberID struct {
	host, name string
	id         uint64
}

// subscribeRate is a topic's subscribe counts in the current period.
type subscribeRate struct {
	periodEnd time.Time
	counts    map[subscriberID]int
}

// subscribeRateRefusalLocked counts sub against the topic's subscribe rate
// and refuses it when its consumer has used the period's subscribes.
func (t *Topic) subscribeRateRefusalLocked(c *conn, sub *pb.CommandSubscribe) *refusal {
	if !t.name.Persistent {
		return nil
	}
	r := t.policiesLocked().SubscribeRate
	if r == nil || r.PerConsumer <= 0 {
		t.subRate = subscribeRate{}
		return nil
	}
	period := time.Duration(max(r.PeriodSeconds, 1)) * time.Second
	now := t.b.cfg.clock.Now()
	switch {
	case t.subRate.counts == nil:
		t.subRate = subscribeRate{periodEnd: now.Add(period), counts: map[subscriberID]int{}}
	case !now.Before(t.subRate.periodEnd):
		// The periods follow each other from the first one on.
		for !now.Before(t.subRate.periodEnd) {
			t.subRate.periodEnd = t.subRate.periodEnd.Add(period)
		}
		clear(t.subRate.counts)
	}
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	id := subscriberID{host: host, name: sub.GetConsumerName(), id: sub.GetConsumerId()}
	if t.subRate.counts[id] >= r.PerConsumer {
		return &refusal{pb.ServerError_NotAllowedError, "Subscribe limited by subscribe rate limit per consumer."}
	}
	t.subRate.counts[id]++
	return nil
}
