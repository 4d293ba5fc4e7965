// Package rate holds Pulsar 4.0's token bucket (AsyncTokenBucket), the
// arithmetic behind its publish and dispatch rate limits, as a pure value:
// time is an argument (nanoseconds on the broker's clock), nothing runs by
// itself, and it is not safe for concurrent use (the broker keeps each
// bucket under a lock).
package rate

import "math"

// Bucket is a token bucket that gains Rate tokens each Period, up to its
// capacity (Rate), starting full. Tokens are added only in steps: when at
// least the resolution has passed since the last addition (or, when one
// token takes longer than that, at least one token's time), carrying the
// remainder of the division forward, as Pulsar's bucket does (Pulsar waits
// for a nanosecond more, which only a clock moved by hand could tell apart:
// here a test that moves its clock by exactly a period sees the tokens).
// Consuming may drive the tokens below zero.
type Bucket struct {
	rate       int64
	period     int64 // ns
	capacity   int64
	resolution int64 // ns
	oneToken   int64 // ns for one token
	target     int64 // tokens to reach after a throttle

	tokens    int64
	last      int64 // ns of the last addition
	remainder int64 // ns carried forward
}

// Pulsar's resolutions: a publish bucket adds tokens at most every 16 ms
// (AsyncTokenBucket's default), a dispatch bucket once every rate period.
const (
	PublishResolution = 16_000_000
	SecondNanos       = 1_000_000_000
)

// New returns a full bucket of rate tokens (at least 1) per period ns (a
// second when period is not positive), adding tokens with the given
// resolution, created at time now (ns).
func New(rate, period, resolution, now int64) *Bucket {
	if period <= 0 {
		period = SecondNanos
	}
	rate = max(rate, 1)
	b := &Bucket{
		rate:       rate,
		period:     period,
		capacity:   rate,
		resolution: resolution,
		oneToken:   period / rate,
		target:     rate / 100, // DEFAULT_TARGET_FILL_FACTOR_AFTER_THROTTLING
		tokens:     rate,
		last:       now,
	}
	return b
}

// Rate returns the bucket's tokens per period.
func (b *Bucket) Rate() int64 { return b.rate }

// update adds the tokens earned since the last addition, if a step has
// passed: the resolution, or when one token takes longer, that token's
// time less the remainder carried forward.
func (b *Bucket) update(now int64) {
	step := b.resolution
	if b.oneToken > b.resolution {
		step = b.oneToken - b.remainder
	}
	if now < b.last+step {
		return
	}
	d := now - b.last + b.remainder
	b.remainder = 0
	b.last = now
	added := mulDiv(d, b.rate, b.period)
	if r := d - mulDiv(added, b.period, b.rate); r > 0 {
		b.remainder = r
	}
	b.tokens = min(b.tokens+added, b.capacity)
}

// Tokens returns the tokens at time now.
func (b *Bucket) Tokens(now int64) int64 {
	b.update(now)
	return b.tokens
}

// Consume takes n tokens at time now and reports whether any are left (the
// balance is above zero), as consumeTokensAndCheckIfContainsTokens.
func (b *Bucket) Consume(n, now int64) bool {
	b.update(now)
	b.tokens -= n
	return b.tokens > 0
}

// ThrottleDuration returns how long a throttle lasts from now, as Pulsar's
// calculateThrottlingDuration: 0 when the bucket holds a token; otherwise
// the time to earn the tokens Pulsar waits for (1% of the capacity, at
// least one), and at least until the next addition of tokens.
func (b *Bucket) ThrottleDuration(now int64) int64 {
	have := b.Tokens(now)
	if have >= 1 {
		return 0
	}
	d := mulDiv(max(1, b.target)-have, b.period, b.rate)
	return max(d, b.last+max(b.oneToken, b.resolution)-now)
}

// mulDiv returns a*b/c without overflowing for the sizes used here.
func mulDiv(a, b, c int64) int64 {
	if a <= math.MaxInt64/max(b, 1) {
		return a * b / c
	}
	return int64(float64(a) * float64(b) / float64(c))
}
