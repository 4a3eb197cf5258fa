package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// opsHandler runs one attempt of a job of its kind. It reads the job's last
// checkpoint from j.checkpoint (nil on a first attempt), records progress
// with j.save, and returns the job's result.
type opsHandler func(ctx context.Context, j *opsRun) (any, error)

func newOpsState(e *Engine, cfg OpsConfig) *opsState {
	if cfg.RetentionDays <= 0 {
		cfg.RetentionDays = task.OpsRetentionDays
	}
	s := &opsState{cfg: cfg}
	handlers := map[string]opsHandler{
		task.KindDLQReplay:      e.runDLQReplay,
		task.KindDLQPurge:       e.runDLQPurge,
		task.KindBackupExport:   e.runBackupExport,
		task.KindInstanceBackup: e.runInstanceBackup,
	}
	for kind, h := range handlers {
		if err := s.fns.Handle(opsFunction(kind), e.opsAttempt(h)); err != nil {
			panic(err) // the names are constants
		}
	}
	return s
}

// router returns the deliverer of the dispatcher: attempts of operations
// tasks run in this process, every other attempt goes to next.
func (s *opsState) router(next deliver.Deliverer) deliver.Deliverer {
	return &opsRouter{fns: &s.fns, next: next}
}

type opsRouter struct {
	fns  *deliver.Functions
	next deliver.Deliverer
}

// Deliver implements deliver.Deliverer. Only a task of an operations queue
// (a queue name the v1 API refuses) reaches the ops functions, so a v1 task
// naming `ops/…` as its target never runs one.
func (r *opsRouter) Deliver(ctx context.Context, req *deliver.Request) deliver.Result {
	if task.IsOpsKind(req.Task.Queue) && strings.HasPrefix(req.Target.Function, "ops/") {
		return r.fns.Deliver(ctx, req)
	}
	if r.next == nil {
		return deliver.Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "no deliverer on this node"}}
	}
	return r.next.Deliver(ctx, req)
}

// opsRun is one attempt of a job as its handler sees it.
type opsRun struct {
	e     *Engine
	t     *task.Task // the claimed task: Finish stores what save left in Result
	owner string
	// checkpoint is the progress the last attempt saved (nil if none).
	checkpoint json.RawMessage
}

// save records progress in the job's row, fenced by the attempt's lease, and
// in the claimed task, so that the attempt's end keeps it too.
func (j *opsRun) save(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	lease := j.t.LeaseID
	if _, err := j.e.store.TaskUpdate(ctx, store.TaskRef{InstanceID: j.t.InstanceID, ID: j.t.ID}, func(t *task.Task) error {
		return t.Checkpoint(lease, j.e.now(), raw)
	}); err != nil {
		return err
	}
	j.t.Result = raw
	return nil
}

// opsAttempt adapts h to a function handler: it checks that the task is
// in an operations instance and finds its owner there.
func (e *Engine) opsAttempt(h opsHandler) deliver.FunctionHandler {
	return func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		inst, err := e.store.InstanceGetByID(ctx, t.InstanceID)
		if err != nil {
			return nil, err
		}
		if inst.Name != task.OpsInstance {
			return nil, fmt.Errorf("operations functions serve operations tasks only")
		}
		j := &opsRun{e: e, t: t, owner: inst.Org}
		if !task.IsJSONNull(t.Result) {
			j.checkpoint = t.Result
		}
		out, err := h(ctx, j)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		if len(raw) > task.MaxPayloadBytes {
			return nil, fmt.Errorf("result: is %d bytes; the cap is %d (64 KiB)", len(raw), task.MaxPayloadBytes)
		}
		return raw, nil
	}
}
