package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqSystem runs Asynq v0.26.0 in this process on the local Redis, in a
// database of its own that is flushed before and after every run.
type asynqSystem struct {
	o       Options
	clients int // concurrent enqueuers (insert, steady, preload)

	concurrency int
	tunedPoll   time.Duration // TaskCheckInterval for burndown, steady and idle-tuned
	redisOpt    asynq.RedisClientOpt
	flushClient *redis.Client
	future      int // tasks AddFuture scheduled in the future this run; Steady checks they stay
}

const asynqTask = "bench:noop"

func newAsynq(o Options) System {
	return &asynqSystem{
		o:           o,
		clients:     16,
		concurrency: 100,
		tunedPoll:   10 * time.Millisecond,
		redisOpt:    asynq.RedisClientOpt{Addr: o.RedisAddr, DB: o.RedisDB},
	}
}

func (s *asynqSystem) Name() string  { return "asynq" }
func (s *asynqSystem) Store() string { return "redis" }

func (s *asynqSystem) Settings(workload string, tuned bool) string {
	switch workload {
	case "insert":
		return fmt.Sprintf("Asynq v0.26.0 Enqueue, %d concurrent clients (no batch API: batch size does not apply); Redis db %d, persistence as the server runs it", s.clients, s.o.RedisDB)
	case "burndown":
		return fmt.Sprintf("preload %d concurrent clients; Concurrency %d, TaskCheckInterval %s; done = handler returned and queue has no pending/active task", s.clients, s.concurrency, s.tunedPoll)
	case "steady":
		return fmt.Sprintf("Concurrency %d, TaskCheckInterval %s; producers: %d clients × Enqueue; done = handler returned", s.concurrency, s.tunedPoll, s.clients)
	case "backlog":
		return fmt.Sprintf("preload %d concurrent clients × Enqueue with ProcessIn (Asynq's scheduled set); then steady: %s", s.clients, s.Settings("steady", tuned))
	case "idle":
		if tuned {
			return fmt.Sprintf("Concurrency %d, TaskCheckInterval %s", s.concurrency, s.tunedPoll)
		}
		return fmt.Sprintf("Concurrency %d, TaskCheckInterval 1s (default)", s.concurrency)
	}
	return ""
}

func (s *asynqSystem) flush(ctx context.Context) error {
	if s.flushClient == nil {
		// FLUSHDB of a million-task backlog takes longer than go-redis's
		// default read timeout (3 s).
		s.flushClient = redis.NewClient(&redis.Options{Addr: s.o.RedisAddr, DB: s.o.RedisDB, ReadTimeout: time.Minute})
	}
	return s.flushClient.FlushDB(ctx).Err()
}

func (s *asynqSystem) Setup(ctx context.Context) error {
	s.future = 0
	return s.flush(ctx)
}

func (s *asynqSystem) Teardown(ctx context.Context) error {
	err := s.flush(ctx)
	if s.flushClient != nil {
		s.flushClient.Close()
		s.flushClient = nil
	}
	return err
}

func payload(at int64) []byte {
	b, _ := json.Marshal(noopArgs{T: at})
	return b
}

// enqueue adds n tasks from s.clients concurrent clients. gate, if not nil,
// is asked before every add; opts are every add's options.
func (s *asynqSystem) enqueue(ctx context.Context, n int64, gate func() bool, added *atomic.Int64, opts ...asynq.Option) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, s.clients)
	for range s.clients {
		c := asynq.NewClient(s.redisOpt)
		wg.Go(func() {
			defer c.Close()
			for {
				if n > 0 && next.Add(1) > n {
					return
				}
				if gate != nil && !gate() {
					return
				}
				if added != nil {
					added.Add(1)
				}
				t := asynq.NewTask(asynqTask, payload(time.Now().UnixNano()))
				if _, err := c.EnqueueContext(ctx, t, opts...); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (s *asynqSystem) Insert(ctx context.Context, n, _ int) (time.Duration, error) {
	start := time.Now()
	if err := s.enqueue(ctx, int64(n), nil, nil); err != nil {
		return 0, err
	}
	d := time.Since(start)
	return d, s.expectPending(n)
}

// expectPending checks (untimed) that Redis holds n pending tasks.
func (s *asynqSystem) expectPending(n int) error {
	qi, err := s.queueInfo()
	if err != nil {
		return err
	}
	if qi.Pending != n {
		return fmt.Errorf("redis holds %d pending tasks, want %d", qi.Pending, n)
	}
	return nil
}

// expectScheduled checks (untimed) that Redis holds n scheduled tasks (added
// with ProcessIn, not yet due).
func (s *asynqSystem) expectScheduled(n int) error {
	qi, err := s.queueInfo()
	if err != nil {
		return err
	}
	if qi.Scheduled != n {
		return fmt.Errorf("redis holds %d scheduled tasks, want %d", qi.Scheduled, n)
	}
	return nil
}

func (s *asynqSystem) queueInfo() (*asynq.QueueInfo, error) {
	insp := asynq.NewInspector(s.redisOpt)
	defer insp.Close()
	return insp.GetQueueInfo("default")
}

// AddFuture enqueues n tasks with ProcessIn(futureDelay) into the default
// queue (the one Steady works) from s.clients concurrent clients, as the
// burn-down preload does, and checks that Redis holds them as scheduled.
func (s *asynqSystem) AddFuture(ctx context.Context, n int) error {
	if err := s.enqueue(ctx, int64(n), nil, nil, asynq.ProcessIn(futureDelay)); err != nil {
		return err
	}
	if err := s.expectScheduled(n); err != nil {
		return err
	}
	s.future = n
	return nil
}

func (s *asynqSystem) server(poll time.Duration) *asynq.Server {
	return asynq.NewServer(s.redisOpt, asynq.Config{
		Concurrency:       s.concurrency,
		Queues:            map[string]int{"default": 1},
		TaskCheckInterval: poll,
		LogLevel:          asynq.ErrorLevel,
	})
}

func handler(p *probe) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var a noopArgs
		if err := json.Unmarshal(t.Payload(), &a); err != nil {
			return err
		}
		p.onStart(a.T)
		p.onFinish()
		return nil
	})
}

func (s *asynqSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := s.enqueue(ctx, int64(n), nil, nil); err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	if err := s.expectPending(n); err != nil {
		return 0, err
	}
	p := newProbe()
	srv := s.server(s.tunedPoll)
	start := time.Now()
	if err := srv.Start(handler(p)); err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	if err := waitCount(ctx, &p.finished, int64(n), 15*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (%d of %d worked)", err, p.finished.Load(), n)
	}
	// The handler has returned for every task; wait until Asynq has also
	// recorded the last ones as done (removed them from the active list).
	insp := asynq.NewInspector(s.redisOpt)
	defer insp.Close()
	for {
		qi, err := insp.GetQueueInfo("default")
		if err != nil {
			return 0, err
		}
		if qi.Pending == 0 && qi.Active == 0 {
			break
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start), nil
}

func (s *asynqSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	p := newProbe()
	srv := s.server(s.tunedPoll)
	if err := srv.Start(handler(p)); err != nil {
		return SteadyResult{}, err
	}
	defer srv.Shutdown()

	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var added atomic.Int64
	errc := make(chan error, 1)
	go func() {
		// The window closes the gate; an add under way finishes.
		errc <- s.enqueue(ctx, 0, func() bool { return backlogGate(pctx, &added, p, int64(maxBacklog)) }, &added)
	}()
	<-pctx.Done()
	worked := p.finished.Load()
	elapsed := time.Since(start)
	if err := <-errc; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	// Untimed: the backlog's future tasks are all still scheduled; Steady's
	// own tasks never are, so the count is exact.
	if s.future > 0 {
		if err := s.expectScheduled(s.future); err != nil {
			return SteadyResult{}, fmt.Errorf("after the window: %w", err)
		}
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

type asynqIdle struct {
	srv    *asynq.Server
	c      *asynq.Client
	p      *probe
	period time.Duration
}

func (s *asynqSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	var poll time.Duration // 0 = Asynq's default, 1 s
	period := time.Second
	if tuned {
		poll, period = s.tunedPoll, s.tunedPoll
	}
	p := newProbe()
	srv := s.server(poll)
	if err := srv.Start(handler(p)); err != nil {
		return nil, err
	}
	return &asynqIdle{srv: srv, c: asynq.NewClient(s.redisOpt), p: p, period: period}, nil
}

func (a *asynqIdle) Once(ctx context.Context) (time.Duration, error) {
	a.p.drainIdle()
	if _, err := a.c.EnqueueContext(ctx, asynq.NewTask(asynqTask, payload(time.Now().UnixNano()))); err != nil {
		return 0, err
	}
	return a.p.waitIdle(ctx, 30*time.Second)
}

// Pacing: Asynq has no cooldown; when the queues are empty it sleeps
// TaskCheckInterval/2 + rand[0, TaskCheckInterval), on average the interval.
func (a *asynqIdle) Pacing() (time.Duration, time.Duration) { return 0, a.period }

func (a *asynqIdle) Close(ctx context.Context) error {
	a.c.Close()
	a.srv.Shutdown()
	return nil
}

var _ Backlogger = (*asynqSystem)(nil)
