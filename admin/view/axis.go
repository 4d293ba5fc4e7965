package view

import (
	"fmt"
	"sort"
	"time"
)

// axis maps the times of a message's marks to x positions. It is linear in
// time, except that two distinct times are never drawn closer than minGap,
// so that marks a few microseconds apart stay apart: the scale is chosen so
// that the stretched axis still spans the width asked for (or more, when
// there are too many distinct times to fit).
type axis struct {
	times []time.Time // distinct times, in order
	xs    []float64   // their positions
}

// minGap is the least distance, in pixels, between two distinct times.
const minGap = 26

func newAxis(times []time.Time, x0, width float64) *axis {
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	a := &axis{}
	for _, t := range times {
		if len(a.times) == 0 || t.After(a.times[len(a.times)-1]) {
			a.times = append(a.times, t)
		}
	}
	if len(a.times) == 0 {
		return a
	}
	gaps := make([]float64, len(a.times)-1)
	for i := range gaps {
		gaps[i] = float64(a.times[i+1].Sub(a.times[i]))
	}
	total := func(scale float64) float64 {
		sum := 0.0
		for _, g := range gaps {
			sum += max(g*scale, minGap)
		}
		return sum
	}
	// total grows with the scale: find the scale that fills the width.
	lo, hi := 0.0, 1.0
	for total(hi) < width && hi < 1e12 {
		hi *= 2
	}
	for range 60 {
		mid := (lo + hi) / 2
		if total(mid) > width {
			hi = mid
		} else {
			lo = mid
		}
	}
	x := x0
	a.xs = append(a.xs, x)
	for _, g := range gaps {
		x += max(g*lo, minGap)
		a.xs = append(a.xs, x)
	}
	return a
}

// x returns the position of t, one of the axis's times or between them.
func (a *axis) x(t time.Time) float64 {
	i := sort.Search(len(a.times), func(i int) bool { return !a.times[i].Before(t) })
	switch {
	case len(a.times) == 0:
		return 0
	case i == len(a.times):
		return a.xs[i-1]
	case i == 0 || a.times[i].Equal(t):
		return a.xs[i]
	}
	f := float64(t.Sub(a.times[i-1])) / float64(a.times[i].Sub(a.times[i-1]))
	return a.xs[i-1] + f*(a.xs[i]-a.xs[i-1])
}

// end returns the position of the last time.
func (a *axis) end() float64 {
	if len(a.xs) == 0 {
		return 0
	}
	return a.xs[len(a.xs)-1]
}

// since formats d, a time after a message's first mark, in a short form.
func since(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("+%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("+%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("+%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("+%.2f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("+%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("+%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}
