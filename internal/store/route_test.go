package store

import (
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestClaimSizeStopsReading: a claim with MaxBytes reads rows until they
// pass it (the first always), and Keep then takes those that fit; without
// MaxBytes it reads every row.
func TestClaimSizeStopsReading(t *testing.T) {
	row := func(n int) *task.Task { return &task.Task{Payload: []byte(strings.Repeat("p", n))} }
	p := &ClaimParams{MaxBytes: 2_500}
	var size ClaimSize
	var read []*task.Task
	for _, n := range []int{1_000, 1_000, 1_000, 1_000, 1_000} {
		if size.Past(p) {
			continue
		}
		tk := row(n)
		read = append(read, tk)
		size.Add(tk)
	}
	if len(read) != 3 {
		t.Fatalf("read %d rows of 1,000 bytes within 2,500; want 3 (the third passes it)", len(read))
	}
	if kept := p.Keep(read); len(kept) != 2 {
		t.Fatalf("kept %d; want 2", len(kept))
	}
	var first ClaimSize
	if first.Past(&ClaimParams{MaxBytes: 1}) {
		t.Fatal("the first row is not read under a budget it passes")
	}
	first.Add(row(10))
	if !first.Past(&ClaimParams{MaxBytes: 1}) || first.Past(&ClaimParams{}) {
		t.Fatal("Past is wrong after a row over the budget, or without one")
	}
}
