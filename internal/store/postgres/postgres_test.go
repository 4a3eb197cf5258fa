package postgres_test

import (
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/storetest"
	"github.com/errandhq/errand/internal/testkit"
)

// TestMain fails the package's tests if any goroutine (of the pool, a
// proxy, a test) outlives them.
func TestMain(m *testing.M) { testkit.Main(m, "internal/store/postgres") }

// TestConformance runs the storage seam's conformance suite, each subtest
// on its own schema, in parallel.
func TestConformance(t *testing.T) {
	postgres.DatabaseURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return postgres.OpenTest(t) })
}
