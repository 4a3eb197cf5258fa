package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestChartRefusal: when the chart's read is refused (here RATE_LIMITED:
// the instance allows two calls a second, and the node's clock stands
// still), the chart's card shows the refusal with its code; the page is
// still shown.
func TestChartRefusal(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	if _, err := e.api.UpdateSettings(context.Background(), "jobs", errandapi.SettingsRequest{RateLimit: errandapi.Value(2.0)}); err != nil {
		t.Fatal(err)
	}
	// The page reads the queue and its tasks (the two calls), then the
	// chart's activity.
	u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `id="chart-refusal"`, "RATE_LIMITED", "rateLimit").lacks(t, `<svg class="chart"`)
}
