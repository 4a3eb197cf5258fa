package groupcommit

import (
	"testing"

	"github.com/errandhq/errand/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m, "internal/groupcommit") }
