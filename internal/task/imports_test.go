package task

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoIO keeps the domain pure: no file, network, database or process
// imports in non-test files.
func TestNoIO(t *testing.T) {
	forbidden := []string{"os", "net", "net/http", "database/sql", "io/ioutil", "os/exec", "syscall", "crypto/rand", "math/rand", "math/rand/v2", "log", "log/slog"}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			for _, bad := range forbidden {
				if p == bad {
					t.Errorf("%s imports %s: the domain package does no I/O", f, p)
				}
			}
		}
		if strings.Contains(string(src), "time.Now(") {
			t.Errorf("%s reads the clock: pass now in", f)
		}
	}
}
