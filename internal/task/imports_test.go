package task

import (
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/testkit"
)

// TestNoIO keeps the domain pure: no file, network, database or process
// imports in non-test files.
func TestNoIO(t *testing.T) {
	forbidden := append([]string{"crypto/rand", "math/rand", "math/rand/v2"}, testkit.IOImports...)
	testkit.CheckImports(t, func(file, p string, src []byte) string {
		switch {
		case p == "" && strings.Contains(string(src), "time.Now("):
			return "reads the clock: pass now in"
		case p != "" && slices.Contains(forbidden, p):
			return "the domain package does no I/O"
		}
		return ""
	})
}
