package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// exportPartBytes is the size of one stored part of a bundle: a job's
// memory holds one part, whatever the bundle's size.
const exportPartBytes = 256 << 10

// runBackupExport streams the owner's configuration bundle into parts and
// answers where it is. A retried attempt writes its own parts and removes
// the ones of earlier attempts.
func (e *Engine) runBackupExport(ctx context.Context, j *opsRun) (any, error) {
	files, err := e.opsFiles(ctx, j.owner)
	if err != nil {
		return nil, err
	}
	for a := 1; a < j.t.Attempt; a++ {
		if err := e.dropParts(ctx, files, j.t.ID, a); err != nil {
			return nil, err
		}
	}
	pw := &partWriter{e: e, ctx: ctx, files: files, job: j.t.ID, attempt: j.t.Attempt, buf: make([]byte, 0, exportPartBytes)}
	sum, err := e.WriteBundle(ctx, j.owner, pw)
	if err == nil {
		err = pw.flush()
	}
	if err != nil {
		return nil, err
	}
	return &errandapi.ExportResult{Version: sum.Version, Instances: sum.Instances, Queues: sum.Queues, Triggers: sum.Triggers,
		Bytes: sum.Bytes, SHA256: sum.SHA256, Parts: pw.n, Attempt: j.t.Attempt, Bundle: "/api/tasks/" + j.t.ID + "/bundle"}, nil
}

// partID is the id (and name) of part n of a job's attempt.
func partID(job string, attempt, n int) string {
	return job + "." + strconv.Itoa(attempt) + "." + strconv.Itoa(n)
}

// partWriter stores what is written to it as parts of exportPartBytes.
type partWriter struct {
	e       *Engine
	ctx     context.Context
	files   *opsFiles
	job     string
	attempt int
	n       int
	buf     []byte
}

func (pw *partWriter) Write(p []byte) (int, error) {
	done := 0
	for len(p) > 0 {
		k := min(len(p), exportPartBytes-len(pw.buf))
		pw.buf = append(pw.buf, p[:k]...)
		p, done = p[k:], done+k
		if len(pw.buf) == exportPartBytes {
			if err := pw.flush(); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

// flush stores the buffered bytes as the next part: a finished task of the
// files queue whose payload is the bytes (base64 in a JSON string).
func (pw *partWriter) flush() error {
	if len(pw.buf) == 0 {
		return nil
	}
	payload, err := json.Marshal(pw.buf)
	if err != nil {
		return err
	}
	now := pw.e.now()
	pid := partID(pw.job, pw.attempt, pw.n)
	t := &task.Task{InstanceID: pw.files.inst.ID, ID: pid, Queue: task.OpsFilesQueue, Name: pid, State: task.Succeeded,
		Pull: true, Attempt: 1, MaxAttempts: 1, RunAt: now, CreatedAt: now, StartedAt: now, FinishedAt: now,
		Source: task.SourceAPI, Payload: payload}
	res, err := pw.e.store.TaskAdd(pw.ctx, []*task.Task{t})
	if err != nil {
		return err
	}
	if r := res[0]; r.Err != nil {
		return r.Err
	}
	pw.n++
	pw.buf = pw.buf[:0]
	return nil
}

// dropParts removes the parts an earlier attempt of a job left.
func (e *Engine) dropParts(ctx context.Context, files *opsFiles, job string, attempt int) error {
	for n := 0; ; n += 100 {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = partID(job, attempt, n+i)
		}
		k, err := e.store.TaskDelete(ctx, &store.TaskDeleteParams{InstanceID: files.inst.ID, IDs: ids, States: []task.State{task.Succeeded}})
		if err != nil || k < len(ids) {
			return err
		}
	}
}

// ReadBundle writes the bundle of org's SUCCEEDED backup.export job to w,
// part by part. A job of another kind or not yet done is INVALID_ARGUMENT;
// a missing or foreign id NOT_FOUND; parts removed by retention are
// NOT_FOUND.
func (e *Engine) ReadBundle(ctx context.Context, org, jobID string, w io.Writer) error {
	job, err := e.OpsGet(ctx, org, jobID)
	if err != nil {
		return err
	}
	if job.Kind != task.KindBackupExport {
		return task.Errorf(task.CodeInvalidArgument, "job %s is a %s job: only a backup.export job has a bundle", jobID, job.Kind)
	}
	if job.State != task.Succeeded {
		return task.Errorf(task.CodeInvalidArgument, "job %s is %s: its bundle is there once it has SUCCEEDED", jobID, job.State)
	}
	var res errandapi.ExportResult
	if err := json.Unmarshal(job.Result, &res); err != nil || res.Attempt == 0 {
		return task.Errorf(task.CodeNotFound, "job %s has no stored bundle", jobID)
	}
	files, err := e.opsFiles(ctx, org)
	if err != nil {
		return err
	}
	for n := range res.Parts {
		t, err := e.store.TaskGet(ctx, store.TaskRef{InstanceID: files.inst.ID, ID: partID(jobID, res.Attempt, n)})
		if err != nil {
			if task.IsCode(err, task.CodeNotFound) {
				return task.Errorf(task.CodeNotFound, "part %d of the bundle of job %s is gone", n, jobID)
			}
			return err
		}
		var b []byte
		if err := json.Unmarshal(t.Payload, &b); err != nil {
			return fmt.Errorf("part %d of the bundle of job %s: %w", n, jobID, err)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// opsFiles is an organization's files instance (OpsFilesInstance).
type opsFiles struct {
	inst *task.Instance
}

// opsFiles returns org's files instance and its queue, creating them on
// first use; finished tasks there are kept as long as jobs.
func (e *Engine) opsFiles(ctx context.Context, org string) (*opsFiles, error) {
	if v, ok := e.ops.files.Load(org); ok {
		return v.(*opsFiles), nil
	}
	inst, err := e.opsOwnInstance(ctx, org, task.OpsFilesInstance)
	if err != nil {
		return nil, err
	}
	if _, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: task.OpsFilesQueue}); task.IsCode(err, task.CodeNotFound) {
		q := task.NewQueue(inst.ID, task.OpsFilesQueue, task.ModePull)
		q.CreatedAt = e.now()
		if err := e.store.QueueCreate(ctx, q); err != nil && !task.IsCode(err, task.CodeQueueExists) {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	f := &opsFiles{inst: inst}
	e.ops.files.Store(org, f)
	return f, nil
}
