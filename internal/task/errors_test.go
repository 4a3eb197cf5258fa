package task

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestUnavailableCause: an unavailable store's cause (the driver's words)
// is in Error, for logs and a command's exit, and reachable with
// errors.Is; Recorded, what a rule or a job records for keys to read,
// leaves it out.
func TestUnavailableCause(t *testing.T) {
	cause := fmt.Errorf("dial tcp 10.0.0.7:5432: %w", syscall.ECONNREFUSED)
	err := fmt.Errorf("claim: %w", Unavailable("the store is unreachable; try again", cause))
	if !strings.Contains(err.Error(), "UNAVAILABLE: the store is unreachable; try again: dial tcp 10.0.0.7:5432") {
		t.Fatalf("Error() = %q", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !IsCode(err, CodeUnavailable) {
		t.Fatalf("the cause or the code is lost: %v", err)
	}
	if got := Recorded(err); got != "claim: UNAVAILABLE: the store is unreachable; try again" {
		t.Fatalf("Recorded = %q", got)
	}
	if got := Recorded(errors.New("plain")); got != "plain" {
		t.Fatalf("Recorded of a plain error = %q", got)
	}
}
