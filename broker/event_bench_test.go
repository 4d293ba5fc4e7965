package broker

import (
	"sync/atomic"
	"testing"
)

// BenchmarkEventDelivery measures what an event costs the goroutine that
// emits it: queueing it under a topic lock and delivering it to one hook
// when the lock is released. "parallel" has every core emit at once, so a
// goroutine often leaves its events to the one delivering.
func BenchmarkEventDelivery(b *testing.B) {
	br := New()
	var seen atomic.Int64
	br.OnEvent(func(Event) { seen.Add(1) })
	lock := topicLock{events: &br.events}
	ev := Event{Kind: EventAcked, Topic: "persistent://public/default/bench"}
	b.Run("one-goroutine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lock.Lock()
			br.emit(ev)
			lock.Unlock()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			l := topicLock{events: &br.events} // one topic per goroutine
			for pb.Next() {
				l.Lock()
				br.emit(ev)
				l.Unlock()
			}
		})
		br.DeliverEvents()
	})
	if seen.Load() == 0 {
		b.Fatal("the hook saw no event")
	}
}
