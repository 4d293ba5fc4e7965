package scenarios_test

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The answers to a client's questions, compared on the wire: which optional
// fields the broker sets matters to clients that tell an absent field from
// its default, as the Rust crate `pulsar` does (its types are Options).

// optional shows an optional field: "-" when absent, else its value.
func optional[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// relativeID describes a message id with its ledger named "L" when it is
// first's ledger and -1 when it is the highest value, and its entry relative
// to first (or -1).
func relativeID(id *pb.MessageIdData, first *pb.MessageIdData) string {
	ledger := "other"
	switch {
	case id.GetLedgerId() == ^uint64(0):
		ledger = "-1"
	case first != nil && id.GetLedgerId() == first.GetLedgerId():
		ledger = "L"
	}
	entry := "-1"
	if id.GetEntryId() != ^uint64(0) {
		entry = fmt.Sprint(int64(id.GetEntryId()) - int64(first.GetEntryId()))
	}
	return fmt.Sprintf("ledger %s entry %s partition %s batch_index %s", ledger, entry,
		optional(id.Partition), optional(id.BatchIndex))
}

// lastMessageID asks for consumer's last message id and describes the
// answer relative to first.
func lastMessageID(c *wireClient, consumer uint64, first *pb.MessageIdData) string {
	c.send(protocol.Base(pb.BaseCommand_GET_LAST_MESSAGE_ID, &pb.CommandGetLastMessageId{
		ConsumerId: proto.Uint64(consumer), RequestId: proto.Uint64(500 + consumer)}))
	cmd := c.read()
	r := cmd.GetGetLastMessageIdResponse()
	if r == nil {
		return describe(cmd)
	}
	md := "-"
	if r.ConsumerMarkDeletePosition != nil {
		md = relativeID(r.ConsumerMarkDeletePosition, first)
	}
	return fmt.Sprintf("last %s; mark-delete %s", relativeID(r.LastMessageId, first), md)
}

// firstMessage gives consumer one permit and describes the id of the
// MESSAGE that comes, relative to first.
func firstMessage(c *wireClient, consumer uint64, first *pb.MessageIdData) string {
	c.send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{
		ConsumerId: proto.Uint64(consumer), MessagePermits: proto.Uint32(1)}))
	cmd := c.read()
	if cmd.Message == nil {
		return describe(cmd)
	}
	return relativeID(cmd.Message.MessageId, first)
}

// consumerStats asks for a consumer's stats and describes the fields both
// brokers fill alike: values where they are deterministic, the form of the
// address and the time, the presence of the rates (Pulsar updates them once
// a minute, pulsarsim averages over a second).
func consumerStats(c *wireClient, consumer uint64) string {
	c.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS, &pb.CommandConsumerStats{
		ConsumerId: proto.Uint64(consumer), RequestId: proto.Uint64(600 + consumer)}))
	r := c.read().GetConsumerStatsResponse()
	if r == nil {
		return "no CONSUMER_STATS_RESPONSE"
	}
	address := regexp.MustCompile(`^/127\.0\.0\.1:[0-9]+$`).MatchString(r.GetAddress())
	_, err := time.Parse(time.RFC3339Nano, r.GetConnectedSince())
	rate := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return "set"
	}
	return fmt.Sprintf("error %s name %s type %s permits %s unacked %s blocked %s backlog %s "+
		"address /127.0.0.1:port %v connected_since a time %v rates out %s throughput %s redeliver %s",
		optional(r.ErrorCode), optional(r.ConsumerName), optional(r.Type), optional(r.AvailablePermits),
		optional(r.UnackedMessages), optional(r.BlockedConsumerOnUnackedMsgs), optional(r.MsgBacklog),
		address, err == nil, rate(r.MsgRateOut), rate(r.MsgThroughputOut), rate(r.MsgRateRedeliver))
}

// topicsOfNamespace lists public/default with and without a pattern that
// matches only the test's topics (prefix), and describes the answers.
func topicsOfNamespace(c *wireClient, prefix string) []string {
	var out []string
	for i, pattern := range []string{"", regexp.QuoteMeta(prefix) + ".*"} {
		g := &pb.CommandGetTopicsOfNamespace{Namespace: proto.String("public/default"),
			RequestId: proto.Uint64(uint64(700 + i)), Mode: pb.CommandGetTopicsOfNamespace_PERSISTENT.Enum()}
		if pattern != "" {
			g.TopicsPattern = proto.String(pattern)
		}
		c.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE, g))
		r := c.read().GetGetTopicsOfNamespaceResponse()
		if r == nil {
			out = append(out, "no GET_TOPICS_OF_NAMESPACE_RESPONSE")
			continue
		}
		ours, others := 0, 0
		for _, tp := range r.Topics {
			if strings.HasPrefix(tp, prefix) {
				ours++
			} else {
				others++
			}
		}
		line := fmt.Sprintf("pattern %v: filtered %s changed %s hash set %v, %d of ours",
			pattern != "", optional(r.Filtered), optional(r.Changed), r.TopicsHash != nil, ours)
		if pattern != "" { // without one, the real broker lists other runs' topics too
			line += fmt.Sprintf(", %d others", others)
		}
		out = append(out, line)
	}
	return out
}

// queryAnswers publishes to a topic and to a partition-named topic, and asks
// what clients ask about them.
func queryAnswers(t *testing.T, tg *scenarios.Target) []string {
	topic := tg.Topic("answers")
	c := dialWire(t, tg.URL)
	ids := c.publish(topic, 2)
	var out []string
	out = append(out, "subscribe: "+c.subscribe(topic, 1, pb.CommandSubscribe_Exclusive))
	out = append(out, "last message id: "+lastMessageID(c, 1, ids[0]))
	out = append(out, "consumer stats: "+consumerStats(c, 1))
	out = append(out, "unknown consumer's last message id: "+lastMessageID(c, 9, ids[0]))
	out = append(out, "message: "+firstMessage(c, 1, ids[0]))

	part := dialWire(t, tg.URL)
	partition := topic + "-partition-0"
	pids := part.publish(partition, 1)
	out = append(out, "partition, subscribe: "+part.subscribe(partition, 2, pb.CommandSubscribe_Shared))
	out = append(out, "partition, last message id: "+lastMessageID(part, 2, pids[0]))
	out = append(out, "partition, message: "+firstMessage(part, 2, pids[0]))

	empty := dialWire(t, tg.URL)
	out = append(out, "empty topic, subscribe: "+empty.subscribe(topic+"-empty", 3, pb.CommandSubscribe_Failover))
	out = append(out, "empty topic, last message id: "+lastMessageID(empty, 3, nil))

	out = append(out, topicsOfNamespace(c, topic)...)

	// Pulsar 4.0.8 fails on the stats of a consumer the connection does
	// not have, and the connection closes.
	stray := dialWire(t, tg.URL)
	stray.send(protocol.Base(pb.BaseCommand_CONSUMER_STATS, &pb.CommandConsumerStats{
		ConsumerId: proto.Uint64(9), RequestId: proto.Uint64(609)}))
	out = append(out, "unknown consumer's stats: "+answerOrClose(stray))
	return out
}

// answerOrClose describes the next command the broker sends, or says that it
// closed the connection.
func answerOrClose(c *wireClient) string {
	_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	body, err := protocol.ReadFrame(c.r, nil, 64<<20)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return "connection closed"
		}
		return "read: " + err.Error()
	}
	f, err := protocol.DecodeFrame(body)
	if err != nil {
		return "decode: " + err.Error()
	}
	return describe(f.Command)
}

// TestDifferentialQueryAnswers compares, field by field, what both brokers
// answer to GET_LAST_MESSAGE_ID (a topic, a partition, an empty topic),
// CONSUMER_STATS and GET_TOPICS_OF_NAMESPACE (with and without a pattern),
// and the message id of a MESSAGE (a topic, a partition).
func TestDifferentialQueryAnswers(t *testing.T) {
	url := oracleURL(t)
	got := queryAnswers(t, scenarios.SimTarget(t))
	want := queryAnswers(t, scenarios.RemoteTarget(t, url, ""))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("both:\n%s", strings.Join(got, "\n"))
}
