package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// realEngine runs an engine on the real clock for benchmarks.
func realEngine(b *testing.B, kind string) (*engine.Engine, context.Context) {
	ctx := context.Background()
	st := stores.Open(b, kind)
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	eng := engine.New(engine.Config{
		Store: st, Clock: clock.Real{}, Dev: true, URLRules: task.URLRules{AllowHTTP: true},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Deliverer: &deliver.Mux{Webhook: wh},
	})
	if err := eng.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		eng.Stop()
		wh.Close()
		_ = st.Close()
	})
	return eng, ctx
}

// BenchmarkPushBurst adds b.N tasks (in calls of 100) to a push queue whose
// target is a trivial loopback receiver, and measures until every task was
// delivered; a task delivered twice fails the benchmark.
func BenchmarkPushBurst(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) { benchPushBurst(b, kind) })
	}
}

func benchPushBurst(b *testing.B, kind string) {
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{})
	total := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		seen[body.Task.ID]++
		if len(seen) == total {
			close(done)
		}
		mu.Unlock()
	}))
	defer srv.Close()
	eng, ctx := realEngine(b, kind)
	tgt := &task.Target{Webhook: srv.URL}
	if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{Target: &tgt}); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.SettingsUpdate(ctx, "dev", "jobs", &task.SettingsPatch{MaxInFlight: ptr(200)}); err != nil {
		b.Fatal(err)
	}
	total = b.N
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		ins := make([]task.AddInput, min(100, b.N-i))
		if _, err := eng.TaskAdd(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, ins); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("delivered %d of %d", len(seen), total)
	}
	b.StopTimer()
	mu.Lock()
	for id, n := range seen {
		if n != 1 {
			b.Fatalf("task %s delivered %d times", id, n)
		}
	}
	mu.Unlock()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkPushIdleLatency adds one task at a time to an idle engine and
// measures add → the receiver's handler starting; it reports p50 and p99.
func BenchmarkPushIdleLatency(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) { benchPushIdleLatency(b, kind) })
	}
}

func benchPushIdleLatency(b *testing.B, kind string) {
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- time.Now()
	}))
	defer srv.Close()
	eng, ctx := realEngine(b, kind)
	tgt := &task.Target{Webhook: srv.URL}
	if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{Target: &tgt}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := eng.TaskAdd(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, []task.AddInput{{}}); err != nil {
			b.Fatal(err)
		}
		at := <-arrived
		lat = append(lat, at.Sub(start))
		time.Sleep(2 * time.Millisecond) // idle between tasks, as a lone producer would be
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
