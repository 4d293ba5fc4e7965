package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// topicSpec is one topic of the run and how it is produced.
type topicSpec struct {
	name     string
	batching bool
}

// subSpec is one subscription every topic has.
type subSpec struct {
	name       string
	typ        pulsar.SubscriptionType
	consumers  int
	cumulative bool // acknowledge cumulatively, every few messages
	nackOneIn  int  // negatively acknowledge one delivery in this many (0: never)
}

var subSpecs = []subSpec{
	{name: "shared", typ: pulsar.Shared, consumers: 2, nackOneIn: 10},
	{name: "keyshared", typ: pulsar.KeyShared, consumers: 2},
	{name: "failover", typ: pulsar.Failover, consumers: 1, cumulative: true},
}

const producersPerTopic = 2

// payload is the body of message key: the key, then filler derived from
// it, so that a torn or mixed-up payload does not check.
func payload(key string, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, key...)
	b = append(b, '|')
	for i := 0; len(b) < size; i++ {
		b = append(b, key[i%len(key)]^byte(i))
	}
	return b
}

// keyOf checks a payload and returns its key.
func keyOf(p []byte, size int) (string, error) {
	i := strings.IndexByte(string(p), '|')
	if i <= 0 {
		return "", fmt.Errorf("payload without a key: %q", truncate(p))
	}
	key := string(p[:i])
	if want := payload(key, size); string(want) != string(p) {
		return key, fmt.Errorf("payload of %s does not check (%d bytes)", key, len(p))
	}
	return key, nil
}

func truncate(p []byte) []byte {
	if len(p) > 40 {
		return p[:40]
	}
	return p
}

// workload is the clients of the run.
type workload struct {
	o      options
	rec    *record
	topics []topicSpec

	prodClient, consClient pulsar.Client

	paused  atomic.Bool
	pauseMu sync.Mutex
	resume  *sync.Cond

	stop    chan struct{}
	wg      sync.WaitGroup
	consWg  sync.WaitGroup
	consCtx context.Context
	cancel  context.CancelFunc

	badPayloads atomic.Int64 // deliveries that did not check, and consumers lost
	firstBad    atomic.Value
}

func (w *workload) topic(t topicSpec) string { return "persistent://public/default/" + t.name }

// subscribe opens every consumer; they run until stopConsumers.
func (w *workload) subscribe() error {
	w.consCtx, w.cancel = context.WithCancel(context.Background())
	for _, t := range w.topics {
		for _, s := range subSpecs {
			sr := w.rec.sub(w.topic(t), s.name)
			for i := range s.consumers {
				c, err := w.consClient.Subscribe(pulsar.ConsumerOptions{
					Topic:                       w.topic(t),
					SubscriptionName:            s.name,
					Type:                        s.typ,
					Name:                        fmt.Sprintf("%s-%s-%d", t.name, s.name, i),
					SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
					AckWithResponse:             true,
					NackRedeliveryDelay:         100 * time.Millisecond,
					ReceiverQueueSize:           100,
				})
				if err != nil {
					return fmt.Errorf("subscribe %s on %s: %w", s.name, t.name, err)
				}
				w.consWg.Add(1)
				go w.consume(c, s, sr)
			}
		}
	}
	return nil
}

func (w *workload) consume(c pulsar.Consumer, s subSpec, sr *subRecord) {
	defer w.consWg.Done()
	defer c.Close()
	rnd := rand.New(rand.NewPCG(w.o.seed, uint64(len(sr.name))))
	var last pulsar.MessageID
	var sinceCum int
	for {
		ctx, cancel := context.WithTimeout(w.consCtx, 200*time.Millisecond)
		m, err := c.Receive(ctx)
		cancel()
		if w.consCtx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && w.consCtx.Err() == nil {
			// The client closed the consumer: it gave up on the broker.
			w.bad(fmt.Errorf("%s on %s: the consumer is closed: %w", sr.name, sr.topic, err))
			return
		}
		if err != nil {
			// Idle: acknowledge cumulatively what was received.
			if s.cumulative && last != nil && sinceCum > 0 {
				w.rec.cumulativeSent(sr, last)
				if c.AckIDCumulative(last) == nil {
					w.rec.cumulativeConfirmed(sr, last, time.Now())
					sinceCum = 0
				}
			}
			continue
		}
		key, kerr := keyOf(m.Payload(), w.o.size)
		if kerr != nil {
			w.bad(fmt.Errorf("%s delivered %s: %w", sr.name, idString(m.ID()), kerr))
		}
		w.rec.delivered(sr, key, m.ID())
		switch {
		case s.cumulative:
			last = m.ID()
			sinceCum++
			if sinceCum >= 8 {
				w.rec.cumulativeSent(sr, last)
				if c.AckIDCumulative(last) == nil {
					w.rec.cumulativeConfirmed(sr, last, time.Now())
					sinceCum = 0
				}
			}
		case s.nackOneIn > 0 && m.ID().BatchSize() <= 1 && rnd.IntN(s.nackOneIn) == 0:
			c.Nack(m)
			w.rec.nacked(sr)
		default:
			w.rec.ackSent(sr, m.ID())
			if c.Ack(m) == nil {
				w.rec.ackConfirmed(sr, m.ID(), time.Now())
			}
		}
	}
}

func (w *workload) bad(err error) {
	if w.badPayloads.Add(1) == 1 {
		w.firstBad.Store(err.Error())
	}
}

// produce starts every producer; they run until stopProducers.
func (w *workload) produce() error {
	w.stop = make(chan struct{})
	w.resume = sync.NewCond(&w.pauseMu)
	for _, t := range w.topics {
		for i := range producersPerTopic {
			opts := pulsar.ProducerOptions{
				Topic:               w.topic(t),
				Name:                fmt.Sprintf("%s-p%d", t.name, i),
				DisableBatching:     !t.batching,
				SendTimeout:         time.Minute,
				MaxPendingMessages:  256,
				BatchingMaxMessages: 10,
			}
			if t.batching {
				opts.BatchingMaxPublishDelay = 5 * time.Millisecond
			}
			p, err := w.prodClient.CreateProducer(opts)
			if err != nil {
				return fmt.Errorf("producer on %s: %w", t.name, err)
			}
			w.wg.Add(1)
			go w.publish(p, w.topic(t), opts.Name)
		}
	}
	return nil
}

func (w *workload) publish(p pulsar.Producer, topic, name string) {
	defer w.wg.Done()
	defer p.Close()
	interval := time.Second / time.Duration(max(w.o.rate, 1))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			p.Flush()
			return
		case <-tick.C:
		}
		w.pauseMu.Lock()
		for w.paused.Load() {
			w.resume.Wait()
		}
		w.pauseMu.Unlock()
		key := fmt.Sprintf("%s-%08d", name, seq)
		w.rec.sending(topic, key)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{
			Payload: payload(key, w.o.size),
			Key:     fmt.Sprintf("k%d", seq%16),
		}, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			w.rec.receipt(topic, key, id, err)
		})
	}
}

// pause stops the producers from sending new messages and waits until
// what they sent is settled (receipted or failed).
func (w *workload) pause(ctx context.Context) error {
	w.paused.Store(true)
	for {
		w.rec.mu.Lock()
		n := len(w.rec.outstanding)
		w.rec.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d sends still outstanding: %w", n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (w *workload) unpause() {
	w.pauseMu.Lock()
	w.paused.Store(false)
	w.resume.Broadcast()
	w.pauseMu.Unlock()
}

func (w *workload) stopProducers() {
	w.unpause()
	close(w.stop)
	w.wg.Wait()
}

func (w *workload) stopConsumers() {
	w.cancel()
	w.consWg.Wait()
}

// topicState is what a reader from the earliest position found in a topic.
type topicState struct {
	ids    map[string][]string // key to the ids it is stored at
	count  int
	maxDup int
}

// readAll reads topic from the earliest position to its end with a reader.
func readAll(ctx context.Context, client pulsar.Client, topic string, size int) (*topicState, error) {
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(),
		ReceiverQueueSize: 1000})
	if err != nil {
		return nil, fmt.Errorf("reader on %s: %w", topic, err)
	}
	defer r.Close()
	st := &topicState{ids: map[string][]string{}}
	var bad []error
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading %s after %d messages: %w", topic, st.count, err)
		}
		st.count++
		key, kerr := keyOf(m.Payload(), size)
		if kerr != nil {
			bad = append(bad, fmt.Errorf("%s at %s: %w", topic, idString(m.ID()), kerr))
			continue
		}
		st.ids[key] = append(st.ids[key], idString(m.ID()))
		st.maxDup = max(st.maxDup, len(st.ids[key]))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return st, errors.Join(bad...)
}
