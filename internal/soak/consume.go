package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// churnConsumer is one client's consumer of one subscription. It
// acknowledges most messages and negatively acknowledges about one in
// twenty; the soak closes it and opens it again now and then.
type churnConsumer struct {
	s                *soak
	client           pulsar.Client
	topic, sub, name string
	typ              pulsar.SubscriptionType
	rng              *rand.Rand
	mu               sync.Mutex
	c                pulsar.Consumer
	stop             chan struct{}
	done             chan struct{}
}

func (cc *churnConsumer) open() error {
	c, err := cc.client.Subscribe(pulsar.ConsumerOptions{
		Topic: cc.topic, SubscriptionName: cc.sub, Type: cc.typ, Name: cc.name,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		NackRedeliveryDelay:         50 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("subscribe %s on %s: %w", cc.sub, cc.topic, err)
	}
	cc.mu.Lock()
	cc.c, cc.stop, cc.done = c, make(chan struct{}), make(chan struct{})
	stop, done := cc.stop, cc.done
	cc.mu.Unlock()
	go cc.receive(c, stop, done)
	return nil
}

// receive handles messages until stop is closed.
func (cc *churnConsumer) receive(c pulsar.Consumer, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				cc.s.fail(fmt.Errorf("receive on %s/%s: %w", cc.topic, cc.sub, err))
			}
			return
		}
		cc.mu.Lock()
		nack := cc.rng.IntN(20) == 0
		cc.mu.Unlock()
		if nack {
			cc.s.nacked.Add(1)
			c.Nack(m)
			continue
		}
		if err := c.Ack(m); err != nil {
			// The connection may be gone: the message comes again.
			continue
		}
		cc.s.delivered.Add(1)
		cc.s.mu.Lock()
		cc.s.received[cc.sub][m.Properties()["id"]]++
		cc.s.mu.Unlock()
	}
}

// closeConsumer stops the receiving goroutine and closes the consumer.
func (cc *churnConsumer) closeConsumer() {
	cc.mu.Lock()
	c, stop, done := cc.c, cc.stop, cc.done
	cc.c = nil
	cc.mu.Unlock()
	if c == nil {
		return
	}
	close(stop)
	<-done
	c.Close()
}

// reopen closes the consumer and subscribes again, as a client restarting.
func (cc *churnConsumer) reopen() {
	cc.closeConsumer()
	if err := cc.open(); err != nil {
		cc.s.fail(err)
	}
}
