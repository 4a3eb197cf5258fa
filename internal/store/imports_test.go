package store

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsPointInward keeps the seam at the bottom: package store and its
// backends (non-test files) import, of this module, only the domain
// (internal/task), the small leaf packages (internal/clock, internal/id,
// internal/jsonout) and the seam itself — never the engine, the HTTP layer,
// delivery, the embedded engine or a command, which all sit above it.
func TestImportsPointInward(t *testing.T) {
	const module = "github.com/errandhq/errand/"
	allowed := []string{"internal/task", "internal/clock", "internal/id", "internal/jsonout", "internal/store"}
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		for _, imp := range f.Imports {
			p, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
			if !ok {
				continue
			}
			if !inward(p, allowed) {
				t.Errorf("%s imports %s%s: the store seam may import only %v of this module", path, module, p, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Fatalf("read %d files: the walk did not find the store's sources", seen)
	}
}

// inward reports whether p is one of allowed or below one of them.
func inward(p string, allowed []string) bool {
	for _, a := range allowed {
		if p == a || strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}
