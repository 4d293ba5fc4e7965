package scenarios_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// clusterEventKind is a cluster event of a generated case.
type clusterEventKind int

const (
	eventMove    clusterEventKind = iota // unload the topic's bundle, naming another broker
	eventUnload                          // unload the topic's bundle
	eventCrash                           // crash the owner, let the ownership expire, start it again
	eventRestart                         // stop the owner gracefully and start it again
)

func (k clusterEventKind) GoString() string {
	return [...]string{"move", "unload", "crash", "restart"}[k]
}

// clusterEvent strikes before the handler sees delivery After.
type clusterEvent struct {
	After int
	Kind  clusterEventKind
	To    int // for a move: how many brokers on from the owner (1 or 2)
}

// clusterCase is one generated run: messages, a dead-letter limit, a
// script of acks and nacks per (message, attempt), and cluster events.
type clusterCase struct {
	Messages      int
	MaxDeliveries uint32
	Script        testkit.ScriptTable
	Events        []clusterEvent
}

func genClusterCase(t *rapid.T) clusterCase {
	return clusterCase{
		Messages:      rapid.IntRange(1, 6).Draw(t, "messages"),
		MaxDeliveries: uint32(rapid.IntRange(2, 4).Draw(t, "maxDeliveries")),
		Script:        testkit.Scripts(testkit.Ack, testkit.Nack).Draw(t, "script"),
		Events: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) clusterEvent {
			return clusterEvent{
				After: rapid.IntRange(0, 12).Draw(t, "after"),
				Kind:  clusterEventKind(rapid.IntRange(0, 3).Draw(t, "kind")),
				To:    rapid.IntRange(1, 2).Draw(t, "to"),
			}
		}), 0, 3).Draw(t, "events"),
	}
}

// TestClusterSettlementHoldsAcrossMovesCrashesAndRestarts runs a Shared
// consumer of a three-broker cluster through generated scripts of acks and
// nacks, with the topic moved, unloaded, its broker crashed or restarted
// between deliveries, and checks Pulsar's rules after each such event:
// nothing is lost (every message is acked by the handler or dead-lettered),
// a delivery's count never exceeds the nacks of its message, each broker
// starts a topic it loads with every count at 0, an acknowledged message
// comes back only after an event that can lose the acknowledgement, and the
// settlement invariants hold on every broker.
func TestClusterSettlementHoldsAcrossMovesCrashesAndRestarts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		runClusterCase(t, rt, genClusterCase(rt))
	})
}

// delivery is one message the handler got, and what had happened before:
// the message's nacks, whether the handler had acked it, and whether that
// return of an acked message was within what the cluster events allow.
//
// Each event lets every message come back after its ack up to twice: the
// client may still hold a copy the old broker sent when the new one
// delivers it again as unacknowledged, and an ack is lost when it is sent
// while the consumer moves (pulsar-client-go does not resend it) or when
// the crashed broker had not persisted it. Without events, no acked
// message comes back.
type delivery struct {
	i, count, nacksBefore int
	ackedBefore           bool
	returnAllowed         bool
}

func runClusterCase(t *testing.T, rt *rapid.T, cc clusterCase) {
	tb, done := testkit.CaseTB(t, rt)
	defer done()
	c := testkit.StartCluster(tb, 3)
	const topic, dlq = "persistent://public/default/orders", "persistent://public/default/orders-dlq"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := c.Client()
	opts := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		NackRedeliveryDelay: 10 * time.Millisecond}
	if !raceDetector { // see race_on_test.go
		opts.DLQ = &pulsar.DLQPolicy{MaxDeliveries: cc.MaxDeliveries, DeadLetterTopic: dlq}
	}
	cons, err := client.Subscribe(opts)
	if err != nil {
		rt.Fatal(err)
	}
	defer cons.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		rt.Fatal(err)
	}
	for i := range cc.Messages {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(i)),
			Properties: map[string]string{"i": strconv.Itoa(i)}}); err != nil {
			rt.Fatal(err)
		}
	}
	p.Close() // sends after a move race in the client; the case needs none

	nacks, attempts := map[int]int{}, map[int]int{}
	acked := map[int]bool{}
	returns := map[int]int{} // how often each message may still come back after its ack
	var deliveries []delivery
	n := 0
	for settled := false; !settled; {
		rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := cons.Receive(rctx)
		rcancel()
		if err != nil {
			if ctx.Err() != nil {
				rt.Fatalf("the case did not settle: acked %v, deliveries %v", acked, deliveries)
			}
			settled = clusterSettled(c, topic)
			continue
		}
		i := testkit.MessageIndex(m)
		d := delivery{i: i, count: int(m.RedeliveryCount()), nacksBefore: nacks[i], ackedBefore: acked[i]}
		if acked[i] {
			d.returnAllowed = returns[i] > 0
			returns[i]--
		}
		for _, ev := range cc.Events {
			if ev.After == n {
				applyClusterEvent(c, topic, ev)
				for j := range cc.Messages {
					returns[j] += 2
				}
			}
		}
		n++
		deliveries = append(deliveries, d)
		if cc.Script.Outcome(i, attempts[i]) == testkit.Nack {
			nacks[i]++
			cons.Nack(m)
		} else {
			acked[i] = true
			cons.Ack(m)
		}
		attempts[i]++
	}

	dead := map[int]bool{}
	if opts.DLQ != nil {
		if owner := c.Owner(dlq); owner >= 0 {
			for _, m := range c.Messages(dlq) {
				if i, err := strconv.Atoi(m.Properties["i"]); err == nil {
					dead[i] = true
				}
			}
		}
	}
	for i := range cc.Messages {
		if !acked[i] && !dead[i] {
			rt.Errorf("message %d lost: neither acked by the handler nor dead-lettered (deliveries %v)", i, deliveries)
		}
	}
	for _, d := range deliveries {
		if d.count > d.nacksBefore {
			rt.Errorf("message %d delivered with count %d after %d nacks", d.i, d.count, d.nacksBefore)
		}
		if d.ackedBefore && !d.returnAllowed {
			rt.Errorf("message %d came back after its ack more often than the cluster events allow", d.i)
		}
	}
	for b := range c.Size() {
		for _, v := range countsAfterLoad(c.Broker(b).Events(), topic) {
			rt.Errorf("broker %d: %s", b, v)
		}
	}
	if err := c.CheckInvariants(); err != nil {
		rt.Error(err)
	}
}

// clusterSettled reports whether the subscription has nothing left, as the
// broker owning the topic shows it.
func clusterSettled(c *testkit.Cluster, topic string) bool {
	owner := c.Owner(topic)
	if owner < 0 {
		return false
	}
	s, ok := c.Broker(owner).Subscription(topic, "s")
	return ok && s.Backlog == 0
}

// applyClusterEvent does ev to the broker owning topic.
func applyClusterEvent(c *testkit.Cluster, topic string, ev clusterEvent) {
	owner := c.Owner(topic)
	if owner < 0 {
		return // moving: nobody owns it until the next lookup
	}
	switch ev.Kind {
	case eventMove:
		c.Move(topic, (owner+ev.To)%c.Size())
	case eventUnload:
		c.Unload(topic)
	case eventCrash:
		c.Crash(owner)
		c.Advance(testkit.DefaultOwnershipTimeout)
		c.Start(owner)
	case eventRestart:
		c.Restart(owner)
	}
}

// countsAfterLoad checks Pulsar's rule for a topic a broker loads: its
// dispatchers start with no redelivery counts, so each entry's first
// delivery after the load carries count 0.
func countsAfterLoad(events []testkit.Event, topic string) []string {
	var out []string
	seen := map[int64]bool{}
	for _, e := range events {
		if e.Topic != topic {
			continue
		}
		switch e.Kind {
		case testkit.EventTopicLoaded:
			clear(seen)
		case testkit.EventDelivered:
			if !seen[e.ID.Entry] && e.RedeliveryCount != 0 {
				out = append(out, fmt.Sprintf("entry %d's first delivery after the topic loaded carried count %d (event %d)",
					e.ID.Entry, e.RedeliveryCount, e.Seq))
			}
			seen[e.ID.Entry] = true
		}
	}
	return out
}
