package errandapi

import (
	"runtime/debug"
	"strings"
	"testing"
)

//go:noinline
func panicsWithValue() { panic("boom") }

//go:noinline
func panicsOnNil() {
	var m *struct{ n int }
	m.n++
}

// recovered runs f and returns PanicError of what it panicked with.
func recovered(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = PanicError("app/f", p, debug.Stack())
		}
	}()
	f()
	return ""
}

// TestPanicErrorStartsAtThePanickingFrame: the first line after the
// message is the function that panicked and the next its file and line,
// for a panic call and for a runtime error raised through a signal.
func TestPanicErrorStartsAtThePanickingFrame(t *testing.T) {
	for name, f := range map[string]func(){"panic": panicsWithValue, "nil dereference": panicsOnNil} {
		t.Run(name, func(t *testing.T) {
			msg := recovered(f)
			lines := strings.Split(msg, "\n")
			if !strings.HasPrefix(lines[0], `function "app/f" panicked: `) {
				t.Fatalf("message %q", lines[0])
			}
			want := "errandapi.panicsWithValue("
			if name != "panic" {
				want = "errandapi.panicsOnNil("
			}
			if len(lines) < 3 || !strings.Contains(lines[1], want) || !strings.Contains(lines[2], "panic_test.go:") {
				t.Fatalf("the stack does not start at the panicking frame:\n%s", msg)
			}
			if got := len(lines) - 1; got > 2*PanicFrames {
				t.Fatalf("%d stack lines, want at most %d", got, 2*PanicFrames)
			}
		})
	}
}

// TestPanicFramesWithoutAPanicFrame keeps a trace from its first frame.
func TestPanicFramesWithoutAPanicFrame(t *testing.T) {
	stack := "goroutine 1 [running]:\nmain.f()\n\t/a/b.go:3 +0x1\nmain.main()\n\t/a/b.go:9 +0x2\n"
	if got, want := panicFrames(stack, 1), "main.f()\n\t/a/b.go:3 +0x1"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := panicFrames("", 3); got != "" {
		t.Fatalf("empty stack: %q", got)
	}
}
