package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// payloadFor builds a deterministic payload of one of three sizes (100 B,
// 10 KiB, 1 MiB) for message i.
func payloadFor(i int) []byte {
	size := 100
	switch {
	case i%1000 == 999:
		size = 1 << 20
	case i%10 == 3:
		size = 10 << 10
	}
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

func TestBatchingProducerStoresEveryMessageByteForByte(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := context.Background()
	codecs := []struct {
		name  string
		codec pulsar.CompressionType
		count int
	}{
		{"none", pulsar.NoCompression, 10000},
		{"lz4", pulsar.LZ4, 1000},
		{"zstd", pulsar.ZSTD, 1000},
	}
	for _, cc := range codecs {
		t.Run(cc.name, func(t *testing.T) {
			topic := "produce-" + cc.name
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, CompressionType: cc.codec})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			base := time.UnixMilli(1_700_000_000_000)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var errs []error
			ids := make([]pulsar.MessageID, cc.count)
			for i := 0; i < cc.count; i++ {
				wg.Add(1)
				i := i
				p.SendAsync(ctx, &pulsar.ProducerMessage{
					Payload:    payloadFor(i),
					Key:        "key-" + strconv.Itoa(i%7),
					Properties: map[string]string{"i": strconv.Itoa(i), "codec": cc.name},
					EventTime:  base.Add(time.Duration(i) * time.Millisecond),
				}, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
					}
					ids[i] = id
				})
			}
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("%d sends failed, first: %v", len(errs), errs[0])
			}
			stored := b.Messages(topic)
			if len(stored) != cc.count {
				t.Fatalf("stored %d messages, want %d", len(stored), cc.count)
			}
			for _, m := range stored {
				i, err := strconv.Atoi(m.Properties["i"])
				if err != nil {
					t.Fatalf("message %v without its index property: %v", m.ID, m.Properties)
				}
				if !bytes.Equal(m.Payload, payloadFor(i)) {
					t.Fatalf("message %d: payload differs (len %d)", i, len(m.Payload))
				}
				if m.Key != "key-"+strconv.Itoa(i%7) || m.Properties["codec"] != cc.name {
					t.Fatalf("message %d: key %q properties %v", i, m.Key, m.Properties)
				}
				if want := base.Add(time.Duration(i) * time.Millisecond); !m.EventTime.Equal(want) {
					t.Fatalf("message %d: event time %v, want %v", i, m.EventTime, want)
				}
				if got := ids[i]; got.LedgerID() != int64(m.ID.Ledger) || got.EntryID() != int64(m.ID.Entry) || got.BatchIdx() != m.ID.BatchIndex {
					t.Fatalf("message %d: receipt id %v, stored id %+v", i, got, m.ID)
				}
				if want := map[string]string{"none": "NONE", "lz4": "LZ4", "zstd": "ZSTD"}[cc.name]; m.Compression != want {
					t.Fatalf("message %d: compression %s, want %s", i, m.Compression, want)
				}
			}
		})
	}
}

func TestSyncAndAsyncSendsFromSeveralProducersAndTopics(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	ctx := context.Background()
	topics := []string{"short-name", "persistent://public/default/full-name", "public/default/three-part"}
	for _, topic := range topics {
		var producers []pulsar.Producer
		for j := 0; j < 3; j++ {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			producers = append(producers, p)
		}
		for j, p := range producers {
			for k := 0; k < 5; k++ {
				msg := &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("sync-%d-%d", j, k))}
				if _, err := p.Send(ctx, msg); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 5)
			for k := 0; k < 5; k++ {
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("async-%d-%d", j, k))},
					func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
			}
			for k := 0; k < 5; k++ {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		}
		stored := b.Messages(topic)
		if len(stored) != 30 {
			t.Fatalf("%s: stored %d messages, want 30", topic, len(stored))
		}
		names := map[string]bool{}
		for _, m := range stored {
			names[m.Producer] = true
		}
		if len(names) != 3 {
			t.Fatalf("%s: messages from producers %v, want 3 distinct", topic, names)
		}
	}
	// The short and the full form name the same topic.
	if n := len(b.Messages("persistent://public/default/short-name")); n != 30 {
		t.Fatalf("full name of the short topic holds %d messages", n)
	}
}

func TestProducerGetsGeneratedNameInPulsarStyle(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "named"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Name() != "standalone-0-0" {
		t.Fatalf("producer name %q, want standalone-0-0", p.Name())
	}
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := b.Messages("named")[0].Producer; got != "standalone-0-0" {
		t.Fatalf("stored producer name %q", got)
	}
}

func TestSecondProducerWithSameNameIsRefused(t *testing.T) {
	b := testkit.Start(t)
	client := b.Client()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "busy", Name: "me"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: "busy", Name: "me", SendTimeout: time.Second})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("ProducerBusy")) {
		t.Fatalf("second producer with the same name: %v, want ProducerBusy", err)
	}
}

func TestNoAutoCreationRefusesUnknownTopic(t *testing.T) {
	b := testkit.Start(t, testkit.WithBroker(broker.WithAutoTopicCreation(false)))
	client := b.Client(func(o *pulsar.ClientOptions) { o.OperationTimeout = 2 * time.Second })
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "missing"})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("TopicNotFound")) {
		t.Fatalf("producer on a missing topic: %v, want TopicNotFound", err)
	}
}
