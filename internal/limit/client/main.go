// Command client drives a broker with pulsar-client-go for the limit runs
// (scripts/limit-consume): it fills a topic with messages, or consumes and
// acknowledges a number of them and reports the rate and, given the
// broker's process id, the broker's CPU time per message over the same
// window (from /proc, Linux only).
//
//	client fill    -url U -topic T -n N [-size S] [-batch=false]
//	client consume -url U -topic T -n N [-type shared] [-pid P]
//
// fill produces as pulsar-client-go's perf tool does (batches of up to 1,000
// messages or 128 KiB, 1 ms batching delay; or one message per frame) and
// returns once every message is confirmed. consume subscribes from the
// earliest message, receives N messages and acknowledges each one, as the
// perf tool's consumer does; the window runs from the first message received
// to the last one acknowledged, and the CPU reading at its end is taken once
// the acknowledgements have been flushed to the broker.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client fill|consume [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	url := fs.String("url", "pulsar://127.0.0.1:16650", "broker URL")
	topic := fs.String("topic", "persistent://public/default/limit", "topic")
	n := fs.Int("n", 1_000_000, "messages to produce or consume")
	size := fs.Int("size", 1024, "message size in bytes (fill)")
	batch := fs.Bool("batch", true, "batch as the perf tool does (fill)")
	subType := fs.String("type", "shared", "subscription type: exclusive, shared, failover, key_shared (consume)")
	pid := fs.Int("pid", 0, "the broker's process id, for its CPU time per message (consume)")
	fs.Parse(os.Args[2:])
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: *url, Logger: log.DefaultNopLogger()})
	if err != nil {
		fail(err)
	}
	defer client.Close()
	switch os.Args[1] {
	case "fill":
		err = fill(client, *topic, *n, *size, *batch)
	case "consume":
		err = consume(client, *topic, *n, *subType, *pid)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "client:", err)
	os.Exit(1)
}

// fill produces n messages of size bytes and waits for every receipt.
func fill(client pulsar.Client, topic string, n, size int, batch bool) error {
	p, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic: topic, DisableBatching: !batch, BatchingMaxPublishDelay: time.Millisecond,
		BatchingMaxMessages: 1000, BatchingMaxSize: 128 << 10, MaxPendingMessages: 1000,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	payload := make([]byte, size)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	wg.Add(n)
	start := time.Now()
	for range n {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Printf("filled %d messages in %.2f s\n", n, time.Since(start).Seconds())
	return nil
}

// consume receives and acknowledges n messages and prints the rate and the
// broker's CPU per message.
func consume(client pulsar.Client, topic string, n int, subType string, pid int) error {
	types := map[string]pulsar.SubscriptionType{
		"exclusive": pulsar.Exclusive, "shared": pulsar.Shared, "failover": pulsar.Failover, "key_shared": pulsar.KeyShared,
	}
	typ, ok := types[subType]
	if !ok {
		return fmt.Errorf("unknown subscription type %q", subType)
	}
	c, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic: topic, SubscriptionName: "limit", Type: typ,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		AckGroupingOptions:          &pulsar.AckGroupingOptions{MaxSize: 1000, MaxTime: 10 * time.Millisecond},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	var start time.Time
	var cpu0 time.Duration
	entries, lastEntry := 0, int64(-1)
	for i := range n {
		m, err := c.Receive(ctx)
		if err != nil {
			return err
		}
		if i == 0 {
			start, cpu0 = time.Now(), processCPU(pid)
		}
		if e := m.ID().EntryID(); e != lastEntry {
			entries, lastEntry = entries+1, e
		}
		if err := c.Ack(m); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	time.Sleep(100 * time.Millisecond) // the last grouped acks reach the broker
	rate := float64(n-1) / elapsed.Seconds()
	line := fmt.Sprintf("consumed %d messages: %.0f msgs/s, mean batch %.1f", n, rate, float64(n)/float64(entries))
	if pid > 0 {
		cpu := processCPU(pid) - cpu0
		line += fmt.Sprintf(", broker CPU %.2f s, %.3f µs/msg", cpu.Seconds(), float64(cpu.Microseconds())/float64(n-1))
	}
	fmt.Println(line)
	return nil
}

// processCPU reads a process's user and system CPU time from /proc.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		fail(err)
	}
	// The fields after the command name (which may hold spaces) start at
	// state; utime and stime are the 14th and 15th fields overall.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100
