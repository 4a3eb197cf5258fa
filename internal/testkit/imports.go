package testkit

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// IOImports are the standard packages that do file, network, database or
// process I/O, or logging: a pure package imports none of them.
var IOImports = []string{"os", "net", "net/http", "database/sql", "io/ioutil", "os/exec", "syscall", "log", "log/slog"}

// CheckImports parses every non-test Go file of the test's package (the
// current directory) and reports each import that rule refuses: rule
// answers why, or "" to allow it. It also hands rule each file's source,
// with import "" once per file, for checks beyond imports.
func CheckImports(t *testing.T, rule func(file, importPath string, src []byte) string) {
	t.Helper()
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
		if why := rule(f, "", src); why != "" {
			t.Errorf("%s: %s", f, why)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if why := rule(f, p, src); why != "" {
				t.Errorf("%s imports %s: %s", f, p, why)
			}
		}
	}
}

// Internal reports whether an import path is under an internal/ folder.
func Internal(importPath string) bool {
	return strings.Contains(importPath, "/internal/") || strings.HasPrefix(importPath, "internal/")
}
