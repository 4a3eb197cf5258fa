package task

import (
	"testing"
	"time"
)

// TestOpsQueuePolicy: an operations queue keeps each task's own budget and
// waits 5 s, 20 s, 80 s, 5 min between attempts; a v1 queue keeps its own.
func TestOpsQueuePolicy(t *testing.T) {
	for n, want := range []time.Duration{5 * time.Second, 20 * time.Second, 80 * time.Second, 5 * time.Minute, 5 * time.Minute} {
		if got := Backoff(n+1, (&Queue{Name: KindDLQReplay}).Backoff()); got != want {
			t.Errorf("ops backoff after attempt %d = %v, want %v", n+1, got, want)
		}
	}
	q := NewQueue("i", KindDLQPurge, ModePush)
	q.MaxAttempts = OpsMaxAttempts
	tk := &Task{ID: "t", State: Pending, MaxAttempts: 2}
	now := int64(1000)
	for attempt := 1; attempt <= 2; attempt++ {
		if err := tk.Claim(q, now, "l", 1000); err != nil {
			t.Fatal(err)
		}
		if tk.MaxAttempts != 2 {
			t.Fatalf("claim replaced the task's budget: %d", tk.MaxAttempts)
		}
		failed, err := tk.Finish(q, now, Outcome{Status: AttemptFailed, Error: "x"})
		if err != nil || failed != (attempt == 2) {
			t.Fatalf("attempt %d: failed %v, %v", attempt, failed, err)
		}
	}
	v1 := NewQueue("i", "jobs", ModePush)
	tk = &Task{ID: "u", State: Pending, MaxAttempts: 2}
	if err := tk.Claim(v1, now, "l", 1000); err != nil || tk.MaxAttempts != DefaultMaxAttempts {
		t.Fatalf("a v1 queue's budget applies: %d %v", tk.MaxAttempts, err)
	}
	for _, c := range []struct {
		in   *int64
		want int
	}{{nil, 3}, {ptr(0), 3}, {ptr(5), 5}, {ptr(9), 8}, {ptr(-1), 1}} {
		if got := ClampAttempts(c.in); got != c.want {
			t.Errorf("ClampAttempts(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func ptr(n int64) *int64 { return &n }
