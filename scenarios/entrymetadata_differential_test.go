package scenarios_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/scenarios"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// Broker entry metadata (PIP-70) compared with a real Pulsar started with
// both interceptors and exposingBrokerEntryMetadataToClientEnabled
// (scripts/entry-metadata.conf; PULSAR_ENTRY_METADATA_URL and
// PULSAR_ENTRY_METADATA_ADMIN_URL): the index and the presence of the
// broker's publish time that pulsar-client-go reads on each message, on a
// persistent topic with a batch, on each partition of a partitioned topic
// and on a non-persistent topic, and what the admin API's examine shows of
// them. Broker times are the brokers' own: only their presence, and that
// they are not before the client's publish time, are compared.

// entryMetadataStory notes what a consumer sees of the broker entry
// metadata of the messages of tg's topics, and what examine shows.
func entryMetadataStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	client := tg.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A failure names the broker, the stage and the time into the story,
	// so that a run whose only record is its log says where it stopped.
	broker, stage, start := "pulsarsim", "the batch", time.Now()
	if tg.Sim == nil {
		broker = "the real Pulsar"
	}
	fatalf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("on %s, at %s, %v into the story: %s", broker, stage, time.Since(start).Round(time.Millisecond),
			fmt.Sprintf(format, args...))
	}
	var notes []string
	note := func(where string, m pulsar.Message) {
		idx := "none"
		if m.Index() != nil {
			idx = fmt.Sprint(*m.Index())
		}
		bt := "none"
		if p := m.BrokerPublishTime(); p != nil {
			bt = "present"
			if p.Before(m.PublishTime()) {
				bt = "before the publish time"
			}
		}
		notes = append(notes, fmt.Sprintf("%s %s: index %s, broker publish time %s", where, m.Payload(), idx, bt))
	}
	receive := func(c pulsar.Consumer, where string, n int) {
		for range n {
			m, err := c.Receive(ctx)
			if err != nil {
				fatalf("%s: %v", where, err)
			}
			// Every message of a non-persistent topic has the id 0:0, on
			// both brokers: pulsar-client-go drops one that arrives while
			// the acknowledgement of another waits in its grouping window,
			// as a duplicate. Pulsar ignores those acknowledgements anyway.
			if !strings.HasPrefix(m.Topic(), "non-persistent://") {
				c.Ack(m)
			}
			note(where, m)
		}
	}
	subscribe := func(topic string) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			fatalf("%v", err)
		}
		t.Cleanup(c.Close)
		return c
	}
	send := func(p pulsar.Producer, payloads ...string) {
		for _, pl := range payloads {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(pl)}); err != nil {
				fatalf("%v", err)
			}
		}
	}
	producer := func(topic string, batch bool) pulsar.Producer {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: !batch,
			BatchingMaxMessages: 3, BatchingMaxPublishDelay: time.Hour})
		if err != nil {
			fatalf("%v", err)
		}
		t.Cleanup(p.Close)
		return p
	}

	// A batch of three, then two messages of their own.
	topic := tg.Topic("entry-metadata")
	batcher := producer(topic, true)
	done := make(chan error, 3)
	for i := range 3 {
		batcher.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "b%d", i)},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	if err := batcher.FlushWithCtx(ctx); err != nil {
		fatalf("%v", err)
	}
	for range 3 {
		if err := <-done; err != nil {
			fatalf("%v", err)
		}
	}
	send(producer(topic, false), "s0", "s1")
	stage = "the first receives"
	receive(subscribe(topic), "topic", 5)
	for _, pos := range []int{1, 2} {
		notes = append(notes, fmt.Sprintf("examine %d: %s", pos, examineEntryMetadata(t, admin, topic, pos)))
	}
	// On the wire: only a client of protocol 18 or later that announces
	// support gets the block.
	stage = "the wire"
	for i, c := range []struct {
		version  int32
		announce bool
	}{{20, true}, {18, true}, {20, false}, {17, true}} {
		notes = append(notes, fmt.Sprintf("wire, protocol %d, announced %v: %s", c.version, c.announce,
			wireEntryMetadata(t, tg.URL, topic, fmt.Sprintf("wire-%d", i), c.version, c.announce)))
	}

	// Each partition counts on its own.
	stage = "the partitions"
	parted := tg.Topic("entry-metadata-parted")
	adminPut(t, admin+"/admin/v2/persistent/"+strings.TrimPrefix(parted, "persistent://")+"/partitions", "2")
	for i := range 2 {
		part := fmt.Sprintf("%s-partition-%d", parted, i)
		send(producer(part, false), fmt.Sprintf("p%d-0", i), fmt.Sprintf("p%d-1", i))
		receive(subscribe(part), fmt.Sprintf("partition %d", i), 2)
	}

	// Stored sizes count the block: three REST producer messages, whose
	// entries are alike on both brokers but for the broker's bytes.
	stage = "the REST producer"
	sized := tg.Topic("entry-metadata-sized")
	adminPut(t, admin+"/admin/v2/persistent/"+strings.TrimPrefix(sized, "persistent://"), "")
	rest := &http.Client{Timeout: 30 * time.Second}
	resp, err := rest.Post(admin+"/topics/persistent/"+strings.TrimPrefix(sized, "persistent://"), "application/json",
		strings.NewReader(`{"messages":[{"payload":"a"},{"payload":"bb"},{"payload":"ccc"}]}`))
	if err != nil {
		fatalf("%v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fatalf("REST producer on %s: %s", sized, resp.Status)
	}
	notes = append(notes, "sizes: "+storedSizes(t, admin, sized))

	// A non-persistent topic delivers to the consumers present.
	stage = "the non-persistent topic"
	np := strings.Replace(tg.Topic("entry-metadata-np"), "persistent://", "non-persistent://", 1)
	c := subscribe(np)
	// The client sends its first FLOW from a goroutine of its own, and a
	// non-persistent topic drops what a consumer without permits would get.
	awaitPermits(t, admin, np, "s")
	send(producer(np, false), "n0", "n1")
	receive(c, "non-persistent", 2)
	return notes
}

// awaitPermits waits until a consumer of topic's subscription sub has
// permits in the topic stats the admin API serves.
func awaitPermits(t *testing.T, admin, topic, sub string) {
	t.Helper()
	domain, path, _ := strings.Cut(topic, "://")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var stats struct {
			Subscriptions map[string]struct {
				Consumers []struct {
					AvailablePermits int `json:"availablePermits"`
				} `json:"consumers"`
			} `json:"subscriptions"`
		}
		resp, err := http.Get(admin + "/admin/v2/" + domain + "/" + path + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&stats)
		resp.Body.Close()
		if err == nil {
			for _, c := range stats.Subscriptions[sub].Consumers {
				if c.AvailablePermits > 0 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no consumer of %s with permits in its stats", topic, sub)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// examineEntryMetadata returns the broker entry metadata headers of the
// topic's entry at position pos from its start, as examine serves them.
func examineEntryMetadata(t *testing.T, admin, topic string, pos int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/admin/v2/persistent/%s/examinemessage?initialPosition=earliest&messagePosition=%d",
		admin, strings.TrimPrefix(topic, "persistent://"), pos))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ts := "none"
	if resp.Header.Get("X-Pulsar-Broker-Entry-METADATA-timestamp") != "" {
		ts = "present"
	}
	return fmt.Sprintf("%d, index %q, timestamp %s", resp.StatusCode,
		resp.Header.Get("X-Pulsar-Broker-Entry-METADATA-index"), ts)
}

// adminPut PUTs a JSON body to url and fails the test unless it succeeds.
func adminPut(t *testing.T, url, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", url, resp.Status)
	}
}

// TestDifferentialBrokerEntryMetadata runs entryMetadataStory on pulsarsim
// with both interceptors and the metadata exposed, and on the Pulsar at
// PULSAR_ENTRY_METADATA_URL configured alike, and compares the notes.
func TestDifferentialBrokerEntryMetadata(t *testing.T) {
	url, admin := os.Getenv("PULSAR_ENTRY_METADATA_URL"), os.Getenv("PULSAR_ENTRY_METADATA_ADMIN_URL")
	if url == "" || admin == "" {
		t.Skip("set PULSAR_ENTRY_METADATA_URL and PULSAR_ENTRY_METADATA_ADMIN_URL to a Pulsar started with " +
			"scripts/entry-metadata.conf (scripts/real-pulsar --conf)")
	}
	sim := scenarios.SimTarget(t, testkit.WithBrokerEntryMetadata())
	got := entryMetadataStory(t, sim, sim.Sim.AdminURL())
	want := entryMetadataStory(t, scenarios.RemoteTarget(t, url, admin), admin)
	sameOnBoth(t, want, got)
}

// storedSizes returns a topic's storageSize (stats) and totalSize
// (internal stats).
func storedSizes(t *testing.T, admin, topic string) string {
	t.Helper()
	path := admin + "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
	var stats struct {
		StorageSize int64 `json:"storageSize"`
	}
	var internal struct {
		TotalSize int64 `json:"totalSize"`
	}
	for url, v := range map[string]any{path + "/stats": &stats, path + "/internalStats": &internal} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("storageSize %d, totalSize %d", stats.StorageSize, internal.TotalSize)
}

// wireEntryMetadata subscribes to topic from the earliest message over a
// connection of its own (protocol version, support for broker entry
// metadata announced or not) and describes what the first MESSAGE carries
// before its checksum.
func wireEntryMetadata(t *testing.T, url, topic, sub string, version int32, announce bool) string {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "pulsar://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	send := func(cmd *pb.BaseCommand) {
		if _, err := nc.Write(protocol.AppendCommand(nil, cmd)); err != nil {
			t.Fatal(err)
		}
	}
	next := func() protocol.Frame {
		for {
			_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			body, err := protocol.ReadFrame(r, nil, 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			f, err := protocol.DecodeFrame(body)
			if err != nil {
				t.Fatal(err)
			}
			switch f.Command.GetType() {
			case pb.BaseCommand_PING:
				send(protocol.PongCommand())
			case pb.BaseCommand_ACTIVE_CONSUMER_CHANGE:
			default:
				return f
			}
		}
	}
	send(protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{ClientVersion: proto.String("entry-metadata-diff"),
		ProtocolVersion: proto.Int32(version), FeatureFlags: &pb.FeatureFlags{SupportsBrokerEntryMetadata: proto.Bool(announce)}}))
	if f := next(); f.Command.Connected == nil {
		t.Fatalf("handshake: %v", f.Command.GetType())
	}
	send(protocol.Base(pb.BaseCommand_LOOKUP, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(1)}))
	next()
	send(protocol.Base(pb.BaseCommand_SUBSCRIBE, &pb.CommandSubscribe{Topic: proto.String(topic), Subscription: proto.String(sub),
		SubType: pb.CommandSubscribe_Exclusive.Enum(), ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(2),
		InitialPosition: pb.CommandSubscribe_Earliest.Enum()}))
	if f := next(); f.Command.Success == nil {
		t.Fatalf("subscribe: %v", f.Command.GetType())
	}
	send(protocol.Base(pb.BaseCommand_FLOW, &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1)}))
	for {
		f := next()
		if f.Command.Message == nil {
			continue
		}
		m, ok, err := protocol.ParseBrokerEntryMetadata(f.Payload)
		switch {
		case err != nil:
			return "malformed broker entry metadata: " + err.Error()
		case !ok:
			return "no broker entry metadata"
		}
		return fmt.Sprintf("broker entry metadata, timestamp %v, index %d", m.HasTimestamp, m.Index)
	}
}
