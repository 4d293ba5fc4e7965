package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
)

// An ExclusiveWithFencing producer arriving while an Exclusive producer
// holds the topic and a WaitForExclusive producer waits for it: Pulsar fails
// the waiting producer ("Fenced out") before it fences the holder, so the
// fencing producer, not the waiting one, gets the topic.

// producerAnswer describes an answer to a PRODUCER, or what came instead.
func producerAnswer(cmd *pb.BaseCommand) string {
	switch {
	case cmd.ProducerSuccess != nil:
		r := cmd.ProducerSuccess
		return fmt.Sprintf("PRODUCER_SUCCESS %d ready=%s epoch=%s", r.GetRequestId(), optional(r.ProducerReady), optional(r.TopicEpoch))
	case cmd.Error != nil:
		return fmt.Sprintf("ERROR %d %v %q", cmd.Error.GetRequestId(), cmd.Error.GetError(), cmd.Error.GetMessage())
	case cmd.CloseProducer != nil:
		return fmt.Sprintf("CLOSE_PRODUCER %d", cmd.CloseProducer.GetProducerId())
	}
	return describe(cmd)
}

// answers describes the commands that arrive until the connection has been
// silent for quietWindow (PINGs answered, not listed).
func (c *wireClient) answers() []string {
	c.t.Helper()
	return c.quietAnswers(producerAnswer)
}

// quietAnswers describes with describe the commands that arrive until the
// connection has been silent for quietWindow (PINGs answered, not listed,
// nor ACTIVE_CONSUMER_CHANGE).
func (c *wireClient) quietAnswers(describe func(*pb.BaseCommand) string) []string {
	c.t.Helper()
	var got []string
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(quietWindow))
		body, err := protocol.ReadFrame(c.r, nil, 64<<20)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return got
		}
		if errors.Is(err, io.EOF) {
			return append(got, "connection closed")
		}
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil {
			c.t.Fatal(err)
		}
		switch f.Command.GetType() {
		case pb.BaseCommand_PING:
			c.send(protocol.PongCommand())
		case pb.BaseCommand_ACTIVE_CONSUMER_CHANGE:
		default:
			got = append(got, describe(f.Command))
		}
	}
}

// openProducer sends a PRODUCER with the access mode and returns its
// answer and what else the connection hears until it is quiet.
func (c *wireClient) openProducer(topic string, id uint64, name string, mode pb.ProducerAccessMode) []string {
	c.send(protocol.Base(pb.BaseCommand_PRODUCER, &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(id), RequestId: proto.Uint64(10 + id), ProducerName: proto.String(name),
		ProducerAccessMode: mode.Enum()}))
	return append([]string{producerAnswer(c.read())}, c.answers()...)
}

// fencingOverAWaitingProducer tells, connection by connection, what each
// producer hears.
func fencingOverAWaitingProducer(t *testing.T, url, topic string) []string {
	holder, waiter, fencer := dialWire(t, url), dialWire(t, url), dialWire(t, url)
	holder.lookup(topic)
	var out []string
	note := func(who string, got []string) { out = append(out, who+": "+strings.Join(got, "; ")) }
	note("holder (Exclusive)", holder.openProducer(topic, 1, "holder", pb.ProducerAccessMode_Exclusive))
	note("waiter (WaitForExclusive)", waiter.openProducer(topic, 2, "waiter", pb.ProducerAccessMode_WaitForExclusive))
	note("a Shared producer while one waits", fencer.openProducer(topic, 3, "shared", pb.ProducerAccessMode_Shared))
	note("fencer (ExclusiveWithFencing)", fencer.openProducer(topic, 4, "fencer", pb.ProducerAccessMode_ExclusiveWithFencing))
	note("then the waiter hears", waiter.answers())
	note("then the holder hears", holder.answers())
	note("the waiter again (WaitForExclusive)", waiter.openProducer(topic, 5, "waiter", pb.ProducerAccessMode_WaitForExclusive))
	note("the fenced holder sends", holder.sendOne(1))

	// Shared producers hold a second topic and a WaitForExclusive one
	// waits: a new Shared producer is refused while it waits.
	other := topic + "-shared"
	first, second := dialWire(t, url), dialWire(t, url)
	first.lookup(other)
	note("a Shared producer", first.openProducer(other, 1, "first", pb.ProducerAccessMode_Shared))
	note("a WaitForExclusive producer", waiter.openProducer(other, 6, "queued", pb.ProducerAccessMode_WaitForExclusive))
	note("a second Shared producer while it waits", second.openProducer(other, 2, "second", pb.ProducerAccessMode_Shared))
	note("an Exclusive producer while it waits", second.openProducer(other, 3, "exclusive", pb.ProducerAccessMode_Exclusive))
	return out
}

// sendOne sends one message with producer id and returns what the
// connection hears until it is quiet.
func (c *wireClient) sendOne(id uint64) []string {
	md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(0),
		PublishTime: proto.Uint64(uint64(time.Now().UnixMilli()))}
	cmd := protocol.Base(pb.BaseCommand_SEND, &pb.CommandSend{ProducerId: proto.Uint64(id),
		SequenceId: proto.Uint64(0), NumMessages: proto.Int32(1)})
	if _, err := c.nc.Write(protocol.AppendPayloadCommand(nil, cmd, protocol.AppendPayload(nil, md, []byte("m")))); err != nil {
		return []string{"write: connection closed"}
	}
	return c.answers()
}

// TestDifferentialFencingFailsTheWaitingProducer compares, on the wire, what
// the holder, the waiting producer and the fencing producer hear.
func TestDifferentialFencingFailsTheWaitingProducer(t *testing.T) {
	url := oracleURL(t)
	sim := scenarios.SimTarget(t)
	real := scenarios.RemoteTarget(t, url, "")
	sameOnBoth(t, fencingOverAWaitingProducer(t, real.URL, real.Topic("fence-waiting")),
		fencingOverAWaitingProducer(t, sim.URL, sim.Topic("fence-waiting")))
}

// waitingGoProducer is what pulsar-client-go's producers see when a
// WaitForExclusive producer waits behind a Shared one: a second Shared
// producer is refused while it waits, and a producer with
// ExclusiveWithFencing (which pulsar-client-go does not offer: it speaks
// the protocol here) fails it.
func waitingGoProducer(t *testing.T, tg *scenarios.Target) []string {
	topic := tg.Topic("fence-go")
	client := tg.Client()
	holder, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waited := make(chan error, 1)
	go func() {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive})
		if err == nil {
			p.Close()
		}
		waited <- err
	}()
	brokerPart := func(err error) string {
		if err == nil {
			return "created"
		}
		msg := err.Error()
		if i := strings.Index(msg, "server error: "); i >= 0 {
			msg = msg[i:]
		}
		return msg
	}
	var out []string
	// A second Shared producer is refused once the waiting one is queued.
	var refused error
	if !eventually(func() bool {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err == nil {
			p.Close()
		}
		refused = err
		return err != nil
	}) {
		t.Fatal("no Shared producer was refused while one waited")
	}
	out = append(out, "a second Shared producer: "+brokerPart(refused))
	fencer := dialWire(t, tg.URL)
	fencer.lookup(topic)
	out = append(out, "fencer: "+strings.Join(fencer.openProducer(topic, 1, "fencer", pb.ProducerAccessMode_ExclusiveWithFencing), "; "))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-waited:
		out = append(out, "the waiting producer: "+brokerPart(err))
	case <-ctx.Done():
		out = append(out, "the waiting producer still waits")
	}
	return out
}

// TestDifferentialFencingFailsTheWaitingGoProducer compares what
// pulsar-client-go's waiting producer gets when a fencing producer takes
// the topic: an error, not the topic.
func TestDifferentialFencingFailsTheWaitingGoProducer(t *testing.T) {
	sameStoryOnBoth(t, func(t *testing.T, tg *scenarios.Target, admin string) []string {
		return waitingGoProducer(t, tg)
	})
}
