package broker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// BenchmarkConsumeTransformProduce measures one worker's cycle with
// pulsar-client-go: receive a message, produce its output, acknowledge it;
// in a transaction (a new one each cycle, committed) or without. An op is
// one cycle. With PULSAR_TXN_URL set it runs against that Pulsar instead,
// for comparison.
func BenchmarkConsumeTransformProduce(b *testing.B) {
	for _, inTxn := range []bool{false, true} {
		b.Run(fmt.Sprintf("txn-%v", inTxn), func(b *testing.B) {
			url := os.Getenv("PULSAR_TXN_URL")
			if url == "" {
				url = testkit.Start(b, testkit.WithTransactions()).URL()
			}
			c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, EnableTransaction: true, Logger: log.DefaultNopLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			suffix := fmt.Sprintf("%d-%v", time.Now().UnixNano(), inTxn)
			in, out := "bench-ctp-in-"+suffix, "bench-ctp-out-"+suffix
			cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "worker", Type: pulsar.Shared,
				AckWithResponse: true})
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			inProd, err := c.CreateProducer(pulsar.ProducerOptions{Topic: in})
			if err != nil {
				b.Fatal(err)
			}
			defer inProd.Close()
			outProd, err := c.CreateProducer(pulsar.ProducerOptions{Topic: out, DisableBatching: true})
			if err != nil {
				b.Fatal(err)
			}
			defer outProd.Close()
			ctx := context.Background()
			payload := make([]byte, 100)
			for i := 0; i < b.N; i++ {
				inProd.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload}, nil)
			}
			if err := inProd.Flush(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := cons.Receive(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if !inTxn {
					if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Payload: m.Payload()}); err != nil {
						b.Fatal(err)
					}
					if err := cons.Ack(m); err != nil {
						b.Fatal(err)
					}
					continue
				}
				txn, err := c.NewTransaction(time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Payload: m.Payload(), Transaction: txn}); err != nil {
					b.Fatal(err)
				}
				if err := cons.AckWithTxn(m, txn); err != nil {
					b.Fatal(err)
				}
				if err := txn.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}
