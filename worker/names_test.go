package worker

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// TestCheckNameIsTheNodesRule: checkName, the SDK's copy of the node's
// name rule, accepts and refuses exactly what task.ValidateQueueName does,
// with the same reason, naming the field and the name as given.
func TestCheckNameIsTheNodesRule(t *testing.T) {
	names := []string{"jobs", "a", "A_9", "a-b_c", "9lives", "x-", "x_", strings.Repeat("a", 100),
		"", "-x", "_x", "bad inst", "a.b", ".", "..", "a/b", "é", "a%20b", strings.Repeat("a", 101), "a\x00"}
	for _, n := range names {
		want := task.ValidateQueueName(n, "instance")
		got := checkName("instance", n)
		if (got == nil) != (want == nil) {
			t.Errorf("%q: checkName %v, the node's rule %v", n, got, want)
			continue
		}
		if got == nil {
			continue
		}
		var e *errandapi.Error
		_, why, _ := strings.Cut(want.Error(), "instance: ")
		if !errors.As(got, &e) || e.Code != errandapi.CodeInvalidArgument ||
			!strings.HasPrefix(e.Message, "instance "+strconv.Quote(n)+": ") || !strings.HasSuffix(e.Message, why) {
			t.Errorf("%q: checkName says %v; the node says %v", n, got, want)
		}
	}
}

// TestSlotsRefusedTyped: Slots out of range is an INVALID_ARGUMENT
// *errandapi.Error naming Slots, as a bad name is.
func TestSlotsRefusedTyped(t *testing.T) {
	for _, n := range []int{-1, errandapi.MaxWorkerSlots + 1} {
		_, err := New("http://127.0.0.1:1", "jobs", "app", Options{Slots: n})
		var e *errandapi.Error
		if !errors.As(err, &e) || e.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(e.Message, "Slots "+strconv.Itoa(n)+": must be 1–") {
			t.Errorf("Slots %d: %v", n, err)
		}
	}
}
