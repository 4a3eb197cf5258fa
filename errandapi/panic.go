package errandapi

import (
	"fmt"
	"strings"
)

// PanicFrames is how many stack frames PanicError keeps, from the one
// that panicked outwards.
const PanicFrames = 6

// PanicError is the error an attempt records when its function panicked:
// the function, the panic's value, and the stack from the frame that
// panicked (stack is debug.Stack() read in the recovering function). The
// frames of the recovering function and of the runtime's panic machinery
// are left out, so the first line is the user's.
func PanicError(function string, p any, stack []byte) string {
	return fmt.Sprintf("function %q panicked: %v\n%s", function, p, panicFrames(string(stack), PanicFrames))
}

// panicFrames returns n frames of a goroutine's stack trace, each its
// function line and its tab-indented file line, starting after the last
// panic( frame and the runtime frames just above it (a nil dereference
// passes through runtime.sigpanic). A trace without a panic frame is kept
// from its first frame.
func panicFrames(stack string, n int) string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	start := 1 // after "goroutine N [running]:"
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 2
		}
	}
	for start+1 < len(lines) && strings.HasPrefix(lines[start], "runtime.") {
		start += 2
	}
	start = min(start, len(lines))
	return strings.Join(lines[start:min(start+2*n, len(lines))], "\n")
}
