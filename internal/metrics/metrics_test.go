package metrics_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// scrape reads /metrics through the handler, as Prometheus would, and
// returns the errand_ samples by name with labels, and the whole text.
func scrape(t *testing.T, m *metrics.Metrics) (map[string]float64, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "errand_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, rec.Body.String()
}

// TestCountersFollowTheEngine: a real engine on SQLite adds, leases, acks,
// fails and delivers, and each move shows in the scraped text.
func TestCountersFollowTheEngine(t *testing.T) {
	t.Parallel()
	st := stores.Open(t, "sqlite")
	m := metrics.New()
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.UnixMilli(1_790_000_000_000)), Dev: true,
		URLRules: task.URLRules{AllowHTTP: true}, Metrics: m, Deliverer: &deliver.Mux{Webhook: wh},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	outcomes := engine.WatchOutcomes(eng)
	ctx := context.Background()
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	t.Cleanup(func() {
		eng.Stop()
		target.Close()
		wh.Close()
		_ = st.Close()
	})
	if eng.Metrics() != m {
		t.Fatal("the engine does not count on the metrics it was given")
	}
	const org, inst = "acme-secret-org", "jobs-secret-instance"
	if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: org, Instance: inst, Queue: "queue-secret-a"}, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.TaskAdd(ctx, engine.QueueRef{Org: org, Instance: inst, Queue: "queue-secret-a"}, make([]task.AddInput, 3)); err != nil {
		t.Fatal(err)
	}
	got, _ := scrape(t, m)
	if got["errand_tasks_added_total"] != 3 || got["errand_tasks_leased_total"] != 0 {
		t.Fatalf("after 3 adds: %v", got)
	}
	leased, err := eng.Lease(ctx, engine.QueueRef{Org: org, Instance: inst, Queue: "queue-secret-a"}, engine.LeaseParams{Count: 2, LeaseSeconds: 60})
	if err != nil || len(leased) != 2 {
		t.Fatalf("lease: %d %v", len(leased), err)
	}
	if _, err := eng.Ack(ctx, engine.TaskRef{Org: org, Instance: inst, ID: leased[0].ID}, engine.AckParams{LeaseID: leased[0].LeaseID}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Release(ctx, engine.TaskRef{Org: org, Instance: inst, ID: leased[1].ID}, engine.ReleaseParams{LeaseID: leased[1].LeaseID, Error: "worker gave up"}); err != nil {
		t.Fatal(err)
	}
	got, _ = scrape(t, m)
	for name, want := range map[string]float64{
		"errand_tasks_leased_total":                              2,
		`errand_attempts_total{kind="pull",outcome="succeeded"}`: 1,
		`errand_attempts_total{kind="pull",outcome="failed"}`:    1,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}

	// A push delivery is in flight while its target works, then counted
	// with its duration.
	if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: org, Instance: inst, Queue: "queue-secret-b"}, &task.QueuePatch{Target: ptr(&task.Target{Webhook: target.URL})}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.TaskAdd(ctx, engine.QueueRef{Org: org, Instance: inst, Queue: "queue-secret-b"}, []task.AddInput{{}}); err != nil {
		t.Fatal(err)
	}
	<-arrived
	if got, _ := scrape(t, m); got["errand_deliveries_in_flight"] != 1 {
		t.Fatalf("while the target works: %v", got)
	}
	seen := outcomes.Count()
	close(release)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := outcomes.After(wctx, seen); err != nil {
		t.Fatal("the delivery's outcome was not stored")
	}
	got, text := scrape(t, m)
	if got["errand_deliveries_in_flight"] != 0 || got[`errand_delivery_seconds_count{outcome="succeeded"}`] != 1 || got["errand_tasks_added_total"] != 4 {
		t.Fatalf("after the delivery: %v", got)
	}
	for _, secret := range []string{org, inst, "queue-secret-a", "queue-secret-b", target.URL} {
		if strings.Contains(text, secret) {
			t.Errorf("/metrics reveals %q", secret)
		}
	}
	if !strings.Contains(text, "\ngo_goroutines ") || !strings.Contains(text, "\nprocess_") {
		t.Error("/metrics lacks the Go runtime's or the process's metrics")
	}
}

func ptr[T any](v T) *T { return &v }
