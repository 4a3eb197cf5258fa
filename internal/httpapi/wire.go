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

// toTarget is the domain's target in the contract's shape, as answers show
// it: header values masked (task.Target.Masked).
func toTarget(t *task.Target) *errandapi.Target {
	if t == nil {
		return nil
	}
	m := t.Masked()
	return &errandapi.Target{Webhook: m.Webhook, Function: m.Function, Channel: m.Channel, Headers: m.Headers}
}

// fromTarget is a request's target in the domain's shape.
func fromTarget(t *errandapi.Target) *task.Target {
	if t == nil {
		return nil
	}
	return &task.Target{Webhook: t.Webhook, Function: t.Function, Channel: t.Channel, Headers: t.Headers}
}

// toTaskJSON renders t; full adds payload, result and every attempt (the
// one in flight included).
func toTaskJSON(t *task.Task, full bool) *errandapi.Task {
	j := &errandapi.Task{
		ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), State: v1State(t),
		Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, RunAt: t.RunAt, CreatedAt: t.CreatedAt,
		DeadlineAt: msPtr(t.DeadlineAt), FinishedAt: msPtr(t.FinishedAt),
		Source: t.Source, Depth: t.Depth, Params: t.Params, DeadLetterOf: strPtr(t.DeadLetterOf),
		Target: toTarget(t.Target), DeadlineSeconds: intPtr(t.DeadlineSeconds), LastError: strPtr(t.LastError),
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

// toQueueJSON renders q with its counts (nil: none, as after a create or
// patch).
func toQueueJSON(q *task.Queue, counts map[task.State]int) *errandapi.Queue {
	j := &errandapi.Queue{
		Name: q.Name, Mode: errandapi.Mode(q.Mode), Target: toTarget(q.Target), MaxConcurrent: intPtr(q.MaxConcurrent),
		MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds,
		MaxDoublings: q.MaxDoublings, MaxAgeSeconds: msPtr(q.MaxAgeSeconds), DeadlineSeconds: q.DeadlineSeconds,
		DeadLetterQueue: strPtr(q.DeadLetterQueue), TargetControl: q.TargetControl, Paused: q.Paused, CreatedAt: q.CreatedAt,
	}
	if q.RatePerSecond > 0 {
		v := q.RatePerSecond
		j.RatePerSecond = &v
	}
	j.Capped = []errandapi.State{} // always a list, also without counts
	if counts != nil {
		j.Counts = map[errandapi.State]int{}
		for _, s := range task.States {
			name := errandapi.State(s.V1(q.Mode == task.ModePull))
			j.Counts[name] = counts[s]
			if counts[s] >= engine.CountLimit {
				j.Capped = append(j.Capped, name)
			}
		}
	}
	return j
}

// queuePatch is a queue create or PATCH body in the domain's shape. Fields
// absent stay as they are; null clears a nullable setting.
func queuePatch(b *errandapi.QueueRequest) *task.QueuePatch {
	p := &task.QueuePatch{
		RatePerSecond: b.RatePerSecond.Ptr(), MaxConcurrent: b.MaxConcurrent.Ptr(), MaxAttempts: b.MaxAttempts,
		MinBackoffSeconds: b.MinBackoffSeconds, MaxBackoffSeconds: b.MaxBackoffSeconds, MaxDoublings: b.MaxDoublings,
		MaxAgeSeconds: b.MaxAgeSeconds.Ptr(), DeadlineSeconds: b.DeadlineSeconds, DeadLetterQueue: b.DeadLetterQueue.Ptr(),
		TargetControl: b.TargetControl, Paused: b.Paused,
	}
	if b.Mode != nil {
		m := task.Mode(*b.Mode)
		p.Mode = &m
	}
	if b.Target.Set {
		t := fromTarget(&b.Target.Value)
		if b.Target.Null {
			t = nil
		}
		p.Target = &t
	}
	return p
}

// addInput is one task of an add in the domain's shape, from source.
func addInput(b *errandapi.NewTask, source string) task.AddInput {
	return task.AddInput{Name: b.Name, Payload: b.Payload, Params: b.Params, Target: fromTarget(b.Target),
		Delay: b.Delay, RunAt: b.RunAt, DeadlineSeconds: b.DeadlineSeconds, Source: source}
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

func toSettingsJSON(s task.Settings) errandapi.SettingsResponse {
	j := errandapi.Settings{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight}
	if s.RateLimit > 0 {
		v := s.RateLimit
		j.RateLimit = &v
	}
	return errandapi.SettingsResponse{Settings: j}
}

func toLeasedJSON(t *task.Task) errandapi.LeasedTask {
	p := t.Params
	if p == nil {
		p = json.RawMessage("null")
	}
	return errandapi.LeasedTask{ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), Payload: t.Payload, Params: p,
		Attempts: t.Attempt, LeaseID: t.LeaseID, LeaseExpiresAt: t.LeaseExpiresAt, RunAt: t.RunAt,
		CreatedAt: t.CreatedAt, Source: t.Source, Depth: t.Depth, DeadLetterOf: strPtr(t.DeadLetterOf)}
}
