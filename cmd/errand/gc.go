package main

import (
	"os"
	"runtime/debug"
)

// nodeGCPercent is the Go collector's target (GOGC) of a node that serve
// and dev run when the environment sets no GOGC. A node's live heap is
// small (tens of MB) and every task allocates through its HTTP, JSON and
// database layers, so at Go's default of 100 the collector took ~20% of
// serve's CPU in a pull burn-down on PostgreSQL; at 400 serve spent 12–13
// µs of CPU a task against 15–18, its peak RSS 93–104 MB against 55–57
// (BENCHMARKS.md, "The thirty-seventh session"); the README says so.
const nodeGCPercent = 400

// tuneGC sets the collector's target to nodeGCPercent unless GOGC is set
// in the environment (which then rules, as for any Go program; GOMEMLIMIT
// applies either way), and returns what restores the one before. main
// calls it once for the process (every command; only serve and dev run
// long enough for it to matter), so the tests that run Main in process,
// many nodes at once, leave their own process's target alone.
func tuneGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(nodeGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
