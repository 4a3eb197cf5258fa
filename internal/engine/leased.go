package engine

import (
	"math"
	"sync"

	"github.com/errandhq/errand/internal/task"
)

// Bounds of a node's leased tasks (leasedTasks): past either, a new lease
// is not kept, and its ack reads the task from the store.
const (
	leasedMaxEntries = 100_000
	leasedMaxBytes   = 64 << 20 // payloads, params and results, roughly
	// leasedSweepEvery is the least time between two sweeps of a full map
	// for expired leases, so that a map full of live leases is not walked
	// on every lease call.
	leasedSweepEvery = 1000 // ms
)

// leasedTasks keeps the tasks this node's Lease handed out, as the claim
// returned them, so that an ack or a release arriving at this node checks
// the lease on its own copy instead of reading the task back from the
// store. A copy is only a starting point: the write that follows is fenced
// in the store on the lease id and on the lease being live at the ack's
// time (store.FinishParams.LiveAt), so a lease changed elsewhere (extended
// or shortened through another node, expired and rescued, the task
// deleted) is never finished from a stale copy; the ack paths then read
// the task and answer as a read would have.
//
// An entry leaves when this node acks or releases the task (take), when
// this node extends its lease (drop: the next ack reads the store), or
// when its lease has expired: found so by the ack that takes it, or swept
// when the map is full. A full map keeps no new leases. An ack that reaches
// another node misses here and reads the store.
//
// The map owns its copies: put copies what it keeps, and take hands the
// copy over to the caller, which may change it (task.Finish does).
type leasedTasks struct {
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	m     map[leasedKey]leasedEntry
	bytes int64
	// soonest is at or before the earliest lease expiry of the entries (a
	// lower bound: takes do not raise it), so a sweep before it would find
	// nothing expired; lastSweep is when the map was last swept.
	soonest, lastSweep int64
}

type leasedKey struct{ instanceID, id string }

type leasedEntry struct {
	t    *task.Task
	size int64
}

func newLeasedTasks(maxEntries int, maxBytes int64) *leasedTasks {
	return &leasedTasks{maxEntries: maxEntries, maxBytes: maxBytes, m: map[leasedKey]leasedEntry{},
		soonest: math.MaxInt64, lastSweep: math.MinInt64}
}

// put keeps copies of the tasks a claim at now returned, as long as the
// bounds allow.
func (l *leasedTasks) put(ts []*task.Task, now int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range ts {
		size := leasedSize(t)
		k := leasedKey{t.InstanceID, t.ID}
		if old, ok := l.m[k]; ok { // an earlier lease of the task, run out
			l.remove(k, old)
		}
		if !l.room(size, now) {
			continue
		}
		l.m[k] = leasedEntry{t: ownCopy(t), size: size}
		l.bytes += size
		l.soonest = min(l.soonest, t.LeaseExpiresAt)
	}
}

// room reports whether an entry of size fits, sweeping out the expired
// leases first when the map is full and a sweep may find some.
func (l *leasedTasks) room(size, now int64) bool {
	fits := func() bool { return len(l.m) < l.maxEntries && l.bytes+size <= l.maxBytes }
	if fits() {
		return true
	}
	if now < l.soonest || now < l.lastSweep+leasedSweepEvery {
		return false
	}
	l.sweep(now)
	return fits()
}

// sweep removes the entries whose lease expired at or before now.
func (l *leasedTasks) sweep(now int64) {
	l.lastSweep = now
	l.soonest = math.MaxInt64
	for k, e := range l.m {
		if e.t.LeaseExpiresAt <= now {
			l.remove(k, e)
			continue
		}
		l.soonest = min(l.soonest, e.t.LeaseExpiresAt)
	}
}

func (l *leasedTasks) remove(k leasedKey, e leasedEntry) {
	delete(l.m, k)
	l.bytes -= e.size
}

// take removes and returns the copy of a task, or nil: the caller owns it.
func (l *leasedTasks) take(instanceID, id string) *task.Task {
	k := leasedKey{instanceID, id}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[k]
	if !ok {
		return nil
	}
	l.remove(k, e)
	return e.t
}

// drop forgets the copy of a task, if any.
func (l *leasedTasks) drop(instanceID, id string) { l.take(instanceID, id) }

// len returns the number of entries (tests).
func (l *leasedTasks) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// leasedSize is roughly what a copy of t holds, for leasedMaxBytes.
func leasedSize(t *task.Task) int64 {
	return int64(256 + len(t.ID) + len(t.Queue) + len(t.Name) + len(t.Payload) + len(t.Params) + len(t.Result) +
		len(t.LastError) + len(t.LeaseID) + 64*len(t.Attempts))
}

// ownCopy returns a copy of t that shares nothing that anyone may change
// in place: the raw JSON (which a caller of Lease is handed and an
// embedding program may write to), the attempt history (which task.Finish
// appends to) and the target.
func ownCopy(t *task.Task) *task.Task {
	c := *t
	n := len(t.Payload) + len(t.Params) + len(t.Result)
	buf := make([]byte, 0, n)
	raw := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	c.Payload, c.Params, c.Result = raw(t.Payload), raw(t.Params), raw(t.Result)
	if t.Attempts != nil {
		c.Attempts = append(make([]task.Attempt, 0, len(t.Attempts)), t.Attempts...)
	}
	if t.Target != nil {
		target := *t.Target
		c.Target = &target
	}
	return &c
}
