package worker

import (
	"testing"

	"github.com/errandhq/errand/internal/testkit"
)

// TestImportsNothingInternal keeps the worker SDK public: a program outside
// this module can import it, so its non-test files import nothing internal.
func TestImportsNothingInternal(t *testing.T) {
	testkit.CheckImports(t, func(file, p string, src []byte) string {
		if testkit.Internal(p) {
			return "the worker SDK imports nothing internal"
		}
		return ""
	})
}
