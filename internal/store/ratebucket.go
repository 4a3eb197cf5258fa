package store

// Refill returns a token bucket's tokens at now: tokens as stored at time at
// (epoch ms), refilled at rate per second, at most burst (at least 1). A
// stored value below 0 means a bucket never used, which starts full. Every
// backend keeps a queue's ratePerSecond with it.
func Refill(tokens float64, at, now int64, rate float64, burst int) float64 {
	full := float64(max(burst, 1))
	if tokens < 0 {
		return full
	}
	if now > at {
		tokens += float64(now-at) / 1000 * rate
	}
	return min(tokens, full)
}
