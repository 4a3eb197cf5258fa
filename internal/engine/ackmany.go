package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// AckInput is one ack of a batch.
type AckInput struct {
	ID      string
	LeaseID string
	Result  json.RawMessage
}

// AckMany acknowledges several leased tasks of one queue in one group
// commit. Each ack stands alone: its error (LEASE_LOST, NOT_FOUND, …) is
// returned in its place and the others are stored. This is errand's batch
// form of ack, for workers that lease batches.
func (e *Engine) AckMany(ctx context.Context, ref QueueRef, acks []AckInput) ([]error, error) {
	if len(acks) == 0 || len(acks) > MaxLeaseCount {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "acks", "send 1–%d acks", MaxLeaseCount)
	}
	for i, a := range acks {
		if task.IsJSONNull(a.Result) {
			acks[i].Result = nil
		} else if err := task.ValidateJSONBytes(a.Result, "result"); err != nil {
			return nil, indexed(err, i, len(acks)+1)
		}
	}
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	tasks, at, err := e.ackTasks(ctx, q, acks)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(acks))
	var fps []*store.FinishParams
	var of []int                             // of[j] is the ack whose write fps[j] is
	first := make(map[string]int, len(acks)) // the first ack of each task
	dupOf := map[int]int{}                   // an ack repeated in this call: the one it repeats
	for i, a := range acks {
		t := tasks[a.ID]
		if f, ok := first[a.ID]; ok {
			// The same task twice: one write per task. The same ack again
			// is answered as the first; another lease as the first's
			// lease would be after it finished.
			if a.LeaseID == acks[f].LeaseID {
				dupOf[i] = f
			} else {
				errs[i] = task.Errorf(task.CodeLeaseLost, "the task is acknowledged twice in this call")
			}
			continue
		}
		fp, err := ackOne(t, a, q, at[a.ID])
		if err != nil {
			if t == nil || !t.AckedBy(a.LeaseID) { // else this ack, repeated: done
				// Refused, it is not the task's ack in this call: a later
				// one with the task's lease still lands.
				errs[i] = err
				continue
			}
			first[a.ID] = i
			continue
		}
		first[a.ID] = i
		fps = append(fps, fp)
		of = append(of, i)
	}
	if len(fps) == 0 {
		return sameAnswers(errs, dupOf), nil
	}
	var refused []int // acks the store refused, read again
	for j, err := range e.batcher.finishMany(ctx, fps) {
		i := of[j]
		errs[i] = err
		switch {
		case err == nil:
			countAttempt(e.metrics, task.AttemptSucceeded, true)
		case task.IsCode(err, task.CodeLeaseLost) && !errors.Is(err, task.ErrPurged):
			// From this node's copy: answered as a read would have; read
			// from the store: the same ack may have landed meanwhile.
			refused = append(refused, i)
		}
	}
	if len(refused) > 0 {
		e.refusedAcks(ctx, q, acks, refused, at, errs)
	}
	return sameAnswers(errs, dupOf), nil
}

// sameAnswers gives each ack repeated in a call the answer of the ack it
// repeats.
func sameAnswers(errs []error, dupOf map[int]int) []error {
	for i, f := range dupOf {
		errs[i] = errs[f]
	}
	return errs
}

// ackTasks finds the tasks of acks, each once: this node's copy from the
// lease when it has one that holds the ack's lease (leasedTasks), else
// read from the store in one read of them all. It returns the tasks by id
// (absent: no such task) and the time each was checked at, which is the
// time its write must find its lease live at.
func (e *Engine) ackTasks(ctx context.Context, q *task.Queue, acks []AckInput) (tasks map[string]*task.Task, at map[string]int64, err error) {
	tasks = make(map[string]*task.Task, len(acks))
	at = make(map[string]int64, len(acks))
	now := e.now()
	var misses []string
	for _, a := range acks {
		if _, dup := at[a.ID]; dup {
			continue
		}
		at[a.ID] = now
		if t := e.leased.take(q.InstanceID, a.ID); t != nil && ackable(t, a, q, now) == nil {
			tasks[a.ID] = t
			continue
		}
		misses = append(misses, a.ID)
	}
	if len(misses) == 0 {
		return tasks, at, nil
	}
	read, err := e.store.TaskGetMany(ctx, q.InstanceID, misses)
	if err != nil {
		return nil, nil, err
	}
	now = e.now()
	for _, id := range misses {
		tasks[id], at[id] = read[id], now
	}
	return tasks, at, nil
}

// refusedAcks answers the acks at refused, refused LEASE_LOST by the store,
// as a read now answers them (an ack written from this node's copy as the
// read would have; one whose own ack landed meanwhile, sent twice at once,
// as done): their tasks are read, and a task gone is NOT_FOUND, a lease not
// held is its LEASE_LOST; a lease that still holds in what was read lost a
// race, and LEASE_LOST stands. If the read fails, every LEASE_LOST stands:
// the call's other writes are stored, so it does not fail as a whole.
func (e *Engine) refusedAcks(ctx context.Context, q *task.Queue, acks []AckInput, refused []int, at map[string]int64, errs []error) {
	ids := make([]string, len(refused))
	for k, i := range refused {
		ids[k] = acks[i].ID
	}
	stored, err := e.store.TaskGetMany(ctx, q.InstanceID, ids)
	if err != nil {
		return
	}
	for _, i := range refused {
		a := acks[i]
		t := stored[a.ID]
		if t != nil && t.AckedBy(a.LeaseID) {
			errs[i] = nil // the same ack, sent twice at once: done
			continue
		}
		if err := ackable(t, a, q, at[a.ID]); err != nil {
			errs[i] = err
		}
	}
}

// ackOne checks one ack against its task (nil when the instance has no
// such task) and returns the fenced write that finishes it, which applies
// only while the lease is live at now.
//
// The ack of a task purged during the attempt is written too, under the
// purged lease: the store removes the task and answers task.ErrPurged.
func ackOne(t *task.Task, a AckInput, q *task.Queue, now int64) (*store.FinishParams, error) {
	if err := ackable(t, a, q, now); err != nil && !errors.Is(err, task.ErrPurged) {
		return nil, err
	}
	lease := t.LeaseID
	if _, err := t.Finish(q, now, task.Outcome{Status: task.AttemptSucceeded, Result: a.Result}); err != nil {
		return nil, err
	}
	return &store.FinishParams{Task: t, LeaseID: lease, LiveAt: now}, nil
}

// ackable checks one ack against its task (nil when the instance has no
// such task): a pull task of q under the ack's lease, live at now.
func ackable(t *task.Task, a AckInput, q *task.Queue, now int64) error {
	if t == nil {
		return task.Errorf(task.CodeNotFound, "task %s not found", task.Quote(a.ID))
	}
	if t.Queue != q.Name || !t.Pull {
		return task.Errorf(task.CodeLeaseLost, "the task is not leased from queue %q", q.Name)
	}
	return t.CheckLease(a.LeaseID, now)
}
