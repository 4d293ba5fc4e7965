package scenarios_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The subscription-wide unacknowledged-message limit
// (maxUnackedMessagesOnSubscription) as a client sees it, compared with a
// real Pulsar. Pulsar decides the block only when the subscription's
// unacked count changes, and a read in progress is delivered whole, so the
// story makes every read's size known: the messages are in before a read
// starts, and a read takes at most 100 entries (dispatcherMaxReadBatchSize).
//
// With a limit of 10 and 150 messages, the first read gives 100 and blocks
// the subscription; a second consumer gets nothing new, but messages nacked
// meanwhile are redelivered; acks down to half of the limit keep the block,
// one more lifts it and the next read gives the remaining 50, which blocks
// it again. Then the limit changes while the count stands still: raised to
// 1,000, the block stays until the next ack; lowered to 20 under 113
// unacked messages, the subscription is not blocked until the next read
// has gone out. The subscription's stats are compared at each step.

// collectQuietly receives from every consumer until none gets a message
// for 1.5 s, and returns what each got.
func collectQuietly(cs ...pulsar.Consumer) [][]pulsar.Message {
	got := make([][]pulsar.Message, len(cs))
	cases := make([]reflect.SelectCase, len(cs)+1)
	for i, c := range cs {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.Chan())}
	}
	for {
		timer := time.NewTimer(1500 * time.Millisecond)
		cases[len(cs)] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)}
		i, v, ok := reflect.Select(cases)
		timer.Stop()
		if i == len(cs) || !ok {
			return got
		}
		got[i] = append(got[i], v.Interface().(pulsar.ConsumerMessage).Message)
	}
}

// byCount describes messages by redelivery count: "n new, m redelivered".
func byCount(ms [][]pulsar.Message) string {
	fresh, again := 0, 0
	for _, list := range ms {
		for _, m := range list {
			if m.RedeliveryCount() == 0 {
				fresh++
			} else {
				again++
			}
		}
	}
	return fmt.Sprintf("%d new, %d redelivered", fresh, again)
}

// limitStats describes a subscription's stats: its unacked count, its
// blocked flag, its backlog, and its consumers' blocked flags.
func limitStats(t *testing.T, admin, topic, sub string) string {
	t.Helper()
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog                       int64
			UnackedMessages                  int64
			BlockedSubscriptionOnUnackedMsgs bool
			Consumers                        []struct {
				ConsumerName                 string
				UnackedMessages              int64
				BlockedConsumerOnUnackedMsgs bool
			}
		}
	}
	body := adminGet(t, admin, topicPath(topic)+"/stats")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("stats of %s: %v (%q)", topic, err, body)
	}
	s, ok := st.Subscriptions[sub]
	if !ok {
		return "no subscription " + sub
	}
	sum := int64(0)
	blocked := []string{}
	for _, c := range s.Consumers {
		sum += c.UnackedMessages
		if c.BlockedConsumerOnUnackedMsgs {
			blocked = append(blocked, c.ConsumerName)
		}
	}
	return fmt.Sprintf("unacked %d (consumers %d), blocked %v, backlog %d, consumers blocked %v",
		s.UnackedMessages, sum, s.BlockedSubscriptionOnUnackedMsgs, s.MsgBacklog, blocked)
}

// limitRun is one broker's run of the story: two Shared consumers of
// subscription "s", and the messages they hold unacknowledged.
type limitRun struct {
	t      *testing.T
	tg     *scenarios.Target
	admin  string
	topic  string
	client pulsar.Client
	cs     []pulsar.Consumer
	// held lists, per consumer, the messages it holds unacknowledged.
	held [][]pulsar.Message
	out  []string
}

func (r *limitRun) note(format string, args ...any) {
	r.out = append(r.out, fmt.Sprintf(format, args...))
}

// subscribe adds a consumer named name.
func (r *limitRun) subscribe(name string) {
	c, err := r.client.Subscribe(pulsar.ConsumerOptions{Topic: r.topic, SubscriptionName: "s", Name: name,
		Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize: 1000, AckWithResponse: true, NackRedeliveryDelay: 50 * time.Millisecond})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(c.Close)
	r.cs = append(r.cs, c)
	r.held = append(r.held, nil)
}

// collect notes what the consumers get until quiet, after what, and keeps
// it as held.
func (r *limitRun) collect(after string) {
	got := collectQuietly(r.cs...)
	r.note("%s: %s", after, byCount(got))
	for i := range got {
		r.held[i] = append(r.held[i], got[i]...)
	}
}

// stats notes the subscription's stats.
func (r *limitRun) stats(when string) {
	r.note("stats %s: %s", when, limitStats(r.t, r.admin, r.topic, "s"))
}

// ack acknowledges n of the held messages (with ACK_RESPONSE, so the
// broker has them when it returns), the first consumer's first.
func (r *limitRun) ack(n int) {
	for i, c := range r.cs {
		for n > 0 && len(r.held[i]) > 0 {
			if err := c.Ack(r.held[i][0]); err != nil {
				r.t.Fatalf("ack %v: %v", r.held[i][0].ID(), err)
			}
			r.held[i] = r.held[i][1:]
			n--
		}
	}
	if n > 0 {
		r.t.Fatalf("%d acks more than the messages held", n)
	}
}

// holding returns how many messages the consumers hold.
func (r *limitRun) holding() int {
	n := 0
	for _, h := range r.held {
		n += len(h)
	}
	return n
}

// setLimit sets the topic's limit and waits until a GET serves it (the
// real broker applies topic policies in the background).
func (r *limitRun) setLimit(n int) {
	path := topicPath(r.topic) + "/maxUnackedMessagesOnSubscription"
	r.note("set the limit to %d: %d", n, adminDo(r.t, r.admin, "POST", path, fmt.Sprint(n)))
	r.note("served: %v", eventually(func() bool { return strings.TrimSpace(adminGet(r.t, r.admin, path)) == fmt.Sprint(n) }))
}

// unackedStory runs the scenario against a broker and describes what the
// consumers get and what the stats say.
func unackedStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: tg.URL, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	r := &limitRun{t: t, tg: tg, admin: admin, topic: tg.Topic("unacked-sub"), client: client}
	r.note("create: %d", adminDo(t, admin, "PUT", topicPath(r.topic), ""))
	r.setLimit(10)
	tg.Produce(r.topic, 150, nil)
	r.subscribe("a")
	r.collect("a's first read")
	r.stats("after the first read")
	r.subscribe("b")
	r.collect("b joins while blocked")

	// Nacks lower the count without reaching half of the limit: the
	// redeliveries go out, nothing new is read.
	nacked := r.held[0][:min(60, len(r.held[0]))]
	r.held[0] = r.held[0][len(nacked):]
	for _, m := range nacked {
		r.cs[0].Nack(m)
	}
	r.collect("after a nacks 60")
	r.stats("after the redeliveries")

	// Acks down to half of the limit keep the block; one more lifts it.
	r.ack(max(r.holding()-5, 0))
	r.collect("after acks down to 5 held")
	r.stats("at half of the limit")
	r.ack(1)
	r.collect("after one more ack")
	r.stats("after the next read")
	limitChanges(r)
	return r.out
}

// limitChanges runs the second part of the story: the limit changes while
// the unacked count stands still.
func limitChanges(r *limitRun) {
	r.tg.Produce(r.topic, 60, nil)
	r.collect("60 more while blocked")
	r.setLimit(1000)
	r.collect("after the limit is raised")
	r.stats("after the limit is raised")
	r.ack(1)
	r.collect("after the next ack")
	r.stats("after the next ack")

	r.setLimit(20)
	r.stats("after the limit is lowered")
	r.tg.Produce(r.topic, 1, nil)
	r.collect("one more message")
	r.stats("after that message")
	r.tg.Produce(r.topic, 9, nil)
	r.collect("9 more")
	r.ack(r.holding())
	r.collect("after acking everything")
	r.stats("after acking everything")
	r.ack(r.holding())
	r.stats("at the end")
}

// TestDifferentialSubscriptionUnackedLimit runs the subscription-wide
// unacked limit's story on both brokers.
func TestDifferentialSubscriptionUnackedLimit(t *testing.T) {
	sameStoryOnBoth(t, unackedStory)
}
