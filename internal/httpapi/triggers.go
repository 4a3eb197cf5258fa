package httpapi

import (
	"errors"
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// toTrigger is a rule in v1 JSON for the caller: a hook rule's path is
// shown to a caller with write on the instance only, since the path adds
// tasks, which read does not allow.
func toTrigger(tr *task.Trigger, c *call) *errandapi.Trigger {
	return engine.TriggerJSON(tr, c.instance, c.p.Allows(c.instance, auth.RoleWrite))
}

func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request, c *call) {
	list, err := s.eng.TriggerList(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.TriggerList{Triggers: make([]errandapi.Trigger, 0, len(list))}
	for _, tr := range list {
		out.Triggers = append(out.Triggers, *toTrigger(tr, c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.TriggerRequest
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, err := s.eng.TriggerCreate(r.Context(), c.p.Org, c.instance, engine.TriggerPatchOf(&body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, errandapi.TriggerResponse{Trigger: toTrigger(tr, c)})
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	tr, err := s.eng.TriggerGet(r.Context(), c.trigger(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.TriggerResponse{Trigger: toTrigger(tr, c)})
}

func (s *Server) patchTrigger(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.TriggerRequest
	if err := decodePatch(r, &body); err != nil {
		s.writeError(w, r, s.otherKindFirst(r, c, err))
		return
	}
	tr, err := s.eng.TriggerPatch(r.Context(), c.trigger(r), engine.TriggerPatchOf(&body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.TriggerResponse{Trigger: toTrigger(tr, c)})
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
