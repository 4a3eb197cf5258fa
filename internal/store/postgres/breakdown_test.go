package postgres

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// The per-write breakdown on PostgreSQL (BENCHMARKS.md, "Where a task's
// PostgreSQL time goes"): the store's add, claim and finish of 500 tasks,
// through its own methods as the engine calls them, in a schema of their
// own with a backlog, once with every index of tasks and once with each
// index dropped. It reports PostgreSQL's CPU per task (the whole server's:
// its backends, the WAL writer and the checkpointer, read from /proc as the
// bench harness reads it) beside the wall time; what an index costs a
// transition is the difference between two variants. The store's vacuum
// runs, untimed, whenever its threshold is met, as the engine's vacuum
// service runs it.
//
//	go test -run '^$' -bench WriteBreakdown -benchtime 40x -count 3 ./internal/store/postgres/
//
// It needs a local server whose postmaster.pid it can read; elsewhere it
// reports wall time only.

// breakdownVariants are the index sets measured: "all" is the schema as
// migrated; each other drops the indexes it names. tasks_retry and
// tasks_name hold no entry of these tasks (no backoff, no name).
var breakdownVariants = []struct {
	name   string
	drop   []string
	create string
}{
	{"all", nil, ""},
	{"no-tasks_created", []string{"tasks_created"}, ""},
	{"no-tasks_running", []string{"tasks_running"}, ""},
	{"no-tasks_done", []string{"tasks_done"}, ""},
	{"key-and-due-only", []string{"tasks_created", "tasks_running", "tasks_done", "tasks_retry", "tasks_name"}, ""},
	// Before migration 0008: tasks_created held every row version.
	{"created-whole", []string{"tasks_created"}, "CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id)"},
}

var breakdownPayload = json.RawMessage(`{"to":"someone@example.com","template":"receipt","order":123456,"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)

const (
	// breakdownBatch is the tasks of one add, one claim and one finish:
	// the bench's pull workers lease 500.
	breakdownBatch = 500
	// breakdownBacklog is how many tasks wait in the queue throughout.
	breakdownBacklog = 20_000
)

func BenchmarkWriteBreakdown(b *testing.B) {
	for _, v := range breakdownVariants {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			s := OpenTest(b)
			defer s.Close()
			cpu := serverCPU(ctx, b, s)
			q := workQueue(b, s)
			next := 0
			add := func() { addNumbered(b, s, q, breakdownPayload, &next, breakdownBatch) }
			for range breakdownBacklog / breakdownBatch {
				add()
			}
			for _, idx := range v.drop {
				if _, err := s.pool.Exec(ctx, "DROP INDEX "+idx); err != nil {
					b.Fatal(err)
				}
			}
			if v.create != "" {
				if _, err := s.pool.Exec(ctx, v.create); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE tasks"); err != nil {
				b.Fatal(err)
			}

			st := newSteps(cpu, 3) // add, claim, finish
			timed, wall, pg := st.timed, st.wall, st.pg
			now, lease := int64(2_000), 0
			for b.Loop() {
				timed(0, add)
				var got []*task.Task
				timed(1, func() {
					var err error
					got, err = s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: now, Limit: breakdownBatch, LeaseMs: 60_000,
						NewLeaseID: func() string { lease++; return "lease-" + strconv.Itoa(lease) }})
					if err != nil || len(got) != breakdownBatch {
						b.Fatalf("claim: %d, %v", len(got), err)
					}
				})
				ps := make([]*store.FinishParams, len(got))
				for i, t := range got {
					fence := t.LeaseID
					if _, err := t.Finish(q, now+5, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
						b.Fatal(err)
					}
					ps[i] = &store.FinishParams{Task: t, LeaseID: fence}
				}
				timed(2, func() {
					errs, err := s.TaskFinish(ctx, ps)
					if err != nil {
						b.Fatal(err)
					}
					for _, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
				})
				now += 10
				b.StopTimer()
				if _, _, err := s.VacuumTasks(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*breakdownBatch) }
			for i, name := range []string{"add", "claim", "finish"} {
				b.ReportMetric(per(wall[i]), name+"-ns/task")
				if pg[i] > 0 {
					b.ReportMetric(per(pg[i]), name+"-pg-ns/task")
				}
			}
		})
	}
}

// steps adds up the wall time and the server's CPU time (read by cpu) of
// each step of a benchmark's iterations.
type steps struct {
	cpu      func() time.Duration
	wall, pg []time.Duration
}

// newSteps adds up n steps, reading the server's CPU time with cpu.
func newSteps(cpu func() time.Duration, n int) *steps {
	return &steps{cpu: cpu, wall: make([]time.Duration, n), pg: make([]time.Duration, n)}
}

// timed runs fn as step i.
func (s *steps) timed(i int, fn func()) {
	c0, w0 := s.cpu(), time.Now()
	fn()
	s.wall[i] += time.Since(w0)
	s.pg[i] += s.cpu() - c0
}

// serverCPU returns a reader of the CPU time the PostgreSQL server behind
// s has used: the postmaster's, its live children's and its reaped
// children's, from /proc. Where the server's files cannot be read (not
// local, not Linux, another user) the reader returns 0.
func serverCPU(ctx context.Context, tb testing.TB, s *Store) func() time.Duration {
	tb.Helper()
	var dir string
	if err := s.pool.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dir); err != nil {
		tb.Logf("server CPU not read: %v", err)
		return func() time.Duration { return 0 }
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		tb.Logf("server CPU not read: %v", err)
		return func() time.Duration { return 0 }
	}
	pm := strings.SplitN(string(b), "\n", 2)[0]
	// /proc/<pid>/stat after the command's closing parenthesis: field 14
	// (utime) is index 11, then stime, cutime, cstime.
	fields := func(pid string) []string {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return nil
		}
		s := string(b)
		return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	}
	ticks := func(f []string, at ...int) (n int64) {
		for _, i := range at {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			n += v
		}
		return n
	}
	const tick = 10 * time.Millisecond // USER_HZ on Linux
	return func() time.Duration {
		f := fields(pm)
		if f == nil {
			return 0
		}
		n := ticks(f, 11, 12, 13, 14)
		children, _ := os.ReadFile("/proc/" + pm + "/task/" + pm + "/children")
		for _, pid := range strings.Fields(string(children)) {
			if f := fields(pid); f != nil {
				n += ticks(f, 11, 12)
			}
		}
		return time.Duration(n) * tick
	}
}
