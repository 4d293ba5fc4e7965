package dispatch

import (
	"testing"

	"github.com/pulsarsim/pulsarsim/cursor"
)

// benchDispatch measures dispatch + ack per delivered entry on a subscription
// of type typ with n consumers, each flowing permits as a client does.
func benchDispatch(b *testing.B, typ SubType, n int) {
	log := &testLog{}
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	for i := 0; i < 1<<16; i++ {
		log.add(1, 1, keys[i%len(keys)])
	}
	d := New(DefaultOptions(typ), cursor.New(-1))
	for id := uint64(1); id <= uint64(n); id++ {
		if err := d.AddConsumer(ConsumerSpec{ID: id, Name: string(rune('a' + id))}); err != nil {
			b.Fatal(err)
		}
		d.Flow(id, 1000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	delivered := 0
	for delivered < b.N {
		if d.Cursor().ReadPosition() >= log.End() {
			b.StopTimer()
			for i := 0; i < 1<<16; i++ {
				log.add(1, 1, keys[i%len(keys)])
			}
			b.StartTimer()
		}
		ds := d.Dispatch(log)
		for _, dl := range ds {
			d.Ack(dl.Entry)
		}
		delivered += len(ds)
		for id := uint64(1); id <= uint64(n); id++ {
			d.Flow(id, 500)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/entry")
}

func BenchmarkDispatchSharedPerEntry(b *testing.B) { benchDispatch(b, Shared, 1) }

func BenchmarkDispatchSharedPerEntry4Consumers(b *testing.B) { benchDispatch(b, Shared, 4) }

func BenchmarkDispatchKeySharedPerEntry4Consumers(b *testing.B) { benchDispatch(b, KeyShared, 4) }

func BenchmarkDispatchExclusivePerEntry(b *testing.B) { benchDispatch(b, Exclusive, 1) }
