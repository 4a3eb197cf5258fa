package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// triggerPatch turns a rule request into the domain's patch.
func triggerPatch(b *errandapi.TriggerRequest) *task.TriggerPatch {
	p := &task.TriggerPatch{ID: b.ID, Queue: b.Queue, Enabled: b.Enabled}
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
		p.Hook = &task.HookPatch{Secret: b.Hook.Secret.Ptr(), Headers: b.Hook.Headers}
	}
	if b.Task != nil {
		p.Task = &task.TaskOnPatch{Queue: b.Task.Queue, On: b.Task.On}
	}
	return p
}

// toTrigger is a rule in v1 JSON; instance is its instance's name. A hook
// rule's path is shown to a caller with write on the instance only: the
// path adds tasks, which read does not allow.
func toTrigger(tr *task.Trigger, instance string, c *call) *errandapi.Trigger {
	out := &errandapi.Trigger{
		ID: tr.ID, Kind: errandapi.TriggerKind(tr.Kind), Queue: tr.Target(instance), Params: nullRaw(tr.Params),
		Payload: nullRaw(tr.Payload), Enabled: tr.Enabled, Fired: tr.Fired, ErrorCount: tr.ErrorCount,
		CreatedAt: tr.CreatedAt, UpdatedAt: tr.UpdatedAt, LastError: strPtr(tr.LastError),
	}
	if tr.LastError != "" {
		out.LastErrorAt = &tr.LastErrorAt
	}
	switch tr.Kind {
	case task.TriggerSchedule:
		out.Schedule = &errandapi.TriggerSchedule{Cron: tr.Cron, TimeZone: tr.TimeZone, LastTickAt: msPtr(tr.LastTickAt), NextTickAt: msPtr(tr.NextTickAt)}
	case task.TriggerHook:
		out.Hook = &errandapi.TriggerHook{HasSecret: tr.HookSecret != "", Headers: tr.HookHeaders}
		if c.p.Allows(instance, auth.RoleWrite) {
			out.Hook.Path = hookPrefix + instance + "/" + tr.HookToken
		}
		if out.Hook.Headers == nil {
			out.Hook.Headers = []string{}
		}
	case task.TriggerTask:
		out.Task = &errandapi.TriggerOnTask{Queue: instance + "/" + tr.OnQueue, On: tr.OnStates()}
	}
	return out
}

func nullRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request, c *call) {
	list, err := s.eng.TriggerList(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.TriggerList{Triggers: make([]errandapi.Trigger, 0, len(list))}
	for _, tr := range list {
		out.Triggers = append(out.Triggers, *toTrigger(tr, c.instance, c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.TriggerRequest
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, err := s.eng.TriggerCreate(r.Context(), c.p.Org, c.instance, triggerPatch(&body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, errandapi.TriggerResponse{Trigger: toTrigger(tr, c.instance, c)})
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	tr, err := s.eng.TriggerGet(r.Context(), c.trigger(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.TriggerResponse{Trigger: toTrigger(tr, c.instance, c)})
}

func (s *Server) patchTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.TriggerRequest
	if err := decodePatch(r, &body); err != nil {
		s.writeError(w, r, s.otherKindFirst(r, c, err))
		return
	}
	tr, err := s.eng.TriggerPatch(r.Context(), c.trigger(r), triggerPatch(&body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.TriggerResponse{Trigger: toTrigger(tr, c.instance, c)})
}

// otherKindFirst is the answer to a PATCH whose body was refused before
// the rule was read: when the field refused lies in another kind's block
// ({"task":{"on":null}} on a hook rule), the refusal is that the block has
// no place in this rule, as the domain answers a body that decodes; else
// err. Only a refused body pays for the rule's read.
func (s *Server) otherKindFirst(r *http.Request, c *call, err error) error {
	var te *task.Error
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	tr, gerr := s.eng.TriggerGet(r.Context(), c.trigger(r))
	if gerr != nil {
		return err
	}
	if kerr := tr.OtherKind(te.Field); kerr != nil {
		return kerr
	}
	return err
}

func (s *Server) deleteTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	if err := s.eng.TriggerDelete(r.Context(), c.trigger(r)); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.TriggerDeleteResponse{Deleted: true})
}

// trigger is the engine's ref of the rule the path names.
func (c *call) trigger(r *http.Request) engine.TriggerRef {
	return engine.TriggerRef{Org: c.p.Org, Instance: c.instance, ID: r.PathValue("id")}
}
