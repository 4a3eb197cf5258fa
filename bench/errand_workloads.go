package main

// errand_workloads.go holds the timed workloads of errandSystem that work
// a preloaded queue: insert, burndown (pull) and push.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// --- insert --------------------------------------------------------------------

func (e *errandSystem) Insert(ctx context.Context, n, batch int) (time.Duration, error) {
	if err := e.createQueue(ctx, "insert", "push", true); err != nil {
		return 0, err
	}
	mark := e.markCPU()
	start := time.Now()
	ids, err := e.addMany(ctx, "insert", n, batch, e.tun.InsertClients)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("  %s insert: %s", e.Name(), e.cpuNote(n, mark, d))
	return d, e.expectAll(ctx, "insert", "scheduled", ids)
}

// --- burndown (pull) -----------------------------------------------------------

// pullWorkers runs workers that lease and ack until stop says so. Each
// worker leases up to LeaseCount and acks them in one batch ack (BatchAck)
// or with AckConcurrency concurrent requests, then leases again. onTask is called when a task is leased,
// onAck after its ack answered. With several nodes (the nodes workload) the
// workers are spread over them round-robin: worker i talks to node i mod k.
func (e *errandSystem) pullWorkers(ctx context.Context, queue string, wait int, stop func() bool, onTask func(errandapi.LeasedTask), onAck func(errandapi.LeasedTask)) error {
	var wg sync.WaitGroup
	errs := make(chan error, e.tun.LeaseWorkers)
	conns := e.conns()
	for i := range e.tun.LeaseWorkers {
		c := conns[i%len(conns)]
		wg.Go(func() {
			sem := make(chan struct{}, e.tun.AckConcurrency)
			for !stop() && ctx.Err() == nil {
				ts, err := c.lease(ctx, queue, e.tun.LeaseCount, wait)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(ts) == 0 {
					if wait == 0 {
						time.Sleep(time.Millisecond)
					}
					continue
				}
				if e.tun.BatchAck > 0 {
					for _, t := range ts {
						onTask(t)
					}
					if err := c.ackBatch(ctx, queue, ts); err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					for _, t := range ts {
						onAck(t)
					}
					continue
				}
				var awg sync.WaitGroup
				var aerr atomic.Pointer[error]
				for _, t := range ts {
					onTask(t)
					sem <- struct{}{}
					awg.Go(func() {
						defer func() { <-sem }()
						if err := c.ack(ctx, t); err != nil {
							aerr.CompareAndSwap(nil, &err)
							return
						}
						onAck(t)
					})
				}
				awg.Wait()
				if p := aerr.Load(); p != nil {
					if ctx.Err() == nil {
						errs <- *p
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

func (e *errandSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "work", "pull", false); err != nil {
		return 0, err
	}
	ids, err := e.addMany(ctx, "work", n, 100, e.tun.InsertClients)
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	leases, acks := newIDCounter(n), newIDCounter(n)
	var leasedN, acked atomic.Int64
	mark := e.markCPU()
	start := time.Now()
	err = e.pullWorkers(ctx, "work", 0,
		func() bool { return leasedN.Load() >= int64(n) },
		func(t errandapi.LeasedTask) { leasedN.Add(1); leases.add(t.ID) },
		func(t errandapi.LeasedTask) { acked.Add(1); acks.add(t.ID) })
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("  %s burndown: %s", e.Name(), e.cpuNote(n, mark, d))
	if err := sameIDs("leased", leases.snapshot(), ids); err != nil {
		return 0, err
	}
	if err := sameIDs("acked", acks.snapshot(), ids); err != nil {
		return 0, err
	}
	if _, err := e.waitSettled(ctx, "work", 10*time.Millisecond, 30*time.Second); err != nil {
		return 0, err
	}
	return d, nil
}

// --- push ------------------------------------------------------------------------

// Push preloads n tasks into a paused push queue, unpauses it, and times
// until the receiver has seen every task and the store agrees.
func (e *errandSystem) Push(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "push", "push", true); err != nil {
		return 0, err
	}
	ids, err := e.addMany(ctx, "push", n, 100, e.tun.InsertClients)
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	mark := e.markCPU()
	start := time.Now()
	if _, err := e.api.UpdateQueue(ctx, errandInstance, "push", errandapi.QueueRequest{Paused: new(false)}); err != nil {
		return 0, err
	}
	done, err := e.delivered(ctx, "push", ids)
	if err != nil {
		return 0, err
	}
	logf("  %s push: %s; the receiver accepted %d connections", e.Name(), e.cpuNote(n, mark, done.Sub(start)), e.hook.conns.Load())
	return done.Sub(start), nil
}

// delivered waits until the receiver has had as many tasks as ids holds
// and queue has settled, checks that the receiver had exactly ids, and
// returns when the queue settled.
func (e *errandSystem) delivered(ctx context.Context, queue string, ids []string) (time.Time, error) {
	n := len(ids)
	if err := waitCount(ctx, &e.p.finished, int64(n), 15*time.Minute); err != nil {
		return time.Time{}, fmt.Errorf("%w (%d of %d delivered)", err, e.p.finished.Load(), n)
	}
	done, err := e.waitSettled(ctx, queue, time.Millisecond, time.Minute)
	if err != nil {
		return time.Time{}, err
	}
	return done, sameIDs("receiver", e.hook.ids(), ids)
}
