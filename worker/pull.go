package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// PullOptions configures Pull.
type PullOptions struct {
	// Slots is how many tasks run at once (default 8, at most 1,000).
	Slots int
	// LeaseSeconds is each lease's length (default 60, 1–86,400); a task
	// still running has it extended by as much every third of it (an
	// extend that fails is tried again at the next third).
	LeaseSeconds int
	// WaitSeconds is how long a lease waits for a task to come due
	// (0 for the default, 20; at most 30).
	WaitSeconds int
	// Logger receives the loop's warnings (default slog.Default()).
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait after a failed lease
	// (default 200 ms and 10 s), doubled with jitter.
	MinBackoff, MaxBackoff time.Duration
}

// ErrLeaseLost is the cause (context.Cause) of a Pull handler's context
// that ended because its task's lease was lost (it expired, or the task
// was purged or deleted): the task is tried again, and the handler's
// answer would not be taken.
var ErrLeaseLost = errors.New("worker: the task's lease was lost; the node tries the task again")

// Pull serves a pull queue: it leases the queue's tasks through c, up to
// o.Slots at once, runs h for each, extends a lease while its handler
// runs (with no limit: a handler that never returns holds its task), and
// answers as a connected worker's handler is answered: (result, nil)
// acks the task with result (in batch acks: the first at once, those made
// while a batch is on its way in the next); an error releases it as a
// failed attempt (retried with the queue's backoff); Defer(d) releases it
// unharmed, to come due after d; a panic fails it with the panic and its
// stack; a result that is not JSON, or over 64 KiB, fails it.
//
// The handler's Task has no DeadlineAt or Function (a pull task has no
// target); MaxAttempts is 0 (the lease does not say it). Its ctx carries
// the task's delivery token (the lease asks for it), so the tasks h adds
// with a client.Client get depth = this task's + 1 and source "lease", and
// a handler that adds to its own queue stops at errandapi.MaxDepth; the
// token holds as long as the lease does (Pull extends it), and a day past
// its first expiry in any case. Its ctx does not
// end with Pull's: when ctx ends Pull leases nothing more, lets the
// handlers running finish and answers them, then returns nil. It ends
// with the cause ErrLeaseLost when an extend finds the lease lost. A
// refusal that trying again cannot fix (a bad key, a missing grant, an
// instance or queue that does not exist, a push queue) ends Pull with that
// *errandapi.Error, once the running handlers have finished; other lease
// failures (the server unreachable, 5xx, 429) are retried with backoff.
// A task leased in the instant Pull's ctx ends, before its answer
// arrived, waits out its lease and counts it as a failed attempt.
func Pull(ctx context.Context, c *client.Client, instance, queue string, o PullOptions, h Handler) error {
	if err := o.defaults(); err != nil {
		return err
	}
	p := &puller{c: c, instance: instance, queue: queue, o: o, h: h, sem: make(chan struct{}, o.Slots),
		log: o.Logger.With("instance", instance, "queue", queue)}
	defer p.wg.Wait()
	wait := o.MinBackoff
	for {
		tasks, err := p.lease(ctx)
		// Tasks in hand are run even when ctx ended meanwhile: dropped,
		// each would wait out its lease and count it as a failed attempt.
		for _, lt := range tasks {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer func() { <-p.sem }()
				p.run(ctx, lt)
			}()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && permanent(err):
			return err
		case err != nil:
			p.log.Warn("lease failed; trying again", "err", err, "in", wait)
			if !pause(ctx, wait) {
				return nil
			}
			wait = min(2*wait, o.MaxBackoff)
			continue
		}
		wait = o.MinBackoff
	}
}

func (o *PullOptions) defaults() error {
	if o.LeaseSeconds == 0 {
		o.LeaseSeconds = 60
	}
	if o.WaitSeconds == 0 {
		o.WaitSeconds = 20
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{{"LeaseSeconds", o.LeaseSeconds, 1, 86_400}, {"WaitSeconds", o.WaitSeconds, 0, 30}} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("worker: %w", errandapi.NewError(errandapi.CodeInvalidArgument, fmt.Sprintf("%s %d: must be %d–%d", c.name, c.v, c.lo, c.hi)))
		}
	}
	return loopDefaults(&o.Slots, &o.Logger, &o.MinBackoff, &o.MaxBackoff)
}

// maxReleaseDelay is the longest delay of a release (delaySeconds).
const maxReleaseDelay = 86_400

// puller is one Pull loop.
type puller struct {
	c               *client.Client
	instance, queue string
	o               PullOptions
	h               Handler
	log             *slog.Logger
	sem             chan struct{} // a slot taken per task leased and not yet answered
	wg              sync.WaitGroup
	acks            acks
}

// lease waits for a free slot, takes every free one and leases as many
// tasks; the slots no task came for are given back.
func (p *puller) lease(ctx context.Context) ([]errandapi.LeasedTask, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	n := 1
	for n < p.o.Slots {
		select {
		case p.sem <- struct{}{}:
			n++
			continue
		default:
		}
		break
	}
	tasks, err := p.c.Lease(ctx, p.instance, p.queue, errandapi.LeaseRequest{Count: &n, LeaseSeconds: &p.o.LeaseSeconds, WaitSeconds: p.o.WaitSeconds,
		DeliveryTokens: true})
	for range n - len(tasks) {
		<-p.sem
	}
	return tasks, err
}

// run runs the handler for a leased task, extending its lease meanwhile,
// and answers it.
func (p *puller) run(ctx context.Context, lt errandapi.LeasedTask) {
	t := &Task{ID: lt.ID, Queue: lt.Queue, Attempt: lt.Attempts, RunAt: time.UnixMilli(lt.RunAt), CreatedAt: time.UnixMilli(lt.CreatedAt),
		Source: lt.Source, Depth: lt.Depth, Priority: lt.Priority, Payload: lt.Payload}
	t.setOptional(lt.Name, lt.DeadLetterOf, lt.Params)
	// The answers and extends outlive ctx: a stop lets the task finish.
	bg := context.WithoutCancel(ctx)
	// The task's delivery token: adds made with hctx are one deeper.
	hctx, lose := context.WithCancelCause(client.WithDelivery(bg, lt.DeliveryToken))
	defer lose(nil)
	done, extended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(extended)
		p.extend(bg, lt, done, lose)
	}()
	o := invoke(hctx, p.h, t, p.queue)
	close(done)
	<-extended
	if context.Cause(hctx) == ErrLeaseLost {
		return // tried again by the server; no answer would be taken
	}
	var err error
	switch {
	case o.deferBy != nil:
		// A release waits at most a day (a longer one would be refused,
		// and the task would wait out its lease as a failed attempt).
		delay := min(max(o.deferBy.Delay.Seconds(), 0.001), maxReleaseDelay)
		err = p.release(bg, lt, errandapi.ReleaseRequest{LeaseID: lt.LeaseID, DelaySeconds: delay})
	case o.failed != "":
		err = p.release(bg, lt, errandapi.ReleaseRequest{LeaseID: lt.LeaseID, Error: o.failed})
	default:
		err = p.ack(bg, lt, o.result)
	}
	if err != nil {
		p.log.Warn("answering a leased task failed; it is tried again when its lease ends", "task", lt.ID, "err", err)
	}
}

// release gives lt back as req says, in a call of its own.
func (p *puller) release(ctx context.Context, lt errandapi.LeasedTask, req errandapi.ReleaseRequest) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := p.c.Release(ctx, p.instance, lt.ID, req)
	return err
}

// extend renews lt's lease every half lease until done; a lease found
// lost ends the handler's context with ErrLeaseLost.
func (p *puller) extend(ctx context.Context, lt errandapi.LeasedTask, done <-chan struct{}, lose context.CancelCauseFunc) {
	every := time.Duration(p.o.LeaseSeconds) * time.Second / 3
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
		}
		ectx, cancel := context.WithTimeout(ctx, every)
		_, err := p.c.Extend(ectx, p.instance, lt.ID, errandapi.ExtendRequest{LeaseID: lt.LeaseID, LeaseSeconds: &p.o.LeaseSeconds})
		cancel()
		if errors.Is(err, client.ErrLeaseLost) || errors.Is(err, client.ErrNotFound) {
			lose(ErrLeaseLost)
			return
		}
		if err != nil {
			p.log.Warn("extending a lease failed; trying again", "task", lt.ID, "err", err)
		}
	}
}
