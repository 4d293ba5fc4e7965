package broker_test

import (
	"fmt"
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// BenchmarkCompact10kMessages compacts a topic of 10,000 single messages
// over 1,000 keys (every tenth message a tombstone, every hundredth without
// a key), published without a client; one op is one compaction, from
// nothing compacted before.
func BenchmarkCompact10kMessages(b *testing.B) {
	tk := testkit.Start(b)
	msgs := make([]broker.ProducerMessage, 10_000)
	for i := range msgs {
		m := broker.ProducerMessage{Key: fmt.Sprint("key-", i%1000), Payload: fmt.Appendf(nil, "value %d", i)}
		switch {
		case i%100 == 0:
			m.Key = ""
		case i%10 == 0:
			m.Payload = nil
		}
		msgs[i] = m
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		topic := fmt.Sprint("bench-", i)
		tk.Publish(topic, msgs...)
		b.StartTimer()
		tk.Compact(topic)
	}
}
