package scenarios_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// subscribeRateStory sets a topic's subscribe rate to one subscribe per
// consumer a period, loads the topic again so that it reads the policy as
// it loads (a real broker applies a policy change asynchronously), and
// subscribes with a raw client: the same consumer (name and id) again after
// closing it, another id, another name.
func subscribeRateStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	topic := tg.Topic("subscribe-rate")
	path := admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	if status, body := adminCall(t, "PUT", path, ""); status != http.StatusNoContent {
		t.Fatalf("create %s: %d %s", topic, status, body)
	}
	rate := `{"subscribeThrottlingRatePerConsumer":1,"ratePeriodInSecond":30}`
	if status, body := adminCall(t, "POST", path+"/subscribeRate", rate); status/100 != 2 {
		t.Fatalf("set the subscribe rate: %d %s", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := adminCall(t, "GET", path+"/subscribeRate", "")
		if status == http.StatusOK && strings.Contains(body, `"subscribeThrottlingRatePerConsumer":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscribe rate never showed: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, body := adminCall(t, "PUT", path+"/unload", ""); status != http.StatusNoContent {
		t.Fatalf("unload: %d %s", status, body)
	}
	c := dialWire(t, tg.URL)
	c.lookup(topic)
	rid := uint64(200)
	subscribe := func(id uint64, name string) string {
		rid++
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
			Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(id),
			ConsumerName: proto.String(name), RequestId: proto.Uint64(rid)}))
		return describe(c.read())
	}
	closeConsumer := func(id uint64) string {
		rid++
		c.send(protocol.Base(pb.BaseCommand_CLOSE_CONSUMER, &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(id),
			RequestId: proto.Uint64(rid)}))
		return describe(c.read())
	}
	var notes []string
	note := func(what, answer string) { notes = append(notes, fmt.Sprintf("%s: %s", what, answer)) }
	note("consumer 1 named c subscribes", subscribe(1, "c"))
	note("it closes", closeConsumer(1))
	note("the same consumer subscribes again", subscribe(1, "c"))
	note("consumer 2 named c subscribes", subscribe(2, "c"))
	note("consumer 3 named d subscribes", subscribe(3, "d"))
	return notes
}

// TestDifferentialSubscribeRateRefusesASecondSubscribe compares
// subscribeRateStory on pulsarsim and on the real broker.
func TestDifferentialSubscribeRateRefusesASecondSubscribe(t *testing.T) {
	sameStoryOnBoth(t, subscribeRateStory)
}

// On pulsarsim alone: the same story, then the period's end on the broker
// clock, after which the same consumer subscribes again.
func TestASubscribeRateRefusesTheSameConsumerUntilThePeriodEnds(t *testing.T) {
	sim := scenarios.SimTarget(t)
	notes := subscribeRateStory(t, sim, sim.Sim.AdminURL())
	want := []string{
		"consumer 1 named c subscribes: SUCCESS",
		"it closes: SUCCESS",
		`the same consumer subscribes again: ERROR NotAllowedError "Subscribe limited by subscribe rate limit per consumer."`,
		"consumer 2 named c subscribes: SUCCESS",
		"consumer 3 named d subscribes: SUCCESS",
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	topic := sim.Topic("subscribe-rate")
	c := dialWire(t, sim.URL)
	c.lookup(topic)
	again := func(id uint64, rid uint64) string {
		c.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
			Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(id),
			ConsumerName: proto.String("c"), RequestId: proto.Uint64(rid)}))
		return describe(c.read())
	}
	// Consumer 2 of the story is still attached; this connection's consumer
	// 1 is the same name, id and host as the story's first one.
	if got := again(1, 900); !strings.Contains(got, "NotAllowedError") {
		t.Fatalf("within the period: %s, want a refusal", got)
	}
	sim.Sim.Advance(30 * time.Second)
	if got := again(1, 901); got != "SUCCESS" {
		t.Fatalf("after the period: %s, want SUCCESS", got)
	}
}
