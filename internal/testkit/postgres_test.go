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
