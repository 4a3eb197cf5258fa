package mcp

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// The one-line summaries tools give beside their structured output.

// states are the v1 states in the order a summary names them.
var states = []errandapi.State{
	errandapi.StateScheduled, errandapi.StateRunning, errandapi.StateLeased, errandapi.StateRetrying,
	errandapi.StateSucceeded, errandapi.StateFailed, errandapi.StateCancelled,
}

// countsText names a queue's non-zero counts ("3 scheduled, 1 failed").
func countsText(counts map[errandapi.State]int) string {
	var parts []string
	for _, s := range states {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

func pausedNote(paused bool) string {
	if paused {
		return ", paused"
	}
	return ""
}

// targetText names a target ("webhook https://…", "none").
func targetText(t *errandapi.Target) string { return cmp.Or(t.String(), "none") }

// when renders an epoch-ms time for a model: RFC 3339 in UTC.
func when(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// taskText is one task in a sentence: id, queue, state, attempts, error.
func taskText(t *errandapi.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s", t.ID)
	if t.Name != nil {
		fmt.Fprintf(&b, " (%s)", *t.Name)
	}
	fmt.Fprintf(&b, " in queue %s: %s, attempt %d of %d", t.Queue, t.State, t.Attempt, t.MaxAttempts)
	switch t.State {
	case errandapi.StateScheduled, errandapi.StateRetrying:
		fmt.Fprintf(&b, ", runs at %s", when(t.RunAt))
	case errandapi.StateLeased:
		if t.LeaseExpiresAt != nil {
			fmt.Fprintf(&b, ", lease until %s", when(*t.LeaseExpiresAt))
		}
	}
	if t.LastError != nil && *t.LastError != "" {
		fmt.Fprintf(&b, ", last error: %s", *t.LastError)
	}
	return b.String()
}
