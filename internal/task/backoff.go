package task

import (
	"math"
	"time"
)

// BackoffPolicy is how long to wait after a failed attempt. The v1 queue
// policy is {min, max, doublings, 2}; the operations tasks' policy is
// {5s, 5min, large, 4}.
type BackoffPolicy struct {
	Min       time.Duration
	Max       time.Duration
	Doublings int
	Factor    float64
}

// Backoff is the wait after the nth failed attempt (n ≥ 1): Min × Factor^(n−1)
// for the first Doublings+1 attempts, then growing linearly by the last
// multiplied value, never above Max.
func Backoff(n int, p BackoffPolicy) time.Duration {
	if n < 1 {
		n = 1
	}
	factor := p.Factor
	if factor < 1 {
		factor = 2
	}
	doublings := p.Doublings
	if doublings < 0 {
		doublings = 0
	}
	min, max := float64(p.Min), float64(p.Max)
	if max < min {
		max = min
	}
	k := n - 1
	var d float64
	if k <= doublings {
		d = min * math.Pow(factor, float64(k))
	} else {
		// As Cloud Tasks: after the doublings, grow by the last doubled
		// value each time (10, 20, 40, 80, 160, 240, … for doublings=3).
		top := min * math.Pow(factor, float64(doublings))
		d = top + top*float64(k-doublings)
	}
	if math.IsInf(d, 0) || math.IsNaN(d) || d > max {
		d = max
	}
	return time.Duration(d)
}
