package testkit

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// pgSkipped counts the tests of this test binary skipped for want of
// PostgreSQL.
var pgSkipped atomic.Int64

// SkipPostgres skips tb because ERRAND_TEST_POSTGRES is unset, and counts
// it for Main's note.
func SkipPostgres(tb testing.TB) {
	tb.Helper()
	pgSkipped.Add(1)
	tb.Skip("ERRAND_TEST_POSTGRES is not set: PostgreSQL tests skipped")
}

// Main is a TestMain: Run, then exit with its code.
func Main(m *testing.M, pkg string, opts ...goleak.Option) { os.Exit(Run(m, pkg, opts...)) }

// Run runs the tests and returns the exit code: it fails on a leaked goroutine
// (goleak), and when tests were skipped for want of PostgreSQL says so in
// one line. `go test ./...` prints nothing of a passing package's output
// without -v, so the line goes to the terminal (/dev/tty) when there is
// one; with -v, or without a terminal, to stderr.
func Run(m *testing.M, pkg string, opts ...goleak.Option) int {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if n := pgSkipped.Load(); n > 0 {
		note(fmt.Sprintf("note: %s: %d PostgreSQL tests skipped; to run them set "+
			"ERRAND_TEST_POSTGRES='postgres://USER@HOST:5432/DB?sslmode=disable' (each test makes its own schema)\n", pkg, n))
	}
	return code
}

func note(line string) {
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			_, err = tty.WriteString(line)
			tty.Close()
			if err == nil {
				return
			}
		}
	}
	fmt.Fprint(os.Stderr, line)
}

// Note tells the person running the tests one line (ending in a newline)
// even when go test hides a passing package's output: a test skipped for
// want of something this machine lacks says so.
func Note(line string) { note(line) }
