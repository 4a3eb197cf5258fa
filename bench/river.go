package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", the one riversqlite is tested with
)

// noopArgs is the bench job: it carries its add time (unix nanos) and does
// nothing else.
type noopArgs struct {
	T int64 `json:"t"`
}

func (noopArgs) Kind() string { return "bench_noop" }

// riverTuning is one River client configuration.
type riverTuning struct {
	maxWorkers        int
	fetchCooldown     time.Duration // 0 = River's default (100 ms)
	fetchPollInterval time.Duration // 0 = River's default (1 s)
}

func (t riverTuning) String() string {
	d := func(v, def time.Duration) string {
		if v == 0 {
			return def.String() + " (default)"
		}
		return v.String()
	}
	return fmt.Sprintf("MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s",
		t.maxWorkers, d(t.fetchCooldown, river.FetchCooldownDefault), d(t.fetchPollInterval, river.FetchPollIntervalDefault))
}

// riverSystem runs River in this process over one driver. The store hooks
// make a fresh database per run.
type riverSystem[TTx any] struct {
	name, store string
	storeNote   string // how the store is opened, for the report

	open  func(ctx context.Context) (riverdriver.Driver[TTx], error) // fresh store, migrated
	close func(ctx context.Context) error

	driver riverdriver.Driver[TTx]
	future int // jobs AddFuture scheduled in the future this run; Steady checks they stay
	// dbName is the run's PostgreSQL database ("" for SQLite): its
	// server's CPU is reported beside River's (riverCPUNote).
	dbName func() string

	insertWorkers int         // concurrent InsertMany callers (insert, steady)
	throughput    riverTuning // burndown, steady
	idleDefault   riverTuning
	idleTuned     riverTuning
}

func (s *riverSystem[TTx]) Name() string  { return s.name }
func (s *riverSystem[TTx]) Store() string { return s.store }

func (s *riverSystem[TTx]) Settings(workload string, tuned bool) string {
	switch workload {
	case "insert":
		return fmt.Sprintf("River v0.51.2 InsertMany of %d, %d concurrent callers; %s", insertCallSize, s.insertWorkers, s.storeNote)
	case "burndown":
		return fmt.Sprintf("preload InsertManyFast ×5000; %s; done = completion event (persisted)", s.throughput)
	case "steady":
		return fmt.Sprintf("%s; producers: %d × InsertMany of %d; done = completion event", s.throughput, producers(s.insertWorkers), steadyCallSize)
	case "backlog":
		return fmt.Sprintf("preload InsertManyFast ×5000 from %d callers with ScheduledAt (state scheduled); then steady: %s", s.insertWorkers, s.Settings("steady", tuned))
	case "idle":
		if tuned {
			return s.idleTuned.String()
		}
		return s.idleDefault.String()
	}
	return ""
}

func (s *riverSystem[TTx]) Setup(ctx context.Context) error {
	d, err := s.open(ctx)
	if err != nil {
		return err
	}
	s.driver = d
	s.future = 0
	return nil
}

func (s *riverSystem[TTx]) Teardown(ctx context.Context) error {
	s.driver = nil
	return s.close(ctx)
}

func riverLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// client makes a River client; with a zero tuning it only inserts.
func (s *riverSystem[TTx]) client(p *probe, t riverTuning) (*river.Client[TTx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[noopArgs]) error {
		p.onStart(job.Args.T)
		p.onFinish()
		return nil
	}))
	cfg := &river.Config{
		Logger:            riverLogger(),
		Workers:           workers,
		FetchCooldown:     t.fetchCooldown,
		FetchPollInterval: t.fetchPollInterval,
	}
	if t.maxWorkers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: t.maxWorkers}}
	}
	return river.NewClient(s.driver, cfg)
}

func batchParams(n int, at int64) []river.InsertManyParams {
	ps := make([]river.InsertManyParams, n)
	for i := range ps {
		ps[i].Args = noopArgs{T: at}
	}
	return ps
}

func (s *riverSystem[TTx]) Insert(ctx context.Context, n, batch int) (time.Duration, error) {
	c, err := s.client(newProbe(), riverTuning{})
	if err != nil {
		return 0, err
	}
	var next atomic.Int64 // tasks claimed by callers
	var wg sync.WaitGroup
	errs := make(chan error, s.insertWorkers)
	start := time.Now()
	for range s.insertWorkers {
		wg.Go(func() {
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				k := min(int64(batch), int64(n)-from)
				if _, err := c.InsertMany(ctx, batchParams(int(k), time.Now().UnixNano())); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return d, s.expectAvailable(ctx, n)
}

// expectAvailable checks (untimed) that the store holds n available jobs.
func (s *riverSystem[TTx]) expectAvailable(ctx context.Context, n int) error {
	return s.expectState(ctx, rivertype.JobStateAvailable, n)
}

// preload inserts n jobs by the fastest path (COPY on PostgreSQL), untimed.
func (s *riverSystem[TTx]) preload(ctx context.Context, n int) error {
	c, err := s.client(newProbe(), riverTuning{})
	if err != nil {
		return err
	}
	const b = 5000
	for done := 0; done < n; done += b {
		if _, err := c.InsertManyFast(ctx, batchParams(min(b, n-done), time.Now().UnixNano())); err != nil {
			return err
		}
	}
	return s.expectAvailable(ctx, n)
}

// AddFuture inserts n jobs scheduled futureDelay from now into the default
// queue (the one Steady works) by the fastest path, InsertManyFast ×5000
// from insertWorkers concurrent callers, and checks that the store holds n
// scheduled jobs.
func (s *riverSystem[TTx]) AddFuture(ctx context.Context, n int) error {
	c, err := s.client(newProbe(), riverTuning{})
	if err != nil {
		return err
	}
	const b = 5000
	runAt := time.Now().Add(futureDelay)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, s.insertWorkers)
	for range s.insertWorkers {
		wg.Go(func() {
			for {
				from := next.Add(b) - b
				if from >= int64(n) {
					return
				}
				ps := batchParams(int(min(b, int64(n)-from)), time.Now().UnixNano())
				for i := range ps {
					ps[i].InsertOpts = &river.InsertOpts{ScheduledAt: runAt}
				}
				if _, err := c.InsertManyFast(ctx, ps); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := s.expectState(ctx, rivertype.JobStateScheduled, n); err != nil {
		return err
	}
	s.future = n
	return nil
}

// expectState checks (untimed) that the store holds n jobs in state.
func (s *riverSystem[TTx]) expectState(ctx context.Context, state rivertype.JobState, n int) error {
	got, err := s.driver.GetExecutor().JobCountByState(ctx, &riverdriver.JobCountByStateParams{State: state})
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("store holds %d %s jobs, want %d", got, state, n)
	}
	return nil
}

// completions counts completion events (River emits them once the
// completion is written to the store).
func completions[TTx any](c *river.Client[TTx], size int) (*atomic.Int64, *atomic.Int64, func()) {
	ch, cancel := c.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: size,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	var done, last atomic.Int64
	stop := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-stop:
				return
			case ev, ok := <-ch:
				if !ok {
					return
				}
				if ev.Kind != river.EventKindJobCompleted {
					fmt.Fprintf(os.Stderr, "river: unexpected event %s for job %d\n", ev.Kind, ev.Job.ID)
				}
				last.Store(time.Now().UnixNano())
				done.Add(1)
			}
		}
	}()
	return &done, &last, func() { close(stop); <-exited; cancel() }
}

func (s *riverSystem[TTx]) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := s.preload(ctx, n); err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	p := newProbe()
	c, err := s.client(p, s.throughput)
	if err != nil {
		return 0, err
	}
	done, last, unsubscribe := completions(c, 200_000)
	defer unsubscribe()
	mark := s.markCPU()
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		return 0, err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	if err := waitCount(ctx, done, int64(n), 15*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (%d of %d completed)", err, done.Load(), n)
	}
	d := time.Unix(0, last.Load()).Sub(start)
	logf("  %s burndown: %s", s.name, s.cpuNote(n, mark, time.Since(start)))
	return d, nil
}

// waitCount waits until c reaches n.
func waitCount(ctx context.Context, c *atomic.Int64, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for c.Load() < n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (s *riverSystem[TTx]) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	p := newProbe()
	c, err := s.client(p, s.throughput)
	if err != nil {
		return SteadyResult{}, err
	}
	done, _, unsubscribe := completions(c, 200_000)
	defer unsubscribe()
	if err := c.Start(ctx); err != nil {
		return SteadyResult{}, err
	}
	defer c.Stop(context.WithoutCancel(ctx))

	mark := s.markCPU()
	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var added atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, producers(s.insertWorkers))
	for range producers(s.insertWorkers) {
		wg.Go(func() {
			// The window closes the gate; a batch under way finishes.
			for backlogGate(pctx, &added, p, int64(maxBacklog)) {
				added.Add(int64(steadyCallSize))
				if _, err := c.InsertMany(ctx, batchParams(steadyCallSize, time.Now().UnixNano())); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	<-pctx.Done()
	worked := done.Load()
	elapsed := time.Since(start)
	logf("  %s steady window: %s", s.name, s.cpuNote(int(max(worked, 1)), mark, elapsed))
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	// Untimed: the backlog's future jobs (if any) are all still scheduled;
	// Steady's own jobs are never scheduled, so the count is exact.
	if err := s.expectState(ctx, rivertype.JobStateScheduled, s.future); err != nil {
		return SteadyResult{}, fmt.Errorf("after the window: %w", err)
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

// latencyCapacity bounds the latencies kept for a steady window.
func latencyCapacity(d time.Duration) int {
	return int(min(d.Seconds()*100_000, 6_000_000))
}

type riverIdle[TTx any] struct {
	c              *river.Client[TTx]
	p              *probe
	settle, period time.Duration
}

func (s *riverSystem[TTx]) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	t := s.idleDefault
	if tuned {
		t = s.idleTuned
	}
	p := newProbe()
	c, err := s.client(p, t)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	period := cmp.Or(t.fetchPollInterval, river.FetchPollIntervalDefault)
	// River sends at most one insert notification (PostgreSQL NOTIFY, or
	// the in-process wake-up on SQLite) per queue per FetchCooldown: a task
	// added sooner after the previous one waits for the next poll.
	settle := cmp.Or(t.fetchCooldown, river.FetchCooldownDefault)
	return &riverIdle[TTx]{c: c, p: p, settle: settle, period: period}, nil
}

func (r *riverIdle[TTx]) Once(ctx context.Context) (time.Duration, error) {
	r.p.drainIdle()
	if _, err := r.c.Insert(ctx, noopArgs{T: time.Now().UnixNano()}, nil); err != nil {
		return 0, err
	}
	return r.p.waitIdle(ctx, 30*time.Second)
}

func (r *riverIdle[TTx]) Pacing() (time.Duration, time.Duration) { return r.settle, r.period }
func (r *riverIdle[TTx]) Close(ctx context.Context) error {
	return r.c.Stop(ctx)
}

// --- River on PostgreSQL -------------------------------------------------------

func newRiverPG(o Options) System {
	s := &riverSystem[pgx.Tx]{
		name: "river-pg", store: "postgresql",
		storeNote:     "pgxpool defaults (max(4, cores) conns), fresh database per run, rivermigrate up",
		insertWorkers: 4,
		// The settings of `river bench` (cmd/river/riverbench), tuned by
		// River's authors for throughput.
		throughput:  riverTuning{maxWorkers: 2000, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
		idleDefault: riverTuning{maxWorkers: 100},
		idleTuned:   riverTuning{maxWorkers: 100, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
	}
	var (
		pool   *pgxpool.Pool
		dbName string
	)
	s.open = func(ctx context.Context) (riverdriver.Driver[pgx.Tx], error) {
		var dbURL string
		var err error
		if dbName, dbURL, err = freshDatabase(ctx, o.PGAdminURL, "bench_river"); err != nil {
			return nil, err
		}
		pool, err = pgxpool.New(ctx, dbURL)
		if err != nil {
			return nil, err
		}
		d := riverpgxv5.New(pool)
		if err := riverMigrate(ctx, d); err != nil {
			return nil, err
		}
		return d, nil
	}
	s.dbName = func() string { return dbName }
	s.close = func(ctx context.Context) error {
		if pool != nil {
			pool.Close()
			pool = nil
		}
		return pgAdmin(ctx, o.PGAdminURL, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
	}
	return s
}

// freshDatabase (re)creates the database prefix_<pid> beside the one of
// adminURL and returns its name and URL; the caller drops it (pgAdmin).
func freshDatabase(ctx context.Context, adminURL, prefix string) (name, dbURL string, err error) {
	name = fmt.Sprintf("%s_%d", prefix, os.Getpid())
	if err := pgAdmin(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)", "CREATE DATABASE "+name); err != nil {
		return "", "", err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", "", err
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

// pgAdmin runs statements on the admin database (CREATE/DROP DATABASE).
func pgAdmin(ctx context.Context, adminURL string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func riverMigrate[TTx any](ctx context.Context, d riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(d, &rivermigrate.Config{Logger: riverLogger()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// --- River on SQLite -----------------------------------------------------------

func newRiverSQLite(o Options) System {
	s := &riverSystem[*sql.Tx]{
		name: "river-sqlite", store: "sqlite",
		storeNote:     "modernc.org/sqlite, WAL, synchronous FULL (default), busy_timeout 10 s, one connection (as riversqlite documents), file in a temp dir",
		insertWorkers: 1, // one connection: more callers only queue on it
		throughput:    riverTuning{maxWorkers: 2000, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
		idleDefault:   riverTuning{maxWorkers: 100},
		idleTuned:     riverTuning{maxWorkers: 100, fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
	}
	var (
		db  *sql.DB
		dir string
	)
	s.open = func(ctx context.Context) (riverdriver.Driver[*sql.Tx], error) {
		var err error
		dir, err = os.MkdirTemp("", "bench-river-sqlite-")
		if err != nil {
			return nil, err
		}
		dsn := "file:" + filepath.Join(dir, "river.sqlite3") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
		db, err = sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		d := riversqlite.New(db)
		if err := riverMigrate(ctx, d); err != nil {
			return nil, err
		}
		return d, nil
	}
	s.close = func(ctx context.Context) error {
		var err error
		if db != nil {
			err = db.Close()
			db = nil
		}
		if dir != "" {
			err = errors.Join(err, os.RemoveAll(dir))
			dir = ""
		}
		return err
	}
	return s
}

var (
	_ Backlogger = (*riverSystem[pgx.Tx])(nil)
	_ Backlogger = (*riverSystem[*sql.Tx])(nil)
)
