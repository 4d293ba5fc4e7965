package dispatch

import "slices"

// Duplicate dispatch, on request: Pulsar 4.0.8 now and then hands one
// redelivered entry of a Shared subscription to two consumers, both with the
// same redelivery count (a second replay read of the entry is issued before
// the first one's entries are sent; FIDELITY.md has the code path). The
// dispatcher never does that by itself. ReplayTwice makes it happen for
// chosen entries, so that a test can check how its consumers cope: the
// entry is replayed once more, uncounted, right after its replay, and goes to
// the next consumer in turn. Each consumer that got a copy holds it in its
// pending acks, as in Pulsar: a redeliver request from either one counts,
// and a consumer leaving sends its copy back to the replay queue even when
// another consumer still holds the entry. An acknowledgement releases every
// copy (Pulsar releases the acking consumer's and leaves the other one's
// until that consumer goes).

// ReplayTwice marks entries waiting in the replay queue of a Shared
// subscription (after Redeliver) to be replayed twice. Other entries, and
// other subscription types, are left alone.
func (d *Dispatcher) ReplayTwice(entries []int64) {
	if d.opts.Type != Shared {
		return
	}
	for _, e := range entries {
		if d.replay.contains(e) {
			if d.dupNext == nil {
				d.dupNext = make(map[int64]bool)
			}
			d.dupNext[e] = true
		}
	}
}

// Duplicated returns the entries that a duplicate dispatch (ReplayTwice)
// left with more than one holder: several consumers, or a consumer and the
// replay queue.
func (d *Dispatcher) Duplicated() []int64 {
	var out []int64
	for e := range d.dupMarked {
		if d.extra[e] != nil || (d.owner[e] != nil && d.replay.contains(e)) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// takeHolder records that c now holds e besides any consumer already holding
// it.
func (d *Dispatcher) takeHolder(c *consumer, e int64) {
	if o := d.owner[e]; o != nil && o != c {
		d.extra[e] = append(d.extra[e], c)
		return
	}
	d.owner[e] = c
}

// dropHolder records that c no longer holds e.
func (d *Dispatcher) dropHolder(c *consumer, e int64) {
	xs := d.extra[e]
	if d.owner[e] == c {
		if len(xs) == 0 {
			delete(d.owner, e)
			return
		}
		d.owner[e], xs = xs[0], xs[1:]
	} else {
		xs = slices.DeleteFunc(xs, func(o *consumer) bool { return o == c })
	}
	if len(xs) == 0 {
		delete(d.extra, e)
	} else {
		d.extra[e] = xs
	}
}

// sendAgain sends the second copy of the entries of the last read that were
// to be replayed twice: to the next available consumer in turn that does not
// hold the entry already. An entry the read could not hand out stays marked
// for its next replay; one that no other consumer can take now gets no
// second copy.
func (d *Dispatcher) sendAgain(log Log, out []Delivery) []Delivery {
	for _, e := range d.again {
		switch {
		case d.cur.IsAcked(e):
		case d.owner[e] == nil:
			d.dupNext[e] = true
		default:
			for range d.consumers {
				c := d.nextConsumer()
				if c == nil {
					break
				}
				if _, held := c.pending[e]; !held {
					out = append(out, d.deliverMulti(c, e, 0, log))
					if d.dupMarked == nil {
						d.dupMarked = make(map[int64]bool)
					}
					d.dupMarked[e] = true
					break
				}
			}
		}
	}
	d.again = d.again[:0]
	return out
}
