package broker

import (
	"time"

	"github.com/pulsarsim/pulsarsim/dispatch"
	"github.com/pulsarsim/pulsarsim/rate"
)

// Dispatch rate limits, as Pulsar 4.0.8 applies them
// (DispatchRateLimiterAsyncTokenBucketImpl): a topic's dispatch rate
// (Policies.DispatchRate) is shared by all of its subscriptions, and each
// subscription has its own (Policies.SubscriptionDispatchRate, or the one
// set for it by name in Policies.SubscriptionDispatchRates). Each limit
// is a bucket of messages and one of bytes, refilled once per rate period
// and starting full. Before each read the dispatcher takes no more entries
// than the buckets hold messages and stops at the entry that reaches their
// bytes; what it delivers is then charged, in messages, so batches may
// leave the buckets owing. With an empty bucket it reads nothing, and the
// subscription tries again a second later on the broker clock
// (MESSAGE_RATE_BACKOFF_MS), or at its next event. Non-persistent topics
// are not limited. relativeToPublishRate is not supported: the limits are
// taken as they are.

// dispatchRetry is Pulsar's MESSAGE_RATE_BACKOFF_MS.
const dispatchRetry = time.Second

// dispatchLimiter is one dispatch rate limit, under its topic's lock.
type dispatchLimiter struct {
	limit DispatchRate // the policy the buckets were made for
	msgs  *rate.Bucket
	bytes *rate.Bucket
}

// set makes new, full buckets when the policy changed.
func (l *dispatchLimiter) set(limit DispatchRate, now int64) {
	if limit == l.limit {
		return
	}
	l.limit, l.msgs, l.bytes = limit, nil, nil
	period := int64(max(limit.PeriodSeconds, 1)) * rate.SecondNanos
	if limit.Messages > 0 {
		l.msgs = rate.New(int64(limit.Messages), period, period, now)
	}
	if limit.Bytes > 0 {
		l.bytes = rate.New(limit.Bytes, period, period, now)
	}
}

// active reports whether the limit limits anything.
func (l *dispatchLimiter) active() bool { return l.msgs != nil || l.bytes != nil }

// allowance narrows a read's allowance (entries, bytes; -1: none) by the
// tokens of the limit.
func (l *dispatchLimiter) allowance(entries int, bytes, now int64) (int, int64) {
	if l.msgs != nil {
		n := int(max(l.msgs.Tokens(now), 0))
		if entries < 0 || n < entries {
			entries = n
		}
	}
	if l.bytes != nil {
		n := max(l.bytes.Tokens(now), 0)
		if bytes < 0 || n < bytes {
			bytes = n
		}
	}
	return entries, bytes
}

// spend charges the limit with what a read delivered.
func (l *dispatchLimiter) spend(msgs, bytes, now int64) {
	if l.msgs != nil && msgs > 0 {
		l.msgs.Consume(msgs, now)
	}
	if l.bytes != nil && bytes > 0 {
		l.bytes.Consume(bytes, now)
	}
}

// rateBudget is the dispatch.Budget of one dispatch of a subscription: the
// topic's limit and the subscription's, at time now.
type rateBudget struct {
	s         *Subscription
	now       int64
	throttled bool // a read found no tokens
}

// Allowance is the smaller of the two limits' tokens (dispatch.Budget).
func (b *rateBudget) Allowance() (int, int64) {
	entries, bytes := b.s.topic.dispatchRate.allowance(-1, -1, b.now)
	entries, bytes = b.s.dispatchRate.allowance(entries, bytes, b.now)
	if entries == 0 || bytes == 0 {
		b.throttled = true
	}
	return entries, bytes
}

// Spend charges both limits (dispatch.Budget).
func (b *rateBudget) Spend(messages int, bytes int64) {
	b.s.topic.dispatchRate.spend(int64(messages), bytes, b.now)
	b.s.dispatchRate.spend(int64(messages), bytes, b.now)
}

// rateBudgetLocked returns the budget of a dispatch at now, or nil when no
// dispatch rate limits the subscription.
func (s *Subscription) rateBudgetLocked(now time.Time) *rateBudget {
	t := s.topic
	if !t.name.Persistent {
		return nil
	}
	p := t.policiesLocked()
	ns := now.UnixNano()
	t.dispatchRate.set(*p.DispatchRate, ns)
	own, ok := p.SubscriptionDispatchRates[s.name]
	if !ok {
		own = *p.SubscriptionDispatchRate
	}
	s.dispatchRate.set(own, ns)
	if !t.dispatchRate.active() && !s.dispatchRate.active() {
		return nil
	}
	return &rateBudget{s: s, now: ns}
}

// deliveriesLocked runs the dispatcher at now, under the dispatch rate
// limits that apply to the subscription. When a limit finds no tokens, the
// subscription reads again dispatchRetry later (or at its next event).
func (s *Subscription) deliveriesLocked(now time.Time) []dispatch.Delivery {
	log := topicLog{s.topic, s}
	budget := s.rateBudgetLocked(now)
	if budget == nil {
		return s.disp.DispatchGated(log, s.gate.reset(s))
	}
	out := s.disp.DispatchWith(log, s.gate.reset(s), budget)
	if budget.throttled && s.retryAt == 0 {
		s.retryAt = now.Add(dispatchRetry).UnixMilli()
	}
	return out
}
