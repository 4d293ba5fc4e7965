package scenarios_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// Message deduplication, compared on the wire: the same SENDs (resends of
// stored sequence ids, batches with and without a highest sequence id,
// chunks, a producer that comes back on a new connection, deduplication
// turned off and on again on the live topic) get the same answers, and
// leave the same messages, on both brokers.

// dedupWire is a raw connection that names its replies for the trace:
// message ids by the order in which the topic stored them.
type dedupWire struct {
	*wireClient
	ids map[string]int // "ledger:entry" -> its place among the stored entries
	req uint64
}

func (c *dedupWire) next() uint64 { c.req++; return c.req }

// producer opens producer id under name ("" for a generated one) and
// describes PRODUCER_SUCCESS by its last sequence id.
func (c *dedupWire) producer(topic string, id uint64, name string) string {
	p := &pb.CommandProducer{Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(c.next())}
	if name != "" {
		p.ProducerName = proto.String(name)
	}
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, p))
	r := c.read()
	if r.ProducerSuccess == nil {
		return describe(r)
	}
	return fmt.Sprintf("PRODUCER_SUCCESS last_sequence_id %d", r.ProducerSuccess.GetLastSequenceId())
}

func (c *dedupWire) closeProducer(id uint64) string {
	c.send(protocol.Base(pb.BaseCommand_CLOSE_PRODUCER, &pb.CommandCloseProducer{ProducerId: proto.Uint64(id),
		RequestId: proto.Uint64(c.next())}))
	return c.read().GetType().String()
}

// sendOne is one SEND of the trace.
type sendOne struct {
	seq      uint64
	highest  *uint64 // CommandSend.highest_sequence_id
	batch    int     // messages in a batch, 0 for none
	chunk    *int32  // chunk id of a two-chunk message, nil for none
	producer uint64
	label    string // the payload
}

// send sends s and describes the broker's answer.
func (c *dedupWire) sendOne(name string, s sendOne) string {
	md := &pb.MessageMetadata{ProducerName: proto.String(name), SequenceId: proto.Uint64(s.seq),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
	cmd := &pb.CommandSend{ProducerId: proto.Uint64(s.producer), SequenceId: proto.Uint64(s.seq), HighestSequenceId: s.highest}
	body := []byte(s.label)
	if s.batch > 0 {
		md.NumMessagesInBatch = proto.Int32(int32(s.batch))
		if s.highest != nil {
			md.HighestSequenceId = s.highest
		}
		cmd.NumMessages = proto.Int32(int32(s.batch))
		var msgs []protocol.SingleMessage
		for i := range s.batch {
			p := fmt.Appendf(nil, "%s.%d", s.label, i)
			msgs = append(msgs, protocol.SingleMessage{
				Metadata: &pb.SingleMessageMetadata{PayloadSize: proto.Int32(int32(len(p)))}, Payload: p})
		}
		body = protocol.AppendBatch(nil, msgs)
	}
	if s.chunk != nil {
		md.Uuid = proto.String(fmt.Sprintf("%s-%d", name, s.seq))
		md.ChunkId = s.chunk
		md.NumChunksFromMsg = proto.Int32(2)
		md.TotalChunkMsgSize = proto.Int32(int32(2 * len(body)))
		cmd.IsChunk = proto.Bool(true)
	}
	frame := protocol.AppendPayloadCommand(nil, protocol.Base(pb.BaseCommand_SEND, cmd), protocol.AppendPayload(nil, md, body))
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatal(err)
	}
	r := c.read()
	switch {
	case r.SendReceipt != nil:
		return "receipt " + c.describeReceipt(r.SendReceipt, s)
	case r.SendError != nil:
		return fmt.Sprintf("SEND_ERROR seq %d %s %q", r.SendError.GetSequenceId(), r.SendError.GetError(), r.SendError.GetMessage())
	}
	return describe(r)
}

// describeReceipt names a receipt's sequence ids and message id. Pulsar
// leaves highest_sequence_id unset in its own way when the SEND had none to
// use, so it is shown only when the SEND had one.
func (c *dedupWire) describeReceipt(r *pb.CommandSendReceipt, s sendOne) string {
	out := fmt.Sprintf("seq %d", r.GetSequenceId())
	if s.highest != nil && *s.highest >= s.seq {
		out += fmt.Sprintf(" highest %d", r.GetHighestSequenceId())
	}
	id := r.GetMessageId()
	if int64(id.GetLedgerId()) == -1 && int64(id.GetEntryId()) == -1 {
		return out + " id -1:-1"
	}
	key := fmt.Sprintf("%d:%d", id.GetLedgerId(), id.GetEntryId())
	if _, ok := c.ids[key]; !ok {
		c.ids[key] = len(c.ids)
	}
	return out + fmt.Sprintf(" stored #%d", c.ids[key])
}

// dedupStatus waits until the topic's stats say status (Pulsar applies a
// policy change to its topics a little later) and returns what they say.
func dedupStatus(t *testing.T, admin, topic, status string) string {
	var st struct {
		DeduplicationStatus string `json:"deduplicationStatus"`
	}
	for range 300 {
		adminJSON(t, http.MethodGet, admin+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/stats", nil, &st)
		if st.DeduplicationStatus == status {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "deduplicationStatus " + st.DeduplicationStatus
}

func u64(v uint64) *uint64 { return &v }

// dedupTrace runs the trace against one broker and lists what it answered
// and what it stored.
func dedupTrace(t *testing.T, url, admin, run string) []string {
	ns := "public/dedup-" + run
	topic := "persistent://" + ns + "/t"
	adminJSON(t, http.MethodPut, admin+"/admin/v2/namespaces/"+ns, nil, nil)
	adminJSON(t, http.MethodPost, admin+"/admin/v2/namespaces/"+ns+"/deduplication", true, nil)
	var on bool
	adminJSON(t, http.MethodGet, admin+"/admin/v2/namespaces/"+ns+"/deduplication", nil, &on)
	out := []string{fmt.Sprintf("namespace deduplication %v", on)}
	c := &dedupWire{wireClient: dialWire(t, url), ids: map[string]int{}}
	step := func(what, got string) { out = append(out, what+": "+got) }
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(c.next())}))
	c.read()
	step("producer p", c.producer(topic, 1, "p"))
	for _, s := range []sendOne{
		{seq: 0, label: "a"}, {seq: 1, label: "b"}, {seq: 2, label: "c"},
		{seq: 1, label: "b again"}, {seq: 2, label: "c again"}, {seq: 0, label: "a again"},
		{seq: 3, highest: u64(5), batch: 3, label: "batch 3-5"},
		{seq: 4, label: "4 inside the batch"}, {seq: 5, label: "5 inside the batch"},
		{seq: 6, batch: 3, label: "batch 6 without highest"},
		{seq: 7, label: "7 after it"},
		{seq: 9, highest: u64(8), label: "9 with highest 8"}, {seq: 9, highest: u64(8), label: "9 again"},
		{seq: 20, chunk: proto.Int32(0), label: "chunk 0"}, {seq: 20, chunk: proto.Int32(1), label: "chunk 1"},
		{seq: 20, chunk: proto.Int32(0), label: "chunk 0 again"}, {seq: 20, chunk: proto.Int32(1), label: "chunk 1 again"},
	} {
		s.producer = 1
		step(fmt.Sprintf("SEND %d %s", s.seq, s.label), c.sendOne("p", s))
	}
	step("close p", c.closeProducer(1))
	step("producer p again", c.producer(topic, 2, "p"))
	step("producer q", c.producer(topic, 3, "q"))
	step("producer with a generated name", c.producer(topic, 4, ""))
	for id := uint64(2); id <= 4; id++ {
		c.closeProducer(id)
	}
	c.nc.Close()

	// The producer comes back on a new connection and resends.
	c = &dedupWire{wireClient: dialWire(t, url), ids: c.ids}
	c.send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(c.next())}))
	c.read()
	step("producer p on a new connection", c.producer(topic, 1, "p"))
	step("SEND 20 resent", c.sendOne("p", sendOne{seq: 20, producer: 1, label: "20 resent"}))
	step("SEND 21", c.sendOne("p", sendOne{seq: 21, producer: 1, label: "21"}))

	// Off and on again on the live topic.
	adminJSON(t, http.MethodPost, admin+"/admin/v2/namespaces/"+ns+"/deduplication", false, nil)
	step("turned off", dedupStatus(t, admin, topic, "Disabled"))
	step("SEND 5 while off", c.sendOne("p", sendOne{seq: 5, producer: 1, label: "5 while off"}))
	step("producer r while off", c.producer(topic, 2, "r"))
	step("SEND 5 of r while off", c.sendOne("r", sendOne{seq: 5, producer: 2, label: "r5"}))
	adminJSON(t, http.MethodPost, admin+"/admin/v2/namespaces/"+ns+"/deduplication", true, nil)
	step("turned on again", dedupStatus(t, admin, topic, "Enabled"))
	step("SEND 5 after", c.sendOne("p", sendOne{seq: 5, producer: 1, label: "5 after"}))
	step("SEND 5 again", c.sendOne("p", sendOne{seq: 5, producer: 1, label: "5 again"}))
	step("SEND 2 of r", c.sendOne("r", sendOne{seq: 2, producer: 2, label: "r2"}))
	step("close p", c.closeProducer(1))
	step("close r", c.closeProducer(2))
	step("producer p after", c.producer(topic, 3, "p"))
	step("producer r after", c.producer(topic, 4, "r"))
	return append(out, storedTrace(t, url, topic)...)
}

// storedTrace reads every entry of topic with a raw consumer of a new
// subscription and names each by its producer, sequence id and payload.
func storedTrace(t *testing.T, url, topic string) []string {
	c := dialWire(t, url)
	c.consumer(topic, "reader", pb.CommandSubscribe_Exclusive, true, true)
	c.flow(1000)
	var out []string
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(quietWindow))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Command.GetType() == pb.BaseCommand_PING:
			c.send(protocol.PongCommand())
		case f.Command.Message != nil:
			pl, err := protocol.ParsePayload(f.Payload)
			if err != nil {
				t.Fatal(err)
			}
			md := pl.Metadata
			what := fmt.Sprintf("stored: %s seq %d", md.GetProducerName(), md.GetSequenceId())
			if md.NumMessagesInBatch != nil {
				what += fmt.Sprintf(" batch of %d", md.GetNumMessagesInBatch())
			} else {
				what += fmt.Sprintf(" %q", pl.Body)
			}
			if md.ChunkId != nil {
				what += fmt.Sprintf(" chunk %d", md.GetChunkId())
			}
			out = append(out, what)
		}
	}
}

// TestDifferentialDeduplication compares deduplication on the wire: the
// answers to the same SENDs, the last sequence ids producers get, and the
// messages both brokers store.
func TestDifferentialDeduplication(t *testing.T) {
	url := oracleURL(t)
	admin := oracleAdmin(t)
	t.Parallel()
	sim := scenarios.SimTarget(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	got := dedupTrace(t, sim.URL, sim.Sim.AdminURL(), run)
	want := dedupTrace(t, url, admin, run)
	sameOnBoth(t, want, got)
}

// goClientDedupTrace drives pulsar-client-go on a topic of a namespace that
// deduplicates: producers that come back under their names, batched and
// not, and what a reader then finds.
func goClientDedupTrace(t *testing.T, tg *scenarios.Target, admin, run string) []string {
	ns := "public/dedup-go-" + run
	topic := "persistent://" + ns + "/t"
	adminJSON(t, http.MethodPut, admin+"/admin/v2/namespaces/"+ns, nil, nil)
	adminJSON(t, http.MethodPost, admin+"/admin/v2/namespaces/"+ns+"/deduplication", true, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tg.Client()
	var out []string
	produce := func(name string, batched bool, from, n int) {
		opts := pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: !batched,
			BatchingMaxPublishDelay: time.Hour, BatchingMaxMessages: 100}
		p, err := client.CreateProducer(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		errs := make(chan error, n)
		for i := from; i < from+n; i++ {
			p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%s%d", name, i)},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
		}
		if err := p.FlushWithCtx(ctx); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, fmt.Sprintf("%s sent %d: last sequence id %d", name, n, p.LastSequenceID()))
	}
	produce("single", false, 0, 3)
	produce("single", false, 3, 2)
	produce("batched", true, 0, 4)
	produce("batched", true, 4, 1)
	produce("single", false, 5, 1)
	for _, m := range tg.ReadAll(topic, quietWindow) {
		out = append(out, "read "+string(m.Payload()))
	}
	return out
}

// TestDifferentialDeduplicationWithTheGoClient compares what
// pulsar-client-go sees on a topic that deduplicates: a producer that comes
// back under its name goes on from the last sequence id the broker stored
// for it. pulsar-client-go v0.19.0 sends no highest_sequence_id, so both
// brokers count its batch of 4 by its first sequence id (0), and the
// producer that comes back starts again at 1.
func TestDifferentialDeduplicationWithTheGoClient(t *testing.T) {
	url := oracleURL(t)
	admin := oracleAdmin(t)
	t.Parallel()
	sim := scenarios.SimTarget(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	got := goClientDedupTrace(t, sim, sim.Sim.AdminURL(), run)
	want := goClientDedupTrace(t, scenarios.RemoteTarget(t, url, admin), admin, run)
	sameOnBoth(t, want, got)
}
