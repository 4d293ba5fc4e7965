package dispatch

// The unacknowledged-message limits of Shared and Key_Shared subscriptions,
// as Pulsar 4.0 applies them. Each consumer stops getting entries when it
// holds MaxUnackedPerConsumer unacknowledged messages, until it holds half
// of that (Consumer.addAndGetUnAckedMsgs, updateBlockedConsumerOnUnackedMsgs).
// The subscription as a whole stops reading new entries when its consumers
// hold MaxUnackedPerSubscription in all, until they hold fewer than half of
// that (PersistentDispatcherMultipleConsumers.addUnAckedMessages); meanwhile
// it still sends replays and delayed entries that fall due, as Pulsar's
// readMoreEntries still serves its replay set.

// SetMaxUnacked changes the per-consumer and per-subscription limits (the
// values of MaxUnackedPerConsumer and MaxUnackedPerSubscription: 0 means
// the default, negative unlimited), as when a policy changes. Nothing is
// decided again at once, as in Pulsar, which reads the limits only when a
// count changes: a consumer blocked at its limit stays blocked until its
// next acknowledgement or redelivery, and the subscription keeps its block
// (or goes on reading over a lowered limit) until its unacked count next
// changes.
func (d *Dispatcher) SetMaxUnacked(perConsumer, perSubscription int) {
	d.opts.MaxUnackedPerConsumer = perConsumer
	d.opts.MaxUnackedPerSubscription = perSubscription
	d.opts = d.opts.withDefaults()
}

// SubscriptionBlocked reports whether the subscription reads no new entries
// because of MaxUnackedPerSubscription.
func (d *Dispatcher) SubscriptionBlocked() bool { return d.subBlocked }

// maxUnackedSub returns the per-subscription limit, or 0 when unlimited.
func (d *Dispatcher) maxUnackedSub() int {
	if d.opts.MaxUnackedPerSubscription < 0 || d.opts.Type.singleActive() {
		return 0
	}
	return d.opts.MaxUnackedPerSubscription
}

// addUnacked changes consumer c's count of unacknowledged messages by n
// (never below 0), and the subscription's total with it, and decides the
// subscription's block unless a oneChange is under way.
func (d *Dispatcher) addUnacked(c *consumer, n int) {
	if c.unacked+n < 0 {
		n = -c.unacked
	}
	c.unacked += n
	d.totalUnacked += n
	if !d.oneChangeRunning {
		d.checkSubscriptionBlock()
	}
}

// oneChange runs f, whose changes of the unacked counts Pulsar makes as one
// (a consumer's redelivery request, or its leaving: one addUnAckedMessages
// with the sum), and decides the subscription's block once, after it, even
// when f changed nothing. After a limit change the difference shows: under
// a lowered limit, entries taken back one by one would block the
// subscription on the way down where their sum does not.
func (d *Dispatcher) oneChange(f func()) {
	d.oneChangeRunning = true
	f()
	d.oneChangeRunning = false
	d.checkSubscriptionBlock()
}

// checkSubscriptionBlock blocks the subscription at its limit and unblocks
// it below half of it, or when the limit is lifted; it runs whenever the
// unacked count changes, as Pulsar's addUnAckedMessages.
func (d *Dispatcher) checkSubscriptionBlock() {
	limit := d.maxUnackedSub()
	switch {
	case limit <= 0:
		d.subBlocked = false
	case d.totalUnacked >= limit:
		d.subBlocked = true
	case d.subBlocked && d.totalUnacked < limit/2:
		d.subBlocked = false
	}
}
