package engine

import "sync"

// failLogEveryMs is how often, at most, serve mode logs a failed attempt
// of one queue at info: a target that is down fails every attempt of its
// queue, and one line every ten seconds says so without flooding the log.
const failLogEveryMs = 10_000

// failLog rate-limits the info lines of failed attempts per queue.
type failLog struct {
	mu   sync.Mutex
	last map[qkey]failLogEntry
}

type failLogEntry struct {
	at      int64 // when the last line of the queue was logged (ms)
	skipped int   // failed attempts not logged since
}

// allow reports whether a failed attempt of queue k at now (ms) is logged
// at info, and how many of the queue's were not since the last that was.
func (f *failLog) allow(k qkey, now int64) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[qkey]failLogEntry{}
	}
	e, seen := f.last[k]
	if seen && now-e.at < failLogEveryMs {
		e.skipped++
		f.last[k] = e
		return false, 0
	}
	if len(f.last) >= 10_000 { // forget queues quiet for a whole window
		for q, old := range f.last {
			if now-old.at >= failLogEveryMs {
				delete(f.last, q)
			}
		}
	}
	f.last[k] = failLogEntry{at: now}
	return true, e.skipped
}
