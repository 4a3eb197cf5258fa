package errandapi

import (
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/testkit"
)

// TestImports keeps the contract public and pure: nothing under internal/,
// no I/O, in non-test files.
func TestImports(t *testing.T) {
	testkit.CheckImports(t, func(file, p string, src []byte) string {
		switch {
		case testkit.Internal(p):
			return "the public contract imports nothing internal"
		case slices.Contains(testkit.IOImports, p):
			return "the contract does no I/O"
		}
		return ""
	})
}
