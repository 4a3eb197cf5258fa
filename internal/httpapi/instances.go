package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request, c *call) {
	insts, err := s.eng.InstanceList(r.Context(), c.p.Org)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.InstanceList{Instances: []errandapi.Instance{}}
	for _, in := range insts {
		if c.p.Allows(in.Name, auth.RoleRead) {
			out.Instances = append(out.Instances, toInstanceJSON(in))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createInstance(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.InstanceRequest
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := task.ValidateQueueName(body.Name, "name"); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !c.p.Allows(body.Name, auth.RoleFull) {
		s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "creating instance %q needs the full grant on it (full:%s or full:*)", body.Name, body.Name))
		return
	}
	inst, err := s.eng.InstanceCreate(r.Context(), c.p.Org, body.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, errandapi.InstanceResponse{Instance: toInstanceJSON(inst)})
}

func (s *Server) deleteInstance(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	if r.URL.Query().Get("confirm") != "true" {
		s.writeError(w, r, task.Errorf(task.CodeConfirmRequired, "deleting an instance removes every queue and task in it: add ?confirm=true"))
		return
	}
	if err := s.eng.InstanceDelete(r.Context(), c.p.Org, c.instance); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.limits.forget(c.p.Org, c.instance)
	writeJSON(w, http.StatusOK, errandapi.InstanceDeleteResponse{Pending: false})
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, c *call) {
	inst, err := s.eng.Instance(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, engine.SettingsJSON(inst.Settings))
}

func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.SettingsRequest
	if err := decodePatch(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	inst, err := s.eng.SettingsUpdate(r.Context(), c.p.Org, c.instance, &task.SettingsPatch{
		RetentionDays: body.RetentionDays, RateLimit: body.RateLimit.Ptr(), MaxInFlight: body.MaxInFlight,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.limits.set(c.p.Org, c.instance, inst.Settings.RateLimit, inst.ID, s.eng.Clock().Now())
	writeJSON(w, http.StatusOK, engine.SettingsJSON(inst.Settings))
}

func (s *Server) revealWebhookKey(w http.ResponseWriter, r *http.Request, c *call) {
	inst, err := s.eng.Instance(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSecret(w, http.StatusOK, errandapi.WebhookKeyResponse{WebhookKey: inst.WebhookKey})
}

func (s *Server) rotateWebhookKey(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	inst, err := s.eng.WebhookKeyRotate(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSecret(w, http.StatusOK, errandapi.WebhookKeyResponse{WebhookKey: inst.WebhookKey})
}

// writeSecret answers status with v, an answer that holds a secret (a
// webhook key, a subscribe token): no cache along the way, nor the
// browser's, may keep it.
func writeSecret(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, v)
}
