package httpapi

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoStore keeps the HTTP layer thin over the engine: its non-test files
// never import the store seam or a backend, so list filters, the health
// check and the rate-limit lookup all go through engine operations. (The
// tests may: they make API keys, whose grants are store.Grant.)
func TestNoStore(t *testing.T) {
	t.Parallel()
	const store = "github.com/errandhq/errand/internal/store"
	files, _ := filepath.Glob("*.go")
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range af.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == store || strings.HasPrefix(p, store+"/") {
				t.Errorf("%s imports %s: httpapi talks to the engine only", f, p)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no source files read")
	}
}
