package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// claimBatch is the most tasks one claim takes from a queue.
const claimBatch = 500

// Push attempts hold a short lease that their node renews while the target
// works: a node that dies stops renewing, and within pushLease the rescuer of
// any node retries its attempts. The deadline is separate (see deliver).
const (
	pushLease      = 30 * time.Second
	heartbeatEvery = 10 * time.Second
	// stopBackstop bounds a stop's wait for outcome writes that never
	// return (a store that stopped answering without failing).
	stopBackstop = 30 * time.Second
	// lateCap is how long a target that missed its deadline may still
	// answer; its slot stays taken meanwhile. Past it the request is cut.
	lateCap = 10 * time.Minute
)

// dispatcherDeps is what the dispatcher uses.
type dispatcherDeps struct {
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	node     string            // its lease ids begin with it (store.NodeLeaseID)
	targets  deliver.Deliverer // nil fails every attempt
	metrics  *metrics.Metrics
	usage    *Usage // counts each attempt by target kind
	wake     *waker // it waits on it, and rings it when a retry moves the next due time
	dev      bool   // log every attempt at Info
	writers  int    // outcome batches written at once
	backstop time.Duration
	// stored, if set, is told of each outcome batch written (the
	// chainer's wake, as the finish batcher tells it of pull outcomes).
	stored func(ps []*store.FinishParams)
	// stopGrace is how long a stop lets deliveries in flight end by
	// themselves (Config.StopGrace).
	stopGrace time.Duration
}

// drainReport is a stop's grace as it begins (tests only).
type drainReport struct {
	Began    bool
	InFlight int // attempts in flight
}

// Dispatcher delivers due tasks of push queues to their targets. It wakes
// on add, run, retry and queue changes, sleeps until the next runAt
// otherwise, claims due tasks in batches, round-robin over queues so a busy
// queue does not starve the others. Each queue's ratePerSecond and
// maxConcurrent and each instance's maxInFlight are kept by the store inside
// the claim, so they hold across every node sharing it.
type Dispatcher struct {
	runner
	dispatcherDeps

	mu       sync.Mutex
	inflight map[string]*attemptInFlight // attempts of this node, by task id
	freed    chan struct{}               // outcomes were stored: slots may be free
	turn     int                         // where the next pass starts
	wg       sync.WaitGroup

	results chan finished
	// stoppingAt is when the run began to stop (Unix ms, real time; 0
	// while running): outcomeDeadline shortens from then.
	stoppingAt atomic.Int64
	fails      failLog // serve: rate limit of failed attempts' info lines
	// writing counts the outcome batches being written; wrote is told
	// when one ends (see finisher).
	writing   atomic.Int32
	wrote     chan struct{}
	gathering sync.Mutex // held by the finisher gathering a batch

	// hints are queues this node just added a due task to (dueAdded):
	// the next pass claims from them first, before it reads which queues
	// have a task due, so that the claim (and the delivery) does not wait
	// for that read.
	hintMu sync.Mutex
	hints  map[qkey]bool

	// runCtx is the deliveries' context while the loop runs (nil before
	// and after): launches from outside the loop (addClaim) use it, under
	// mu. It outlives the loop's by the stop's grace (stopGrace).
	runCtx context.Context
	// dctx is runCtx for the loop's own launches (its goroutine only).
	dctx context.Context
	// held says the loop's last pass left a due task unclaimed (a cap, a
	// rate, no free worker slot): only then does a finish that freed room
	// (freed) wake the loop. The loop's goroutine only.
	held bool
	// slotMu is held by each claim of the pass, and by an add that claims
	// a function queue's tasks (addClaim): each reads the function slots
	// free and takes those it claims (slotView) while no other does, so no
	// slot is counted free by two claims.
	slotMu sync.Mutex
	// slotWaits counts the adds that came to take slotMu (tests only; nil
	// in production).
	slotWaits *progress[int]

	// Tests only (nil in production): the pass before each sleep.
	asleep *progress[sleepReport]
	// draining reports the attempts in flight when a stop begins its
	// grace (tests only).
	draining *progress[drainReport]
}

type qkey struct{ instance, queue string }

type finished struct {
	fp  *store.FinishParams
	q   *task.Queue
	dur time.Duration
}

func newDispatcher(d dispatcherDeps) *Dispatcher {
	return &Dispatcher{
		dispatcherDeps: d,
		inflight:       map[string]*attemptInFlight{},
		freed:          make(chan struct{}, 1),
		wrote:          make(chan struct{}, max(d.writers, 1)),
	}
}

// Start runs the dispatcher, its heartbeat and its outcome writers until
// Stop; Stop waits for the deliveries in flight to end and their outcomes
// to be stored. It returns once the loop takes deliveries, so that an add
// answered after Start may claim its own tasks (addClaim).
func (d *Dispatcher) Start(ctx context.Context) error {
	ready := make(chan struct{})
	if err := d.start(ctx, func(ctx context.Context) { d.run(ctx, ready) }); err != nil {
		return err
	}
	<-ready
	return nil
}

// run is the dispatcher's loop; it closes ready once it takes deliveries.
func (d *Dispatcher) run(ctx context.Context, ready chan<- struct{}) {
	d.results = make(chan finished, 1024)
	d.stoppingAt.Store(0)
	var fin sync.WaitGroup
	// The finishers' writes are never cut while the store answers, nor
	// for a stop alone; a store that stopped answering altogether (its
	// network dropping packets, where only TCP would end a write) is cut
	// stopBackstop after the deliveries ended, so that a stop ends.
	fctx, cut := context.WithCancel(context.Background())
	defer cut()
	for range max(d.writers, 1) {
		fin.Go(func() { d.finisher(fctx) })
	}
	// The deliveries (and the heartbeat that renews their leases) end
	// stopGrace after the loop's ctx, or when the last one does.
	dctx, endDeliveries := context.WithCancel(context.WithoutCancel(ctx))
	defer endDeliveries()
	hb := make(chan struct{})
	go func() { defer close(hb); d.heartbeat(dctx) }()
	d.mu.Lock()
	d.runCtx, d.dctx = dctx, dctx
	d.mu.Unlock()
	close(ready)
	defer func() {
		d.mu.Lock()
		d.runCtx = nil // no launch from outside the loop from now on
		n := len(d.inflight)
		d.mu.Unlock()
		drained := make(chan struct{})
		go func() { d.wg.Wait(); close(drained) }()
		if n > 0 && d.stopGrace > 0 {
			d.log.Info("stopping: letting the attempts in flight finish", "attempts", n, "grace", d.stopGrace.String())
		}
		d.draining.report(drainReport{Began: true, InFlight: n})
		grace := time.NewTimer(d.stopGrace) // real time: no test's fake clock may hold a stop
		select {
		case <-drained:
		case <-grace.C:
			// The rest are cut and given back; their outcome writes get
			// the stop's short patience from now on.
			d.stoppingAt.Store(clock.Real{}.Now().UnixMilli())
			endDeliveries()
			<-drained
		}
		grace.Stop()
		endDeliveries()
		if d.stoppingAt.Load() == 0 {
			d.stoppingAt.Store(clock.Real{}.Now().UnixMilli()) // the finishers' deadline shortens
		}
		close(d.results)
		written := make(chan struct{})
		go func() { fin.Wait(); close(written) }()
		backstop := time.NewTimer(stopBackstop) // real time: no test's fake clock may hold a stop
		select {
		case <-written:
		case <-backstop.C:
			cut()
			<-written
		}
		backstop.Stop()
		<-hb
	}()
	for {
		woken, seen := d.wake.wait()
		claimed, now, wakeAt, err := d.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.Warn("dispatch pass failed", "err", err)
			wakeAt = d.clock.Now().Add(time.Second)
		}
		if claimed > 0 {
			continue
		}
		d.asleep.report(sleepReport{Seen: seen, Now: now, WakeAt: wakeAt})
		freed := d.freed
		if !d.held {
			// Nothing due waits for room: a finish frees none that
			// matters, and a task that comes due wakes the loop itself.
			freed = nil
		}
		if !sleep(ctx, d.clock, wakeAt, woken, freed) {
			return
		}
	}
}

// dueAdded tells the dispatcher that tasks due now were just stored in
// queue (instanceID, name); the caller then wakes it. A hint is only a
// shortcut: a task another node took meanwhile makes the claim find
// nothing, and the pass then goes on as without it.
func (d *Dispatcher) dueAdded(instanceID, name string) {
	d.hintMu.Lock()
	if d.hints == nil {
		d.hints = map[qkey]bool{}
	}
	d.hints[qkey{instanceID, name}] = true
	d.hintMu.Unlock()
}

// takeHints returns the queues hinted since the last pass, and forgets them.
func (d *Dispatcher) takeHints() map[qkey]bool {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	h := d.hints
	d.hints = nil
	return h
}

// claimPass is what one pass shares between the queues it claims from.
type claimPass struct {
	now   time.Time
	byKey map[qkey]*task.Queue
	insts map[string]*task.Instance
}

// pass claims and starts what it can, and returns how many it started, the
// time it claimed at and, if none, when to look again. The time is absolute
// so that a sleep computed late (after the clock moved) still ends on time.
func (d *Dispatcher) pass(ctx context.Context) (int, time.Time, time.Time, error) {
	// now is read before the queues, so that a pass never claims at a time
	// later than the settings it read (a queue changed meanwhile wakes the
	// next pass, which sees the change).
	now := d.clock.Now()
	d.held = true // until the pass knows better (a failed pass: as before)
	queues, err := d.store.QueueListAll(ctx)
	if err != nil {
		return 0, now, time.Time{}, err
	}
	cp := &claimPass{now: now, byKey: make(map[qkey]*task.Queue, len(queues)), insts: map[string]*task.Instance{}}
	for _, q := range queues {
		cp.byKey[qkey{q.InstanceID, q.Name}] = q
	}
	// A task this node just added due: claim it at once, before reading
	// the due queues (a round trip the delivery need not wait for). The
	// pass then goes on to the other queues as usual: returning here would
	// let a queue that is added to all the time keep the others waiting.
	hinted := d.takeHints()
	started := 0
	for k := range hinted {
		q := cp.byKey[k]
		if q == nil || q.Mode != task.ModePush || q.Paused {
			continue
		}
		n, err := d.claimFrom(ctx, cp, q)
		started += n
		if err != nil {
			return started, now, time.Time{}, err
		}
	}
	// One read finds the queues with a task due, instead of one per queue:
	// only those are claimed from, each without a check of its own.
	dueRefs, err := d.store.TaskDueQueues(ctx, now.UnixMilli())
	if err != nil {
		return 0, now, time.Time{}, err
	}
	due := make(map[qkey]bool, len(dueRefs))
	for _, r := range dueRefs {
		due[qkey{r.InstanceID, r.Name}] = true
	}
	wait := d.backstop
	rateWait := time.Duration(0) // the shortest token interval of a rated queue
	// Start each pass at the next queue, so that under a shared cap
	// (maxInFlight) a busy queue does not starve the others.
	d.turn++
	for i := range queues {
		q := queues[(i+d.turn)%len(queues)]
		if q.Mode != task.ModePush || q.Paused {
			continue
		}
		if q.RatePerSecond > 0 {
			if iv := time.Duration(float64(time.Second) / q.RatePerSecond); rateWait == 0 || iv < rateWait {
				rateWait = iv
			}
		}
		k := qkey{q.InstanceID, q.Name}
		if !due[k] || hinted[k] { // a hinted queue was claimed from above (the next pass takes what it left)
			continue
		}
		n, err := d.claimFrom(ctx, cp, q)
		started += n
		if err != nil {
			return started, now, time.Time{}, err
		}
	}
	if started == 0 {
		// The earliest waiting task of any push queue. (TaskNextDue would
		// also read the earliest lease expiry, through every RUNNING row:
		// the rescuer's business, and up to maxInFlight rows read on each
		// pass a cap holds back.)
		runAt, err := d.store.TaskNextDueAfter(ctx, math.MinInt64)
		if err != nil {
			return 0, now, time.Time{}, err
		}
		d.held = runAt != 0 && runAt <= now.UnixMilli()
		switch until := time.Duration(runAt-now.UnixMilli()) * time.Millisecond; {
		case runAt == 0:
		case until > 0:
			wait = min(wait, until)
		case rateWait > 0:
			// Due but held back: by a rate (look again when a token is
			// earned) or by a cap (a finish signals freed).
			wait = min(wait, max(rateWait, time.Millisecond))
		}
		if runAt != 0 && runAt <= now.UnixMilli() {
			// Due but held back (a cap, a rate, a function no worker here
			// serves): still wake for the next task that comes due.
			if next, err := d.store.TaskNextDueAfter(ctx, now.UnixMilli()); err != nil {
				return 0, now, time.Time{}, err
			} else if next > 0 {
				wait = min(wait, time.Duration(next-now.UnixMilli())*time.Millisecond)
			}
		}
	}
	return started, now, now.Add(wait), nil
}

// claimFrom claims the due tasks of push queue q and starts them; it
// returns how many.
func (d *Dispatcher) claimFrom(ctx context.Context, cp *claimPass, q *task.Queue) (int, error) {
	inst, ok := cp.insts[q.InstanceID]
	if !ok {
		var err error
		inst, err = d.store.InstanceGetByID(ctx, q.InstanceID)
		if task.IsCode(err, task.CodeNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		cp.insts[q.InstanceID] = inst
	}
	// Function targets go where a worker has a slot: the slots free are
	// read, and those the claim took are taken, under slotMu.
	d.slotMu.Lock()
	slots := newSlotView(d.targets)
	ts, err := d.store.TaskClaim(ctx, d.claimParams(q, inst, cp.now, slots.free(q.InstanceID)))
	if err == nil {
		slots.took(q, ts)
	}
	d.slotMu.Unlock()
	if err != nil {
		return 0, err
	}
	d.launchAll(d.dctx, ts, q, inst, cp.byKey)
	return len(ts), nil
}

// claimParams is the claim of push queue q's due tasks at now, under its
// limits and the instance's, routing function tasks by functions
// (ClaimParams.Functions).
func (d *Dispatcher) claimParams(q *task.Queue, inst *task.Instance, now time.Time, functions map[string]int) *store.ClaimParams {
	p := &store.ClaimParams{
		Queue: q, Now: now.UnixMilli(), Limit: claimBatch,
		LeaseMs: pushLease.Milliseconds(), NewLeaseID: d.newLeaseID,
		MaxRunning: q.MaxConcurrent, InstanceMaxRunning: inst.Settings.MaxInFlight,
		Functions: functions, Due: true,
	}
	if q.RatePerSecond > 0 {
		p.Rate, p.Burst = q.RatePerSecond, max(1, int(math.Ceil(q.RatePerSecond/10)))
	}
	return p
}

// newLeaseID makes the lease id of a push attempt of this node: the node's
// id, so that the others find its attempts when it dies, and a random part.
func (d *Dispatcher) newLeaseID() string { return store.NodeLeaseID(d.node, id.Lease()) }

// release forgets a finished attempt of this node.
func (d *Dispatcher) release(taskID string, a *attemptInFlight) {
	d.mu.Lock()
	if d.inflight[taskID] == a { // not a later attempt of the task's
		delete(d.inflight, taskID)
	}
	d.mu.Unlock()
}

// answered marks a's target as having answered (or been cut): it is no
// longer late, though its entry stays, its lease renewed, until its
// outcome is handed to the finishers.
func (d *Dispatcher) answered(a *attemptInFlight) {
	d.mu.Lock()
	if a.late {
		d.metrics.PastDeadline.Dec()
	}
	a.late, a.answered = false, true
	d.mu.Unlock()
}

// attemptInFlight is one attempt of this node in flight: its lease, for
// the heartbeat, and its deadline, to say when its target is late.
type attemptInFlight struct {
	store.LeaseRef
	queue      string
	deadlineAt int64
	late       bool // counted in errand_deliveries_past_deadline
	answered   bool // the target answered: never late again
}

// launchAll delivers the tasks of one claim, each in its own goroutine.
func (d *Dispatcher) launchAll(ctx context.Context, ts []*task.Task, q *task.Queue, inst *task.Instance, queues map[qkey]*task.Queue) {
	if len(ts) == 0 {
		return
	}
	gs := deadlineGroups(ctx, ts, d.clock.Now())
	for i, t := range ts {
		d.launch(ctx, gs[i], t, q, inst, queues)
	}
}

// launch delivers one claimed task in its own goroutine, with the contexts
// of its deadline group g.
func (d *Dispatcher) launch(ctx context.Context, g *deadlineGroup, t *task.Task, q *task.Queue, inst *task.Instance, queues map[qkey]*task.Queue) {
	d.wg.Add(1)
	d.mu.Lock()
	a := &attemptInFlight{LeaseRef: store.LeaseRef{InstanceID: t.InstanceID, ID: t.ID, LeaseID: t.LeaseID},
		queue: t.Queue, deadlineAt: t.DeadlineAt}
	d.inflight[t.ID] = a
	d.mu.Unlock()
	d.metrics.InFlight.Inc()
	go func() {
		defer d.wg.Done()
		defer d.metrics.InFlight.Dec()
		defer d.release(t.ID, a)
		began := d.clock.Now()
		res := d.deliver(g, t, q, inst)
		g.done()
		d.answered(a)
		now := d.clock.Now()
		o := res.OutcomeFor(q.TargetControl)
		if ctx.Err() != nil && o.Status != task.AttemptSucceeded {
			// Shutting down mid-attempt: give the task back, uncounted.
			o = task.Outcome{Status: task.AttemptReleased, Error: "the node shut down during the attempt"}
		}
		lease := t.LeaseID
		failed, err := t.Finish(q, now.UnixMilli(), o)
		if err != nil {
			d.log.Error("finish", "task", t.ID, "err", err)
			return
		}
		fp := &store.FinishParams{Task: t, LeaseID: lease}
		if failed && q.DeadLetterQueue != "" {
			if dlq := queues[qkey{q.InstanceID, q.DeadLetterQueue}]; dlq != nil {
				fp.DeadLetter = deadLetter(d.log, t, dlq, now.UnixMilli(), d.clock)
			}
		}
		d.results <- finished{fp: fp, q: q, dur: now.Sub(began)}
	}()
}

// deliver resolves the target for this attempt (it is looked up again on
// every attempt) and calls it. Past the attempt's deadline the attempt counts
// as timed out, but the target is not cut off: its slot stays taken and the
// task is not tried again until it answers (or lateCap passes), and the late
// answer is recorded on the timed-out attempt.
func (d *Dispatcher) deliver(g *deadlineGroup, t *task.Task, q *task.Queue, inst *task.Instance) deliver.Result {
	target := t.Target
	if target == nil {
		target = q.Target
	}
	if target == nil {
		return deliver.Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "no target: the queue has none and the task names none"}}
	}
	if d.targets == nil {
		return deliver.Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "no deliverer on this node"}}
	}
	d.usage.countDelivery(t.InstanceID, target)
	now := d.clock.Now()
	// The target is called in this goroutine, and the deadline is read off
	// the clock when it answers: nothing happens at the deadline itself
	// (the slot stays taken, the request open), so nothing waits for it.
	// g.cut ends lateCap after the deadline; g.attempt, an in-process
	// handler's, at it.
	rctx := g.cut
	res := d.targets.Deliver(rctx, &deliver.Request{Task: t, Target: *target, Key: inst.WebhookKey, Now: now, AttemptCtx: g.attempt})
	if res.OnTime || d.clock.Now().UnixMilli() < t.DeadlineAt {
		return res
	}
	// The late answer, or the cut at lateCap.
	msg := fmt.Sprintf("deadline %ds exceeded; the target then answered: %s", t.EffectiveDeadline(q), deliver.LateAnswer(res))
	if rctx.Err() != nil && res.Outcome.HTTPStatus == 0 && res.Late == "" {
		msg = fmt.Sprintf("deadline %ds exceeded, and no answer came in the %d minutes after it: the request was cut", t.EffectiveDeadline(q), int(lateCap.Minutes()))
	}
	return deliver.Result{Outcome: task.Outcome{Status: task.AttemptTimedOut, HTTPStatus: res.Outcome.HTTPStatus, Error: msg}}
}

// heartbeat renews the leases of this node's attempts in flight.
func (d *Dispatcher) heartbeat(ctx context.Context) {
	for {
		if !sleep(ctx, d.clock, d.clock.Now().Add(heartbeatEvery), nil, nil) {
			return
		}
		now := d.clock.Now()
		d.mu.Lock()
		refs := make([]store.LeaseRef, 0, len(d.inflight))
		var late *attemptInFlight
		newlyLate := 0
		for _, a := range d.inflight {
			refs = append(refs, a.LeaseRef)
			if !a.late && !a.answered && a.deadlineAt <= now.UnixMilli() {
				a.late, late = true, a
				newlyLate++
			}
		}
		d.metrics.PastDeadline.Add(float64(newlyLate))
		d.mu.Unlock()
		if len(refs) == 0 {
			continue
		}
		until := now.Add(pushLease).UnixMilli()
		if _, err := d.store.TaskHeartbeat(ctx, refs, until); err != nil && ctx.Err() == nil {
			d.log.Warn("lease heartbeat failed", "n", len(refs), "err", err)
		}
		if late != nil {
			// The attempts have failed (timed_out) but their requests stay
			// open: until the target answers the tasks read running and
			// keep their slots. Said once an attempt, at most once a pass,
			// after the leases are renewed (its names are a read).
			d.log.Warn("push attempts passed their deadline with no answer: their requests stay open until the target answers, or 10 minutes pass",
				append(instanceAttrs(ctx, d.store, late.InstanceID), "queue", late.queue, "task", late.ID, "attempts", newlyLate)...)
		}
	}
}

// outcomeDeadline is when a push outcome first tried at start stops being
// tried while the store is unavailable: pushPatience later, as long as
// its lease may hold, and no later than callerPatience after the node
// began stopping, so that a stop during an outage ends in seconds.
func (d *Dispatcher) outcomeDeadline(start time.Time) time.Time {
	dl := start.Add(pushPatience)
	if ms := d.stoppingAt.Load(); ms != 0 {
		if stop := time.UnixMilli(ms).Add(callerPatience); stop.Before(dl) {
			dl = stop
		}
	}
	return dl
}

// finisher stores outcomes in batches: every result waiting is written in
// one transaction (group commit). Config.Writers finishers run at once, but
// one gathers at a time, and a batch that is not full waits while another
// is being written, taking the results that arrive meanwhile: a second
// transaction is written beside the first only when the first cannot keep
// up. Small batches written side by side cost the database more per
// outcome than one batch of them all (each statement's fixed cost, and
// their index entries contending for the same pages), and on a database
// with few cores they finish no sooner.
func (d *Dispatcher) finisher(ctx context.Context) {
	batch := make([]finished, 0, 2*claimBatch)
	for {
		// One finisher gathers at a time: the others, waiting their turn,
		// would split the results arriving into smaller batches.
		d.gathering.Lock()
		f, ok := <-d.results
		if ok {
			batch = d.gather(append(batch[:0], f))
			d.writing.Add(1) // before the next finisher gathers
		}
		d.gathering.Unlock()
		if !ok {
			return
		}
		ps := make([]*store.FinishParams, len(batch))
		for i, f := range batch {
			ps[i] = f.fp
		}
		// Real time, not d.clock: a busy store in a test on a fake clock
		// must not wait for the test to move it.
		errs, err := storeOutcomes(ctx, d.store, ps, d.log, clock.Real{}, d.outcomeDeadline)
		d.writing.Add(-1)
		select {
		case d.wrote <- struct{}{}: // a finisher holding a small batch may go
		default:
		}
		if err != nil {
			d.log.Error("storing outcomes failed; their leases will run out and be retried", "n", len(ps), "err", err)
			continue
		}
		again := false
		for i, f := range batch {
			d.logAttempt(f, errs[i])
			again = again || f.fp.Task.State == task.RetryWait || f.fp.DeadLetter != nil
		}
		if d.stored != nil {
			d.stored(ps) // after the counts: a test told of it sees them
		}
		if again {
			d.wake.wake() // the next due time moved
		}
		select {
		case d.freed <- struct{}{}: // RUNNING rows left: capped queues may claim
		default:
		}
	}
}

// gather adds to batch the results waiting, and, while another batch is
// being written and this one is not full, those that arrive until that
// write ends; it returns the batch to write.
func (d *Dispatcher) gather(batch []finished) []finished {
	for {
	drain:
		for len(batch) < cap(batch) {
			select {
			case f, ok := <-d.results:
				if !ok {
					return batch
				}
				batch = append(batch, f)
			default:
				break drain
			}
		}
		if len(batch) == cap(batch) || d.writing.Load() == 0 {
			return batch
		}
		select {
		case f, ok := <-d.results:
			if !ok {
				return batch
			}
			batch = append(batch, f)
		case <-d.wrote: // look again: the other write may have ended
		}
	}
}

func (d *Dispatcher) logAttempt(f finished, err error) {
	t := f.fp.Task
	a := t.Attempts[len(t.Attempts)-1]
	if err == nil {
		countFinish(d.metrics, t, a.Status)
		d.metrics.DeliverySeconds.WithLabelValues(a.Status).Observe(f.dur.Seconds())
	}
	if !d.dev && a.Status != task.AttemptFailed && a.Status != task.AttemptTimedOut &&
		!d.log.Enabled(context.Background(), slog.LevelDebug) {
		return // its line would be at debug, which is off: it is not built
	}
	attrs := []any{"queue", t.Queue, "task", t.ID, "attempt", a.Attempt, "outcome", a.Status, "ms", f.dur.Milliseconds()}
	if a.HTTPStatus != 0 {
		attrs = append(attrs, "http", a.HTTPStatus)
	}
	if a.Error != "" {
		attrs = append(attrs, "error", a.Error)
	}
	if err != nil {
		attrs = append(attrs, "stored", err.Error())
	}
	switch {
	case d.dev: // the emulator logs every attempt
		d.log.Info("attempt", attrs...)
	case a.Status == task.AttemptFailed || a.Status == task.AttemptTimedOut:
		// serve: failures at info, at most one line per queue a window
		if ok, skipped := d.fails.allow(qkey{t.InstanceID, t.Queue}, d.clock.Now().UnixMilli()); ok {
			if skipped > 0 {
				attrs = append(attrs, "notLogged", skipped)
			}
			// Whose queue: many organizations may have a jobs/hooks.
			attrs = append(instanceAttrs(context.Background(), d.store, t.InstanceID), attrs...)
			d.log.Info("attempt failed", attrs...)
			return
		}
		d.log.Debug("attempt failed", attrs...)
	default:
		d.log.Debug("attempt", attrs...)
	}
}
