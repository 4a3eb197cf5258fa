package task

import (
	"testing"
	"time"
)

func TestBackoffV1Defaults(t *testing.T) {
	q := NewQueue("i", "q", ModePush)
	want := []time.Duration{10, 20, 40, 80, 160, 320, 640, 1280, 2560}
	for i, w := range want {
		if got := Backoff(i+1, q.Backoff()); got != w*time.Second {
			t.Errorf("n=%d: %v, want %v", i+1, got, w*time.Second)
		}
	}
	if got := Backoff(20, q.Backoff()); got != time.Hour {
		t.Errorf("cap: %v", got)
	}
}

func TestBackoffLinearPastDoublings(t *testing.T) {
	// Cloud Tasks' example: min 10s, max 300s, doublings 3.
	p := BackoffPolicy{Min: 10 * time.Second, Max: 300 * time.Second, Doublings: 3, Factor: 2}
	want := []time.Duration{10, 20, 40, 80, 160, 240, 300, 300}
	for i, w := range want {
		if got := Backoff(i+1, p); got != w*time.Second {
			t.Errorf("n=%d: %v, want %v", i+1, got, w*time.Second)
		}
	}
	p.Doublings = 0
	if got := Backoff(3, p); got != 30*time.Second {
		t.Errorf("doublings 0: %v", got)
	}
}

func TestBackoffOpsPolicy(t *testing.T) {
	p := BackoffPolicy{Min: 5 * time.Second, Max: 5 * time.Minute, Doublings: 64, Factor: 4}
	want := []time.Duration{5 * time.Second, 20 * time.Second, 80 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := Backoff(i+1, p); got != w {
			t.Errorf("n=%d: %v, want %v", i+1, got, w)
		}
	}
	if got := Backoff(1000, p); got != 5*time.Minute {
		t.Errorf("huge n: %v", got)
	}
	if got := Backoff(1, BackoffPolicy{Min: 1500 * time.Millisecond, Max: time.Minute, Doublings: 16, Factor: 2}); got != 1500*time.Millisecond {
		t.Errorf("fractional min: %v", got)
	}
}
