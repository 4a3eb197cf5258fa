package testkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPostgresNote runs a package's tests without ERRAND_TEST_POSTGRES
// and finds the one-line note saying how many PostgreSQL tests were
// skipped and how to run them (on stderr here: there is no terminal, and
// -v shows it).
func TestPostgresNote(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestConformance$", "../store/postgres")
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ERRAND_TEST_POSTGRES=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "note: internal/store/postgres: 1 PostgreSQL tests skipped; to run them set ERRAND_TEST_POSTGRES="
	if !strings.Contains(string(out), want) {
		t.Fatalf("no note in:\n%s", out)
	}
}

// TestPostgresNoteWithoutVerbose: run as a person runs it, `go test` on a
// terminal without -v (which prints nothing of a passing package's own
// output) still shows the note: it goes to the terminal itself. script(1)
// gives go test a terminal.
func TestPostgresNoteWithoutVerbose(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed: no terminal to give go test")
	}
	cmd := exec.Command("script", "-qefc", "go test -count=1 -run '^TestConformance$' ../store/postgres", "/dev/null")
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ERRAND_TEST_POSTGRES=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "note: internal/store/postgres: 1 PostgreSQL tests skipped; to run them set ERRAND_TEST_POSTGRES="
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "ok") {
		t.Fatalf("no note on the terminal in:\n%s", out)
	}
}
