package rate

import (
	"testing"

	"pgregory.net/rapid"
)

const ms = 1_000_000

func TestBucketStartsFullAndThrottlesWhenEmpty(t *testing.T) {
	b := New(10, SecondNanos, PublishResolution, 0)
	for i := range 9 {
		if !b.Consume(1, 0) {
			t.Fatalf("empty after %d of 10", i+1)
		}
	}
	if b.Consume(1, 0) {
		t.Fatal("tokens left after 10 of 10")
	}
	// One token takes 100 ms; 1% of 10 rounds to 0, so it waits for 1.
	if d := b.ThrottleDuration(0); d != 100*ms {
		t.Fatalf("throttle for %d ns, want 100 ms", d)
	}
	if got := b.Tokens(99 * ms); got != 0 {
		t.Fatalf("%d tokens at 99 ms, want 0", got)
	}
	if got := b.Tokens(100 * ms); got != 1 {
		t.Fatalf("%d tokens at 100 ms, want 1", got)
	}
	if got := b.Tokens(5 * SecondNanos); got != 10 {
		t.Fatalf("%d tokens after 5 s, want the capacity 10", got)
	}
}

func TestDispatchBucketAddsTokensOncePerPeriod(t *testing.T) {
	// A dispatch bucket's resolution is its period: tokens come in whole
	// steps, not as time passes within the period.
	b := New(100, 2*SecondNanos, 2*SecondNanos, 0)
	b.Consume(100, 0)
	if got := b.Tokens(1999 * ms); got != 0 {
		t.Fatalf("%d tokens within the period, want 0", got)
	}
	if got := b.Tokens(2001 * ms); got != 100 {
		t.Fatalf("%d tokens after a period, want 100", got)
	}
}

func TestConsumingMoreThanTheBalanceOwesIt(t *testing.T) {
	b := New(5, SecondNanos, SecondNanos, 0)
	b.Consume(50, 0) // a batch of 50 messages sent on 5 tokens
	if got := b.Tokens(0); got != -45 {
		t.Fatalf("balance %d, want -45", got)
	}
	if got := b.Tokens(9*SecondNanos + 1); got != 0 {
		t.Fatalf("balance %d after 9 s, want 0", got)
	}
}

// Over any schedule, the tokens gained never exceed rate × elapsed / period
// (plus the initial fill), nor the capacity, and the remainder carried
// forward loses no time.
func TestBucketNeverGainsMoreThanItsRate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.Int64Range(1, 5000).Draw(t, "rate")
		period := rapid.SampledFrom([]int64{SecondNanos, 3 * SecondNanos}).Draw(t, "period")
		res := rapid.SampledFrom([]int64{PublishResolution, period}).Draw(t, "resolution")
		b := New(rate, period, res, 0)
		now, consumed := int64(0), int64(0)
		for range rapid.IntRange(1, 50).Draw(t, "steps") {
			now += rapid.Int64Range(0, 2*period).Draw(t, "advance")
			n := rapid.Int64Range(0, 2*rate).Draw(t, "consume")
			b.Consume(n, now)
			consumed += n
			tokens := b.Tokens(now)
			if tokens > rate {
				t.Fatalf("%d tokens over the capacity %d", tokens, rate)
			}
			if gained := tokens + consumed - rate; gained > now*rate/period+1 {
				t.Fatalf("gained %d tokens in %d ns at %d per %d", gained, now, rate, period)
			}
		}
	})
}
