package main

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestTuneGC: a node runs the collector at nodeGCPercent unless GOGC is
// set, and gives the process its own back when it stops. Not parallel:
// the target is the process's.
func TestTuneGC(t *testing.T) {
	before := gcPercent()
	t.Setenv("GOGC", "")
	restore := tuneGC()
	if got := gcPercent(); got != nodeGCPercent {
		restore()
		t.Fatalf("without GOGC: %d, want %d", got, nodeGCPercent)
	}
	restore()
	if got := gcPercent(); got != before {
		t.Fatalf("after the node: %d, want %d back", got, before)
	}
	t.Setenv("GOGC", "150")
	restore = tuneGC()
	got := gcPercent()
	restore()
	if got != before {
		t.Fatalf("with GOGC set: %d, want it left at %d", got, before)
	}
}
