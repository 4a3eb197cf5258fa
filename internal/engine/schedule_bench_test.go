package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// scheduleRules is how many "@every 1s" rules BenchmarkSchedule1000 runs.
const scheduleRules = 1000

// BenchmarkSchedule1000 runs 1,000 schedule rules firing every second on
// one node's scheduler (real clock, real store) for b.N seconds' worth of
// ticks (run it with -benchtime=10x), after one warm-up round. It reports
// the process CPU (user + system) per fire — for SQLite that includes the
// store, in process; for PostgreSQL the server's CPU is not counted — and
// the lag from each tick's time to its task's add (createdAt), p50, p99
// and max. fires/s below 1,000 means the node does not keep up: the ticks
// it falls behind on are coalesced by catch-up (one task for the latest
// missed tick), not queued.
func BenchmarkSchedule1000(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) { benchSchedule(b, kind) })
	}
}

func benchSchedule(b *testing.B, kind string) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := stores.Open(b, kind)
	rc := clock.Real{}
	setup := engine.New(engine.Config{Store: st, Clock: rc, Logger: quiet, Dev: true})
	b.Cleanup(func() { setup.Stop(); _ = st.Close() })
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "ticks"}
	if _, err := setup.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		b.Fatal(err)
	}
	every := "@every 1s"
	for range scheduleRules {
		if _, err := setup.TriggerCreate(ctx, "dev", "jobs", &task.TriggerPatch{Queue: ptr("jobs/ticks"), Schedule: &task.SchedulePatch{Cron: &every}}); err != nil {
			b.Fatal(err)
		}
	}

	var (
		mu    sync.Mutex
		added int
		woke  = make(chan struct{}, 1)
	)
	s := engine.NewScheduler(engine.SchedulerDeps{TriggerDeps: engine.TriggerDeps{Store: st, Clock: rc, Logger: quiet,
		NewID: func() string { return id.New(rc.Now()) },
		OnPass: func(n int) {
			mu.Lock()
			added += n
			mu.Unlock()
			select {
			case woke <- struct{}{}:
			default:
			}
		}}})
	waitAdded := func(n int) {
		for {
			mu.Lock()
			done := added >= n
			mu.Unlock()
			if done {
				return
			}
			<-woke
		}
	}
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	waitAdded(scheduleRules) // warm-up: the first round (catch-up of setup time)
	mu.Lock()
	base := added
	mu.Unlock()
	start := time.Now()
	cpu0 := cpuTime()
	b.ResetTimer()
	waitAdded(base + b.N*scheduleRules)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	s.Stop()
	mu.Lock()
	fires := added - base
	mu.Unlock()

	var lags []time.Duration
	page := &engine.ListPage{}
	for first := true; first || page.Cursor != ""; first = false {
		var err error
		if page, err = setup.TaskList(ctx, ref, engine.ListFilter{Limit: 200, Cursor: page.Cursor}); err != nil {
			b.Fatal(err)
		}
		for _, tk := range page.Tasks {
			if tk.CreatedAt < start.UnixMilli() {
				continue
			}
			tick, err := time.Parse("20060102T150405.000Z", tk.Name[strings.LastIndexByte(tk.Name, '-')+1:])
			if err != nil {
				b.Fatalf("task name %q: %v", tk.Name, err)
			}
			lags = append(lags, time.Duration(tk.CreatedAt-tick.UnixMilli())*time.Millisecond)
		}
	}
	if len(lags) < b.N*scheduleRules {
		b.Fatalf("%d tasks added since the start, want at least %d", len(lags), b.N*scheduleRules)
	}
	slices.Sort(lags)
	pct := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))].Milliseconds()) }
	b.ReportMetric(float64(cpu.Microseconds())/float64(fires), "cpu-µs/fire")
	b.ReportMetric(pct(0.5), "lag-p50-ms")
	b.ReportMetric(pct(0.99), "lag-p99-ms")
	b.ReportMetric(pct(1), "lag-max-ms")
	b.ReportMetric(float64(fires)/b.Elapsed().Seconds(), "fires/s")
	b.Logf("%s: %d fires in %s, CPU %s", kind, fires, b.Elapsed().Round(time.Millisecond), cpu.Round(time.Millisecond))
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
