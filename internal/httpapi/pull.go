package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

type contextT = context.Context

func (s *Server) lease(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		Count        *int `json:"count"`
		LeaseSeconds *int `json:"leaseSeconds"`
		WaitSeconds  int  `json:"waitSeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := engine.LeaseParams{Count: 1, LeaseSeconds: 60, WaitSeconds: body.WaitSeconds}
	if body.Count != nil {
		p.Count = *body.Count
	}
	if body.LeaseSeconds != nil {
		p.LeaseSeconds = *body.LeaseSeconds
	}
	ts, err := s.eng.Lease(r.Context(), c.p.Org, c.instance, r.PathValue("queue"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]leasedJSON, len(ts))
	for i, t := range ts {
		out[i] = toLeasedJSON(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": out})
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID string          `json:"leaseId"`
		Result  json.RawMessage `json:"result"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	t, err := s.eng.Ack(r.Context(), c.p.Org, c.instance, r.PathValue("id"), body.LeaseID, body.Result)
	s.answerTask(w, r, t, err)
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID      string `json:"leaseId"`
		LeaseSeconds *int   `json:"leaseSeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	if body.LeaseSeconds == nil {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseSeconds", "is required"))
		return
	}
	t, err := s.eng.Extend(r.Context(), c.p.Org, c.instance, r.PathValue("id"), body.LeaseID, *body.LeaseSeconds)
	s.answerTask(w, r, t, err)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID      string  `json:"leaseId"`
		Error        string  `json:"error"`
		DelaySeconds float64 `json:"delaySeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	t, err := s.eng.Release(r.Context(), c.p.Org, c.instance, r.PathValue("id"), body.LeaseID, body.Error, body.DelaySeconds)
	s.answerTask(w, r, t, err)
}
