package main

// errand_checks.go holds the untimed checks of the errand workloads: every
// task done exactly once, and the queue settled.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// expectAll checks (untimed) that the store lists exactly the ids added, once
// each, in state.
func (e *errandSystem) expectAll(ctx context.Context, queue string, state errandapi.State, added []string) error {
	got, err := e.listIDs(ctx, queue, state)
	if err != nil {
		return err
	}
	return sameIDs(fmt.Sprintf("the store's %s tasks", state), got, added)
}

// scheduledIs reports whether a queue's scheduled count (c, capped) reads
// as n: exactly, or capped below n (errand counts no further).
func scheduledIs(c map[errandapi.State]int, capped map[errandapi.State]bool, n int) bool {
	return c["scheduled"] == n || (capped["scheduled"] && c["scheduled"] > 0 && c["scheduled"] < n)
}

// sameIDs checks that got holds every id of want exactly once and nothing else.
func sameIDs(what string, got map[string]int, want []string) error {
	var missing, dup int
	seen := make(map[string]bool, len(want))
	for _, id := range want {
		if seen[id] {
			return fmt.Errorf("the server answered id %s twice on add", id)
		}
		seen[id] = true
		switch got[id] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	extra := 0
	for id := range got {
		if !seen[id] {
			extra++
		}
	}
	if missing+dup+extra > 0 {
		return fmt.Errorf("%s: %d of %d missing, %d more than once, %d unknown ids", what, missing, len(want), dup, extra)
	}
	return nil
}

// waitSettled polls the queue until nothing is left scheduled, running,
// leased or retrying, and none failed; it returns when that was seen.
func (e *errandSystem) waitSettled(ctx context.Context, queue string, every, timeout time.Duration) (time.Time, error) {
	return e.waitSettledBut(ctx, queue, 0, every, timeout)
}

// waitSettledBut is waitSettled on a queue that also holds future tasks
// scheduled far ahead (the backlog workload's): settled is nothing running,
// leased or retrying and the scheduled count reading future. errand caps its
// counts (10,000), so with a larger backlog a capped reading is all it can
// say; the caller must already know that its own tasks are no longer
// scheduled (Steady: every one was delivered or acked).
func (e *errandSystem) waitSettledBut(ctx context.Context, queue string, future int, every, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, capped, err := e.countsCapped(ctx, queue)
		if err != nil {
			return time.Time{}, err
		}
		if c["failed"] > 0 || c["cancelled"] > 0 {
			return time.Time{}, fmt.Errorf("queue %s: counts %v", queue, c)
		}
		if c["running"]+c["leased"]+c["retrying"] == 0 {
			if scheduledIs(c, capped, future) {
				return time.Now(), nil
			}
			if c["scheduled"] < future && !capped["scheduled"] {
				return time.Time{}, fmt.Errorf("queue %s: %d scheduled, want the %d future tasks: counts %v", queue, c["scheduled"], future, c)
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("queue %s not settled after %s: counts %v", queue, timeout, c)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(every):
		}
	}
}

// idCounter counts how often each id was seen (safe for concurrent use).
type idCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func newIDCounter(n int) *idCounter { return &idCounter{m: make(map[string]int, n)} }

func (c *idCounter) add(id string) {
	c.mu.Lock()
	c.m[id]++
	c.mu.Unlock()
}

// snapshot is the counts; read it once the counting is over.
func (c *idCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m
}
