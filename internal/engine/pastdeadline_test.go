package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// watchedLog is a log destination that tells each write.
type watchedLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *watchedLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.buf.Write(p)
}

// waitFor returns the log once it holds s.
func (w *watchedLog) waitFor(t *testing.T, s string) string {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		w.mu.Lock()
		text := w.buf.String()
		w.mu.Unlock()
		if strings.Contains(text, s) {
			return text
		}
		select {
		case <-w.wrote:
		case <-limit:
			t.Fatalf("the log never said %q:\n%s", s, text)
		}
	}
}

// TestPastDeadlineIsSeen: a push attempt whose target has not answered by
// its deadline is counted in errand_deliveries_past_deadline and logged
// once, with whose task it is, by the next heartbeat; the gauge falls back
// when the target answers.
func TestPastDeadlineIsSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	logs := &watchedLog{wrote: make(chan struct{}, 1)}
	fc := clock.NewFake(T0)
	target := newHoldingTarget(t)
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	t.Cleanup(wh.Close)
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, URLRules: task.URLRules{AllowHTTP: true},
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Deliverer: &deliver.Mux{Webhook: wh}})
	outcomes := engine.WatchOutcomes(eng)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "slow"}
	deadline := 5
	if _, err := eng.QueueCreate(ctx, ref, &task.QueuePatch{Target: targetPtr(target.URL), DeadlineSeconds: &deadline}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.TaskAdd(ctx, ref, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	release := target.next(t)
	gauge := func() string {
		rec := httptest.NewRecorder()
		eng.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "errand_deliveries_past_deadline "); ok {
				return v
			}
		}
		return "missing"
	}
	if g := gauge(); g != "0" {
		t.Fatalf("past deadline before it = %s", g)
	}
	// The heartbeat 10 s after the start finds the attempt 5 s late.
	if err := fc.WaitForSleeperAt(ctx, T0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	fc.Advance(10 * time.Second)
	text := logs.waitFor(t, "push attempts passed their deadline")
	for _, want := range []string{"org=dev", "instance=jobs", "queue=slow", "task=" + res[0].Task.ID, "attempts=1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the line lacks %s:\n%s", want, text)
		}
	}
	if g := gauge(); g != "1" {
		t.Fatalf("past deadline = %s, want 1", g)
	}
	seen := outcomes.Count()
	close(release)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := outcomes.After(wctx, seen); err != nil {
		t.Fatal("the late answer was not stored")
	}
	if g := gauge(); g != "0" {
		t.Fatalf("past deadline after the answer = %s, want 0", g)
	}
	if n := strings.Count(logs.waitFor(t, "deadline"), "push attempts passed their deadline"); n != 1 {
		t.Fatalf("the late attempt was logged %d times", n)
	}
}
