package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// check takes the broker's counters and checks that none went down since
// the last look, and that the settlement invariants hold.
func (s *soak) check() {
	s.checks.Add(1)
	for _, topic := range s.topics {
		st, err := s.b.TopicStats(topic)
		if err != nil {
			s.fail(fmt.Errorf("stats of %s: %w", topic, err))
			continue
		}
		snap, _ := s.b.Topic(topic)
		s.mu.Lock()
		last, seen := s.counters[topic]
		if seen {
			for _, c := range []struct {
				name     string
				was, now int64
			}{
				{"msgInCounter", last.MsgInCounter, st.MsgInCounter},
				{"bytesInCounter", last.BytesInCounter, st.BytesInCounter},
				{"msgOutCounter", last.MsgOutCounter, st.MsgOutCounter},
				{"bytesOutCounter", last.BytesOutCounter, st.BytesOutCounter},
				{"entries", s.entries[topic], snap.Entries},
			} {
				if c.now < c.was {
					s.failures = append(s.failures, fmt.Errorf("%s of %s went down from %d to %d", c.name, topic, c.was, c.now))
				}
			}
			for name, sub := range st.Subscriptions {
				if was := last.Subscriptions[name].MsgOutCounter; sub.MsgOutCounter < was {
					s.failures = append(s.failures, fmt.Errorf("msgOutCounter of %s/%s went down from %d to %d",
						topic, name, was, sub.MsgOutCounter))
				}
			}
		}
		s.counters[topic], s.entries[topic] = st, snap.Entries
		s.mu.Unlock()
	}
	if vs := s.b.CheckSettlement(); len(vs) > 0 {
		s.fail(fmt.Errorf("settlement invariant broken: %v", vs[0]))
	}
	if m := measure(); m.heap > s.peak.heap || m.goroutines > s.peak.goroutines {
		s.peak.heap, s.peak.goroutines = max(s.peak.heap, m.heap), max(s.peak.goroutines, m.goroutines)
	}
}

// drain waits until every subscription has acknowledged everything.
func (s *soak) drain(o options) error {
	deadline := time.Now().Add(o.drainTimeout)
	for {
		left := int64(0)
		for _, topic := range s.topics {
			st, err := s.b.TopicStats(topic)
			if err != nil {
				return err
			}
			for _, sub := range st.Subscriptions {
				left += sub.MsgBacklog
			}
		}
		if left == 0 {
			return s.firstFailure()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d entries still unacknowledged after %v", left, o.drainTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkNothingLost checks that every published message was received on
// every subscription, and reports the duplicates.
func (s *soak) checkNothingLost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range subscriptions {
		got := s.received[sub.name]
		missing, dups := 0, 0
		for key := range s.sent {
			switch n := got[key]; {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
			}
		}
		fmt.Printf("soak: %-9s received %d distinct of %d published, %d more than once\n",
			sub.name, len(got), len(s.sent), dups)
		if missing > 0 {
			return fmt.Errorf("%s lost %d of %d messages", sub.name, missing, len(s.sent))
		}
	}
	fmt.Printf("soak: %d acknowledged deliveries, %d negative acknowledgements\n", s.delivered.Load(), s.nacked.Load())
	fmt.Printf("soak: %d checks of counters and invariants, %d consumers reopened or disconnected\n",
		s.checks.Load(), s.disturbed.Load())
	return nil
}

// close closes the consumers, producers, clients and broker.
func (s *soak) close() {
	for _, cc := range s.consumers {
		cc.closeConsumer()
	}
	for _, p := range s.producers {
		p.Close()
	}
	for _, c := range s.clients {
		c.Close()
	}
	s.b.Close()
}

// backToBaseline checks that goroutines and heap come back to what they
// were before the run, allowing some time for the last ones to end.
func backToBaseline(base, peak memory) error {
	const slackGoroutines, slackHeap = 2, 4 << 20
	var now memory
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		now = measure()
		if now.goroutines <= base.goroutines+slackGoroutines && now.heap <= base.heap+slackHeap {
			break
		}
		if time.Now().After(deadline) {
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			return fmt.Errorf("after close: %d goroutines (baseline %d), heap %s (baseline %s)",
				now.goroutines, base.goroutines, mib(now.heap), mib(base.heap))
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("soak: peak %d goroutines, heap %s; after close %d goroutines (baseline %d), heap %s (baseline %s)\n",
		peak.goroutines, mib(peak.heap), now.goroutines, base.goroutines, mib(now.heap), mib(base.heap))
	return nil
}
