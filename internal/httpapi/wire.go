package httpapi

import (
	"encoding/json"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// The v1 JSON shapes are errandapi's, shared with the client SDK so the two
// cannot drift; this file turns the domain's values into them and their
// requests into the domain's. Times are epoch milliseconds; absent values
// are null.

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func msPtr(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func intPtr(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func v1State(t *task.Task) errandapi.State { return errandapi.State(t.State.V1(t.Pull)) }

// toTaskJSON renders t; full adds payload, result and every attempt (the
// one in flight included).
func toTaskJSON(t *task.Task, full bool) *errandapi.Task {
	j := &errandapi.Task{
		ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), State: v1State(t),
		Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, RunAt: t.RunAt, CreatedAt: t.CreatedAt,
		DeadlineAt: msPtr(t.DeadlineAt), FinishedAt: msPtr(t.FinishedAt),
		Source: t.Source, Depth: t.Depth, Priority: t.Priority, Params: t.Params, DeadLetterOf: strPtr(t.DeadLetterOf),
		Target: engine.TargetJSON(t.Target), DeadlineSeconds: intPtr(t.DeadlineSeconds), LastError: strPtr(t.LastError),
	}
	if j.Params == nil {
		j.Params = json.RawMessage("null")
	}
	if t.State == task.Running && t.Pull {
		j.LeaseExpiresAt = msPtr(t.LeaseExpiresAt)
	}
	if !full {
		return j
	}
	j.Payload = t.Payload
	j.Result = t.Result
	if j.Result == nil {
		j.Result = json.RawMessage("null")
	}
	j.Attempts = make([]errandapi.Attempt, 0, len(t.Attempts)+1)
	for _, a := range t.Attempts {
		j.Attempts = append(j.Attempts, errandapi.Attempt{Attempt: a.Attempt, Status: a.Status, StartedAt: a.StartedAt,
			EndedAt: msPtr(a.EndedAt), HTTPStatus: intPtr(a.HTTPStatus), Error: strPtr(a.Error)})
	}
	if t.State == task.Running {
		j.Attempts = append(j.Attempts, errandapi.Attempt{Attempt: t.Attempt, Status: task.AttemptRunning, StartedAt: t.StartedAt})
	}
	return j
}

// taskAnswer is the answer naming one task in full.
func taskAnswer(t *task.Task) errandapi.TaskResponse {
	return errandapi.TaskResponse{Task: toTaskJSON(t, true)}
}

// addInput is one task of an add in the domain's shape, from source.
func addInput(b *errandapi.NewTask, source string) task.AddInput {
	return task.AddInput{Name: b.Name, Payload: b.Payload, Params: b.Params, Target: engine.TargetOf(b.Target),
		Delay: b.Delay, RunAt: b.RunAt, DeadlineSeconds: b.DeadlineSeconds, Priority: b.Priority, Source: source}
}

// addAnswer renders the results of an add; added counts the tasks added
// and first is the first refusal.
func addAnswer(ins []task.AddInput, res []engine.AddResult) (out errandapi.AddResponse, added int) {
	out.Tasks = make([]errandapi.AddResult, len(res))
	for i, x := range res {
		if x.Err != nil {
			out.Tasks[i] = errandapi.AddResult{OK: false, Code: x.Err.Code, ID: x.Err.ID, Name: strPtr(ins[i].Name), Message: x.Err.Message}
			if out.Error == nil {
				out.Error = &errandapi.ErrorDetail{Code: x.Err.Code, Message: x.Err.Message}
			}
			continue
		}
		added++
		out.Tasks[i] = errandapi.AddResult{OK: true, ID: x.Task.ID, Name: strPtr(x.Task.Name), State: v1State(x.Task), RunAt: x.Task.RunAt}
	}
	if added > 0 {
		out.Error = nil
	}
	return out, added
}

func toInstanceJSON(in *task.Instance) errandapi.Instance {
	return errandapi.Instance{Name: in.Name, CreatedAt: in.CreatedAt}
}

func toLeasedJSON(t *task.Task) errandapi.LeasedTask {
	p := t.Params
	if p == nil {
		p = json.RawMessage("null")
	}
	return errandapi.LeasedTask{ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), Payload: t.Payload, Params: p,
		Attempts: t.Attempt, LeaseID: t.LeaseID, LeaseExpiresAt: t.LeaseExpiresAt, RunAt: t.RunAt,
		CreatedAt: t.CreatedAt, Source: t.Source, Depth: t.Depth, Priority: t.Priority, DeadLetterOf: strPtr(t.DeadLetterOf)}
}
