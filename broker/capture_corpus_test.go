package broker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
)

// corpusDir is the fuzz seed corpus of protocol.FuzzDecodeFrame, relative to
// this package's folder.
var corpusDir = filepath.Join("..", "protocol", "testdata", "fuzz", "FuzzDecodeFrame")

// corpusPrefix names the files this test writes, so a re-run replaces them
// and leaves any other seed alone.
const corpusPrefix = "pulsar-client-go-"

// advertisedListener is a listener that reports another address, so the
// broker advertises the recording proxy in its lookup answers and every
// connection the client opens goes through the proxy.
type advertisedListener struct {
	net.Listener
	addr net.Addr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

// recorder keeps both byte streams of every proxied connection.
type recorder struct {
	mu      sync.Mutex
	streams []*bytes.Buffer
}

func (r *recorder) stream() *bytes.Buffer {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &bytes.Buffer{}
	r.streams = append(r.streams, b)
	return b
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// proxy accepts on ln, connects each client to target and copies both ways,
// recording what passes.
func proxy(t *testing.T, ln net.Listener, target string, rec *recorder) {
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			up, down := rec.stream(), rec.stream()
			pipe := func(dst, src net.Conn, buf *bytes.Buffer) {
				defer wg.Done()
				io.Copy(io.MultiWriter(dst, lockedWriter{&rec.mu, buf}), src)
				dst.Close()
				src.Close()
			}
			wg.Add(2)
			go pipe(server, client, up)
			go pipe(client, server, down)
		}
	}()
}

// TestCaptureFuzzCorpus records the frames pulsar-client-go and the broker
// exchange over a realistic session and writes a selection of them as the
// seed corpus of protocol.FuzzDecodeFrame. It only runs when asked:
//
//	PULSARSIM_CAPTURE_CORPUS=1 go test -run TestCaptureFuzzCorpus ./broker/
func TestCaptureFuzzCorpus(t *testing.T) {
	if os.Getenv("PULSARSIM_CAPTURE_CORPUS") != "1" {
		t.Skip("set PULSARSIM_CAPTURE_CORPUS=1 to capture the fuzz seed corpus")
	}
	realLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New()
	go b.Serve(advertisedListener{Listener: realLn, addr: proxyLn.Addr()})
	t.Cleanup(func() { b.Close() })
	rec := &recorder{}
	proxy(t, proxyLn, realLn.Addr().String(), rec)

	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: "pulsar://" + proxyLn.Addr().String(), Logger: log.DefaultNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCaptureSession(t, client)
	client.Close()
	b.Close()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err := writeCorpus(t, rec.streams); err != nil {
		t.Fatal(err)
	}
}

// runCaptureSession produces with each kind of producer and consumes with a
// Shared subscription that acknowledges some messages and nacks others.
func runCaptureSession(t *testing.T, client pulsar.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "persistent://public/default/capture"

	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic: topic, SubscriptionName: "capture-sub", Type: pulsar.Shared,
		NackRedeliveryDelay: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}

	producers := []pulsar.ProducerOptions{
		{Topic: topic, Name: "batched"},
		{Topic: topic, Name: "unbatched", DisableBatching: true},
		{Topic: topic, Name: "lz4", CompressionType: pulsar.LZ4},
		{Topic: topic, Name: "zstd", CompressionType: pulsar.ZSTD},
	}
	sent := 0
	for _, opts := range producers {
		p, err := client.CreateProducer(opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 6 {
			msg := &pulsar.ProducerMessage{
				Payload: []byte(strings.Repeat(opts.Name+" message "+strconv.Itoa(i)+" ", 3)),
			}
			if i%2 == 0 {
				msg.Key = "key-" + strconv.Itoa(i%3)
				msg.Properties = map[string]string{"producer": opts.Name, "i": strconv.Itoa(i)}
				msg.EventTime = time.UnixMilli(1_700_000_000_000 + int64(i))
			}
			wg.Add(1)
			p.SendAsync(ctx, msg, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Errorf("%s: send: %v", opts.Name, err)
				}
				wg.Done()
			})
			sent++
		}
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		p.Close()
	}

	// Nack every third message once, acknowledge the rest and the redeliveries.
	nacked := map[string]bool{}
	acked := 0
	for i := 0; acked < sent; i++ {
		m, err := consumer.Receive(ctx)
		if err != nil {
			t.Fatalf("receive after %d acks of %d: %v", acked, sent, err)
		}
		id := m.ID().String()
		if i%3 == 1 && !nacked[id] {
			nacked[id] = true
			consumer.Nack(m)
			continue
		}
		if err := consumer.Ack(m); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	consumer.Close()
}

// writeCorpus splits each recorded stream into frames and writes a
// selection of distinct small frames as `go test fuzz v1` files.
func writeCorpus(t *testing.T, streams []*bytes.Buffer) error {
	const maxSeed = 64 << 10
	const perKind = 3
	seen := map[[32]byte]bool{}
	kinds := map[string]int{}
	type seed struct {
		name  string
		frame []byte
	}
	var seeds []seed
	for _, s := range streams {
		data := s.Bytes()
		for len(data) >= 4 {
			size := int(binary.BigEndian.Uint32(data)) + 4
			if size > len(data) {
				break // the connection closed mid-frame
			}
			frame := data[:size]
			data = data[size:]
			if size > maxSeed {
				continue
			}
			kind, err := frameKind(frame)
			if err != nil {
				return fmt.Errorf("captured frame does not decode: %v", err)
			}
			sum := sha256.Sum256(frame)
			if seen[sum] || kinds[kind] >= perKind {
				continue
			}
			seen[sum] = true
			kinds[kind]++
			seeds = append(seeds, seed{name: fmt.Sprintf("%s%s-%x", corpusPrefix, kind, sum[:8]), frame: bytes.Clone(frame)})
		}
	}
	if len(seeds) < 20 {
		return fmt.Errorf("only %d distinct frames captured", len(seeds))
	}

	if err := os.MkdirAll(corpusDir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(corpusDir, corpusPrefix+"*"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for _, s := range seeds {
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.frame)) + ")\n"
		if err := os.WriteFile(filepath.Join(corpusDir, s.name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	t.Logf("wrote %d seeds to %s: %v", len(seeds), corpusDir, kinds)
	return nil
}

// frameKind names a frame for the corpus file: its command type, and for a
// SEND or MESSAGE whether it is batched, compressed and keyed.
func frameKind(frame []byte) (string, error) {
	f, err := protocol.DecodeFrame(frame[4:])
	if err != nil {
		return "", err
	}
	if f.UnknownType {
		return "unknown", nil
	}
	kind := strings.ToLower(f.Command.GetType().String())
	if f.Payload == nil {
		return kind, nil
	}
	p, err := protocol.ParsePayload(f.Payload)
	if err != nil {
		return "", err
	}
	md := p.Metadata
	if md.NumMessagesInBatch != nil {
		kind += "-batch"
	}
	if c := md.GetCompression(); c != 0 {
		kind += "-" + strings.ToLower(c.String())
	}
	if md.PartitionKey != nil || len(md.Properties) > 0 {
		kind += "-keyed"
	}
	return kind, nil
}
