package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/errandhq/errand/internal/task"
)

// triggerBody is a rule as a create or PATCH sends it.
type triggerBody struct {
	Queue    *string          `json:"queue"`
	Params   json.RawMessage  `json:"params"`
	Payload  json.RawMessage  `json:"payload"`
	Enabled  *bool            `json:"enabled"`
	Schedule *scheduleBody    `json:"schedule"`
	Hook     *hookBody        `json:"hook"`
	Task     *taskTriggerBody `json:"task"`
}

type scheduleBody struct {
	Cron     *string `json:"cron"`
	TimeZone *string `json:"timeZone"`
}

type hookBody struct {
	Secret  Nullable[string] `json:"secret"`
	Headers *[]string        `json:"headers"`
}

type taskTriggerBody struct {
	Queue *string   `json:"queue"`
	On    *[]string `json:"on"`
}

func (b *triggerBody) patch() *task.TriggerPatch {
	p := &task.TriggerPatch{Queue: b.Queue, Enabled: b.Enabled}
	if b.Params != nil {
		p.Params = &b.Params
	}
	if b.Payload != nil {
		p.Payload = &b.Payload
	}
	if b.Schedule != nil {
		p.Schedule = &task.SchedulePatch{Cron: b.Schedule.Cron, TimeZone: b.Schedule.TimeZone}
	}
	if b.Hook != nil {
		p.Hook = &task.HookPatch{Secret: ptrPtr(b.Hook.Secret), Headers: b.Hook.Headers}
	}
	if b.Task != nil {
		p.Task = &task.TaskOnPatch{Queue: b.Task.Queue, On: b.Task.On}
	}
	return p
}

// triggerJSON is a rule in v1 JSON. A hook's secret is never shown:
// hasSecret says whether it has one.
type triggerJSON struct {
	ID          string               `json:"id"`
	Kind        task.TriggerKind     `json:"kind"`
	Queue       string               `json:"queue"`
	Params      json.RawMessage      `json:"params"`
	Payload     json.RawMessage      `json:"payload"`
	Enabled     bool                 `json:"enabled"`
	Schedule    *scheduleJSON        `json:"schedule,omitempty"`
	Hook        *hookJSON            `json:"hook,omitempty"`
	Task        *taskTriggerJSONPart `json:"task,omitempty"`
	Fired       int64                `json:"fired"`
	ErrorCount  int64                `json:"errorCount"`
	LastError   *string              `json:"lastError"`
	LastErrorAt *int64               `json:"lastErrorAt"`
	CreatedAt   int64                `json:"createdAt"`
	UpdatedAt   int64                `json:"updatedAt"`
}

type scheduleJSON struct {
	Cron       string `json:"cron"`
	TimeZone   string `json:"timeZone"`
	LastTickAt *int64 `json:"lastTickAt"`
	NextTickAt *int64 `json:"nextTickAt"`
}

type hookJSON struct {
	Path      string   `json:"path"`
	HasSecret bool     `json:"hasSecret"`
	Headers   []string `json:"headers"`
}

type taskTriggerJSONPart struct {
	Queue string   `json:"queue"`
	On    []string `json:"on"`
}

func toTriggerJSON(tr *task.Trigger, instance string) *triggerJSON {
	out := &triggerJSON{
		ID: tr.ID, Kind: tr.Kind, Queue: tr.Target(instance), Params: nullRaw(tr.Params), Payload: nullRaw(tr.Payload),
		Enabled: tr.Enabled, Fired: tr.Fired, ErrorCount: tr.ErrorCount, CreatedAt: tr.CreatedAt, UpdatedAt: tr.UpdatedAt,
	}
	if tr.LastError != "" {
		out.LastError, out.LastErrorAt = &tr.LastError, &tr.LastErrorAt
	}
	switch tr.Kind {
	case task.TriggerSchedule:
		out.Schedule = &scheduleJSON{Cron: tr.Cron, TimeZone: tr.TimeZone, LastTickAt: nonZero(tr.LastTickAt), NextTickAt: nonZero(tr.NextTickAt)}
	case task.TriggerHook:
		out.Hook = &hookJSON{Path: "/v1/hooks/" + instance + "/" + tr.HookToken, HasSecret: tr.HookSecret != "", Headers: tr.HookHeaders}
		if out.Hook.Headers == nil {
			out.Hook.Headers = []string{}
		}
	case task.TriggerTask:
		out.Task = &taskTriggerJSONPart{Queue: instance + "/" + tr.OnQueue, On: []string{}}
		if tr.OnSucceeded {
			out.Task.On = append(out.Task.On, "succeeded")
		}
		if tr.OnFailed {
			out.Task.On = append(out.Task.On, "failed")
		}
	}
	return out
}

func nullRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func nonZero(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request, c *call) {
	list, err := s.eng.TriggerList(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]*triggerJSON, 0, len(list))
	for _, tr := range list {
		out = append(out, toTriggerJSON(tr, c.instance))
	}
	writeJSON(w, http.StatusOK, map[string]any{"triggers": out})
}

func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body triggerBody
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, err := s.eng.TriggerCreate(r.Context(), c.p.Org, c.instance, body.patch())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"trigger": toTriggerJSON(tr, c.instance)})
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	tr, err := s.eng.TriggerGet(r.Context(), c.p.Org, c.instance, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trigger": toTriggerJSON(tr, c.instance)})
}

func (s *Server) patchTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body triggerBody
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, err := s.eng.TriggerPatch(r.Context(), c.p.Org, c.instance, r.PathValue("id"), body.patch())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trigger": toTriggerJSON(tr, c.instance)})
}

func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	if err := s.eng.TriggerDelete(r.Context(), c.p.Org, c.instance, r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true})
}
