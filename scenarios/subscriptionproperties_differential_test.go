package scenarios_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Subscription properties: SUBSCRIBE's subscription_properties are kept by
// the subscription it creates (a later SUBSCRIBE's are not looked at),
// shown in topic stats, read and replaced through the admin API, and given
// to a subscription the admin API creates.

// subscriptionPropertiesOf reads a subscription's properties through the
// admin API, and what the topic's stats and internal stats show of them.
func subscriptionPropertiesOf(t *testing.T, admin, topic, sub string) string {
	path := admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	status, body := adminCall(t, "GET", path+"/subscription/"+sub+"/properties", "")
	props := fmt.Sprintf("%d %s", status, canonicalKeys(t, []byte(body), nil))
	var stats struct {
		Subscriptions map[string]struct {
			SubscriptionProperties map[string]string `json:"subscriptionProperties"`
		} `json:"subscriptions"`
	}
	_, body = adminCall(t, "GET", path+"/stats", "")
	_ = json.Unmarshal([]byte(body), &stats)
	inStats, _ := json.Marshal(stats.Subscriptions[sub].SubscriptionProperties)
	var internal struct {
		Cursors map[string]map[string]any `json:"cursors"`
	}
	_, body = adminCall(t, "GET", path+"/internalStats", "")
	_ = json.Unmarshal([]byte(body), &internal)
	var cursorKeys []string
	for k, v := range internal.Cursors[sub] {
		if strings.Contains(strings.ToLower(k), "propert") {
			b, _ := json.Marshal(v)
			cursorKeys = append(cursorKeys, k+"="+string(b))
		}
	}
	slices.Sort(cursorKeys)
	return fmt.Sprintf("properties %s; stats %s; internal stats %v", props, inStats, cursorKeys)
}

// subscriptionPropertiesStory drives subscription properties through
// pulsar-client-go, the wire and the admin API.
func subscriptionPropertiesStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	client := tg.Client()
	topic := tg.Topic("sub-props")
	var out []string
	note := func(what, sub string) {
		out = append(out, what+": "+subscriptionPropertiesOf(t, admin, topic, sub))
	}
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionProperties: map[string]string{"owner": "team-a", "purpose": "audit"}})
	if err != nil {
		t.Fatal(err)
	}
	note("created by a consumer", "s")
	// A second consumer with other properties joins; the subscription
	// keeps those it was created with.
	c2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionProperties: map[string]string{"owner": "team-b"}})
	out = append(out, "a second consumer with other properties: "+brokerPart(err))
	if err == nil {
		c2.Close()
	}
	note("after it", "s")
	c.Close()
	path := admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	call := func(method, p, body string) {
		status, answer := adminCall(t, method, path+p, body)
		out = append(out, fmt.Sprintf("%s %s %s -> %d %s", method, p, body, status, strings.ReplaceAll(answer, topic, "{topic}")))
	}
	call("PUT", "/subscription/s/properties", `{"owner":"team-c","stage":"2"}`)
	note("after a PUT", "s")
	call("PUT", "/subscription/s/properties", `{}`)
	note("after a PUT of none", "s")
	call("PUT", "/subscription/missing/properties", `{"a":"b"}`)
	call("GET", "/subscription/missing/properties", "")
	// The consumer comes back with properties: the subscription exists, so
	// they are not looked at.
	c, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
		SubscriptionProperties: map[string]string{"owner": "team-d"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	note("after a consumer with properties came back", "s")
	call("PUT", "/subscription/s/properties", `{"kept":"yes"}`)
	call("PUT", "/unload", "")
	note("after an unload", "s")
	call("POST", "/subscription/s/resetcursor/0", "")
	note("after a reset", "s")

	// A subscription created through the admin API, at a position.
	tg.Produce(topic, 2, nil)
	call("PUT", "/subscription/admin-made", `{"ledgerId":-1,"entryId":-1,"properties":{"made":"by-admin"}}`)
	note("created through the admin API", "admin-made")
	call("PUT", "/subscription/admin-latest", "")
	note("created through the admin API without a body", "admin-latest")

	// A non-durable subscription (a reader's) on the wire.
	w := dialWire(t, tg.URL)
	w.lookup(topic)
	w.send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String("reader-sub"), SubType: pb.CommandSubscribe_Exclusive.Enum(),
		ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1), Durable: proto.Bool(false),
		SubscriptionProperties: []*pb.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}}}))
	out = append(out, "a non-durable SUBSCRIBE with properties: "+describe(w.read()))
	note("the non-durable subscription", "reader-sub")
	call("PUT", "/subscription/s/properties", "")
	note("after a PUT without a body", "s")

	// A partitioned topic: its partitions' subscriptions get the
	// properties.
	parted := tg.Topic("sub-props-parted")
	ppath := admin + "/admin/v2/persistent/" + strings.TrimPrefix(parted, "persistent://")
	pcall := func(method, p, body string) string {
		status, answer := adminCall(t, method, ppath+p, body)
		return fmt.Sprintf("%s %s %s -> %d %s", method, p, body, status, strings.ReplaceAll(answer, parted, "{parted}"))
	}
	out = append(out, pcall("PUT", "/partitions", "2"),
		pcall("PUT", "/subscription/s", `{"ledgerId":-1,"entryId":-1,"properties":{"a":"1"}}`),
		pcall("GET", "/subscription/s/properties", ""))
	out = append(out, "partition 1: "+subscriptionPropertiesOf(t, admin, parted+"-partition-1", "s"))
	out = append(out, pcall("PUT", "/subscription/s/properties", `{"b":"2"}`), pcall("GET", "/subscription/s/properties", ""))
	out = append(out, "partition 1: "+subscriptionPropertiesOf(t, admin, parted+"-partition-1", "s"))
	var pstats struct {
		Subscriptions map[string]struct {
			SubscriptionProperties map[string]string `json:"subscriptionProperties"`
		} `json:"subscriptions"`
	}
	_, body := adminCall(t, "GET", ppath+"/partitioned-stats", "")
	_ = json.Unmarshal([]byte(body), &pstats)
	inStats, _ := json.Marshal(pstats.Subscriptions["s"].SubscriptionProperties)
	out = append(out, "partitioned stats: "+string(inStats))
	status, answer := adminCall(t, "GET", admin+"/admin/v2/persistent/public/default/no-such-topic-"+
		strings.TrimPrefix(topic, "persistent://public/default/")+"/subscription/s/properties", "")
	out = append(out, fmt.Sprintf("a missing topic: %d %s", status, strings.ReplaceAll(answer, strings.TrimPrefix(topic, "persistent://public/default/"), "{run}")))
	return out
}

// TestDifferentialSubscriptionProperties compares subscription properties
// on both brokers.
func TestDifferentialSubscriptionProperties(t *testing.T) {
	sameStoryOnBoth(t, subscriptionPropertiesStory)
}
