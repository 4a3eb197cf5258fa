package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// dlqChunk is how many dead letters a replay or purge handles between two
// checkpoints.
const dlqChunk = 200

// dlqCheckpoint is the progress of a dlq.replay or dlq.purge, saved in the
// job's row after every chunk: a resumed attempt starts after the last
// chunk saved, and an item handled after it is seen again but is no longer
// failed (or no longer there), so nothing is replayed twice.
type dlqCheckpoint struct {
	errandapi.DLQResult
	// Since is when the first attempt started: tasks that failed (or
	// dead-letter copies made) later are not part of the job, so a replayed
	// task that fails again is not replayed again.
	Since int64 `json:"since"`
	// Cursor is where the next page starts (queue and dead-letter modes).
	Cursor string `json:"cursor,omitempty"`
}

// dlqJob is one attempt of a dlq.replay or dlq.purge.
type dlqJob struct {
	*opsRun
	sel  errandapi.DLQSelector
	inst *task.Instance
	cp   dlqCheckpoint
}

// start decodes the job and its checkpoint, applies ownership (the
// instance is the owner's, found by name) and, on a first attempt, counts
// the items.
func (e *Engine) startDLQ(ctx context.Context, j *opsRun) (*dlqJob, error) {
	d := &dlqJob{opsRun: j}
	if err := decodePayload(j.t.Payload, &d.sel); err != nil {
		return nil, err
	}
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: j.owner, Name: d.sel.Instance})
	if err != nil {
		return nil, fmt.Errorf("instance %q: %w", d.sel.Instance, err)
	}
	d.inst = inst
	if j.checkpoint != nil {
		if err := json.Unmarshal(j.checkpoint, &d.cp); err == nil && d.cp.Since != 0 {
			return d, nil
		}
	}
	d.cp = dlqCheckpoint{Since: e.now()}
	switch {
	case len(d.sel.IDs) > 0:
		d.cp.Progress.Total = len(d.sel.IDs)
	default:
		name, st := d.sel.Queue, task.Failed
		if name == "" {
			name, st = d.sel.DeadLetterQueue, ""
		}
		counts, err := e.store.QueueCounts(ctx, store.QueueRef{InstanceID: inst.ID, Name: name}, 1<<30)
		if err != nil {
			return nil, fmt.Errorf("queue %q: %w", name, err)
		}
		for s, n := range counts {
			if st == "" || s == st {
				d.cp.Progress.Total += n
			}
		}
	}
	return d, d.save(ctx, d.cp)
}

// pages walks the selected queue's tasks from the checkpoint's cursor, a
// page at a time, calling fn with each page and saving the checkpoint
// after it.
func (d *dlqJob) pages(ctx context.Context, fn func([]*task.Task) error) error {
	p := store.ListParams{InstanceID: d.inst.ID, Queue: d.sel.Queue, State: task.Failed, Limit: dlqChunk, Cursor: d.cp.Cursor}
	if p.Queue == "" {
		p.Queue, p.State = d.sel.DeadLetterQueue, ""
	}
	for {
		page, err := d.e.store.TaskList(ctx, &p)
		if err != nil {
			return err
		}
		if err := fn(page.Tasks); err != nil {
			return err
		}
		d.cp.Progress.Done = min(d.cp.Progress.Done+len(page.Tasks), d.cp.Progress.Total)
		d.cp.Cursor = page.Cursor
		if err := d.save(ctx, d.cp); err != nil {
			return err
		}
		if page.Cursor == "" {
			return nil
		}
		p.Cursor = page.Cursor
	}
}

// byIDs walks the selected ids in chunks from the checkpoint on.
func (d *dlqJob) byIDs(ctx context.Context, fn func(ids []string) error) error {
	for start := d.cp.Progress.Done; start < len(d.sel.IDs); start += dlqChunk {
		end := min(start+dlqChunk, len(d.sel.IDs))
		if err := fn(d.sel.IDs[start:end]); err != nil {
			return err
		}
		d.cp.Progress.Done = end
		if err := d.save(ctx, d.cp); err != nil {
			return err
		}
	}
	return nil
}

// dlqAnswer is a DLQResult as a job stores it: with the count its kind
// names (replayed or purged) even when it is 0. Its own field hides the
// embedded one of the same name; the other kind's count is left out.
type dlqAnswer struct {
	errandapi.DLQResult
	Replayed *int `json:"replayed,omitempty"`
	Purged   *int `json:"purged,omitempty"`
}

// replayAnswer is r as a dlq.replay's result.
func replayAnswer(r errandapi.DLQResult) dlqAnswer {
	return dlqAnswer{DLQResult: r, Replayed: &r.Replayed}
}

// purgeAnswer is r as a dlq.purge's result.
func purgeAnswer(r errandapi.DLQResult) dlqAnswer { return dlqAnswer{DLQResult: r, Purged: &r.Purged} }

// result is the job's final result: the counts, without the cursor.
func (d *dlqJob) result() errandapi.DLQResult {
	r := d.cp.DLQResult
	r.Progress.Done = r.Progress.Total
	if len(d.sel.IDs) == 0 {
		// A task that left FAILED (or a copy that left its dead-letter
		// queue) before the walk reached it is not listed, so it was not
		// counted: it is skipped, so that the counts add up to what the job
		// selected when it started. That includes a chunk an earlier
		// attempt of this job replayed after its last checkpoint.
		if gone := r.Progress.Total - (r.Replayed + r.Purged + r.Skipped + r.Refused); gone > 0 {
			r.Skipped += gone
		}
		r.Progress.Total = r.Replayed + r.Purged + r.Skipped + r.Refused
		r.Progress.Done = r.Progress.Total
	}
	return r
}

// runDLQReplay re-attempts dead letters: each FAILED task selected goes
// back to PENDING in its own queue with a fresh budget (task.Retry), so it
// is delivered to its original target again.
func (e *Engine) runDLQReplay(ctx context.Context, j *opsRun) (any, error) {
	d, err := e.startDLQ(ctx, j)
	if err != nil {
		return nil, err
	}
	defer e.changed()
	// replay retries ids in one transaction and reports which were.
	replay := func(ids []string) ([]bool, error) {
		errs, err := e.store.TaskUpdateMany(ctx, &store.TaskUpdateManyParams{InstanceID: d.inst.ID, IDs: ids,
			Fn: func(t *task.Task) error { return t.Retry(e.now()) }})
		if err != nil {
			return nil, err
		}
		done := make([]bool, len(ids))
		for i, err := range errs {
			switch task.ErrorCode(err) {
			case "":
				d.cp.Replayed++
				done[i] = true
			case task.CodeNotRetryable:
				d.cp.Skipped++
			case task.CodeNotFound:
				d.cp.Refused++
			default:
				return nil, err
			}
		}
		e.changed()
		return done, nil
	}
	switch {
	case len(d.sel.IDs) > 0:
		err = d.byIDs(ctx, func(ids []string) error {
			_, err := replay(ids)
			return err
		})
	case d.sel.Queue != "":
		err = d.pages(ctx, func(ts []*task.Task) error {
			var ids []string
			for _, t := range ts {
				if t.FinishedAt <= d.cp.Since { // a later failure is not part of the job
					ids = append(ids, t.ID)
				}
			}
			_, err := replay(ids)
			return err
		})
	default:
		// A dead-letter queue's copies: the original (deadLetterOf) is
		// replayed and the copy, its job done, is removed unless a worker
		// holds it right now.
		err = d.pages(ctx, func(ts []*task.Task) error {
			var originals, copies []string
			for _, t := range ts {
				switch {
				case t.CreatedAt > d.cp.Since:
				case t.DeadLetterOf == "":
					d.cp.Skipped++
				default:
					originals = append(originals, t.DeadLetterOf)
					copies = append(copies, t.ID)
				}
			}
			replayed, err := replay(originals)
			if err != nil {
				return err
			}
			var done []string
			for i, ok := range replayed {
				if ok {
					done = append(done, copies[i])
				}
			}
			_, err = e.store.TaskDelete(ctx, &store.TaskDeleteParams{InstanceID: d.inst.ID, IDs: done, States: notRunning})
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	return replayAnswer(d.result()), nil
}

// notRunning is every state but RUNNING: a purge never removes a task a
// worker holds.
var notRunning = []task.State{task.Pending, task.RetryWait, task.Succeeded, task.Failed, task.Cancelled}

// runDLQPurge removes dead letters: the FAILED tasks selected (by id or of
// a queue), or the copies in a dead-letter queue (all but those a worker
// holds). Ownership is applied first: only the owner's instance is read.
func (e *Engine) runDLQPurge(ctx context.Context, j *opsRun) (any, error) {
	d, err := e.startDLQ(ctx, j)
	if err != nil {
		return nil, err
	}
	del := func(ids []string, states []task.State) error {
		n, err := e.store.TaskDelete(ctx, &store.TaskDeleteParams{InstanceID: d.inst.ID, IDs: ids, States: states})
		d.cp.Purged += n
		d.cp.Skipped += len(ids) - n // changed state meanwhile
		return err
	}
	switch {
	case len(d.sel.IDs) > 0:
		err = d.byIDs(ctx, func(ids []string) error {
			got, err := e.store.TaskGetMany(ctx, d.inst.ID, ids)
			if err != nil {
				return err
			}
			var failed []string
			for _, id := range ids {
				switch t := got[id]; {
				case t == nil:
					d.cp.Refused++
				case t.State != task.Failed:
					d.cp.Skipped++
				default:
					failed = append(failed, id)
				}
			}
			return del(failed, []task.State{task.Failed})
		})
	default:
		dlq := d.sel.Queue == ""
		err = d.pages(ctx, func(ts []*task.Task) error {
			var ids []string
			for _, t := range ts {
				switch {
				case dlq && t.CreatedAt > d.cp.Since, !dlq && t.FinishedAt > d.cp.Since:
				case t.State == task.Running:
					d.cp.Skipped++
				default:
					ids = append(ids, t.ID)
				}
			}
			if dlq {
				return del(ids, notRunning)
			}
			return del(ids, []task.State{task.Failed})
		})
	}
	if err != nil {
		return nil, err
	}
	e.changed()
	return purgeAnswer(d.result()), nil
}
